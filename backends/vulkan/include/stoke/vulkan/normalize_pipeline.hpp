#pragma once
/// @file
/// `vulkan::NormalizePipeline`: the compute pipeline of `shaders/normalize_u8.comp` on one
/// device, which turns bytes into normalised floats `(b / 255 - mean) / std`.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>

#include <stoke/vulkan/buffer.hpp>
#include <stoke/vulkan/compute_pipeline.hpp>
#include <stoke/vulkan/context.hpp>
#include <stoke/vulkan/fence.hpp>
#include <stoke/vulkan/shaders/normalize_u8.spv.hpp>

namespace stoke::vulkan {

/// The normalisation shader, ready to dispatch on one device. Thread-safe.
class NormalizePipeline {
 public:
  /// Invocations per workgroup (`local_size_x` of the shader).
  static constexpr std::uint32_t group_size = 256;

  /// Builds the pipeline on `context`'s device.
  explicit NormalizePipeline(std::shared_ptr<Context> context)
      : pipeline_(std::move(context), shaders::normalize_u8, 2, sizeof(Params), group_size) {}

  /// Submits the conversion of the first `count` bytes of `bytes` into the first `count`
  /// floats of `values`, after `after` and the buffers' earlier writes; returns its fence.
  /// Throws `stoke::Error` when `values` exceeds the device's storage buffer range.
  Fence run(Buffer& bytes, Buffer& values, std::size_t count, float mean, float std,
            std::span<const Fence> after = {}) {
    const Binding bindings[] = {Binding::read(bytes), Binding::write(values)};
    return pipeline_.dispatch(bindings, Params{static_cast<std::uint32_t>(count), mean, std}, count,
                              after);
  }

 private:
  struct Params {
    std::uint32_t count;
    float mean;
    float stddev;
  };

  ComputePipeline pipeline_;
};

}  // namespace stoke::vulkan
