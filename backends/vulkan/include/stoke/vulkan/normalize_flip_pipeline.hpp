#pragma once
/// @file
/// `vulkan::NormalizeFlipPipeline`: the compute pipeline of `shaders/normalize_flip_chw.comp`
/// on one device, which turns a batch of HWC byte images into normalised CHW float rows,
/// mirroring the rows flagged to flip, by per-channel byte-to-float tables.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <utility>

#include <stoke/core/error.hpp>
#include <stoke/vulkan/buffer.hpp>
#include <stoke/vulkan/compute_pipeline.hpp>
#include <stoke/vulkan/context.hpp>
#include <stoke/vulkan/fence.hpp>
#include <stoke/vulkan/shaders/normalize_flip_chw.spv.hpp>

namespace stoke::vulkan {

/// The flip-and-normalise shader, ready to dispatch on one device. Thread-safe.
class NormalizeFlipPipeline {
 public:
  /// Invocations per workgroup (`local_size_x` of the shader).
  static constexpr std::uint32_t group_size = 256;

  /// What a dispatch converts (the shader's push constants).
  struct Shape {
    std::uint32_t rows;      ///< images in the batch
    std::uint32_t height;    ///< of each image
    std::uint32_t width;     ///< of each image
    std::uint32_t channels;  ///< of each image: 1 or 3
    std::uint32_t flips;     ///< offset of the flips in the staged buffer, in 32-bit words
  };

  /// Builds the pipeline on `context`'s device.
  explicit NormalizeFlipPipeline(std::shared_ptr<Context> context)
      : pipeline_(std::move(context), shaders::normalize_flip_chw, 3, sizeof(Shape), group_size) {}

  /// Submits the conversion of the images in `staged` (`shape.rows` HWC byte images, one
  /// after the other from offset 0, then at word `shape.flips` one `uint32` an image,
  /// non-zero to mirror it left to right) into the first `rows * channels * height * width`
  /// floats of `values`, CHW image after image, channel `c`'s byte `b` becoming
  /// `tables[c * 256 + b]`; after `after` and the buffers' earlier writes; returns its fence.
  /// Throws `UsageError` when the batch has more values than a 32-bit index reaches, or
  /// `shape.channels` is not 1 or 3, and `stoke::Error` when a buffer exceeds the device's
  /// storage buffer range.
  Fence run(const Buffer& staged, const Buffer& tables, Buffer& values, const Shape& shape,
            std::span<const Fence> after = {}) {
    const std::size_t count = std::size_t{shape.rows} * shape.channels * shape.height * shape.width;
    if (count > std::numeric_limits<std::uint32_t>::max() ||
        (shape.channels != 1 && shape.channels != 3)) {
      throw UsageError("stoke: vulkan: NormalizeFlipPipeline: " + std::to_string(shape.rows) +
                       " images of " + std::to_string(shape.height) + "x" +
                       std::to_string(shape.width) + "x" + std::to_string(shape.channels) +
                       " (it needs 1 or 3 channels and fewer than 2^32 values)");
    }
    const Binding bindings[] = {Binding::read(staged), Binding::read(tables),
                                Binding::write(values)};
    return pipeline_.dispatch(bindings, shape, count, after);
  }

 private:
  ComputePipeline pipeline_;
};

}  // namespace stoke::vulkan
