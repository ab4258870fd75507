#pragma once
/// @file
/// Image sources for `stoke_loader`: an image folder or WebDataset tar shards, local or in a
/// byte store (stoke's `images::ImageFolder`, `images::TarShards`, `images::StoredTarShards`)
/// as two columns, the images (decoded, cropped, resized, flipped and optionally normalised by
/// stoke's augmentations, straight into the batch) and their labels (read without decoding).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/data/sample_context.hpp>
#include <stoke/images/augment.hpp>
#include <stoke/images/image.hpp>
#include <stoke/images/image_batcher.hpp>
#include <stoke/images/image_folder.hpp>
#include <stoke/images/prepared_image.hpp>
#include <stoke/images/render_row.hpp>
#include <stoke/images/stored_tar_shards.hpp>
#include <stoke/images/tar_shards.hpp>

#include "rows.hpp"

namespace stoke_python {

namespace images = stoke::images;

/// Where the images of an `ImageSource` are: a folder, local tar shards, or tar shards in a
/// byte store.
using ImageData = std::variant<images::ImageFolder, images::TarShards, images::StoredTarShards>;

/// Whether `S` (one of `ImageData`'s) is made of tar shards.
template <class S>
inline constexpr bool is_tar_shards = !std::is_same_v<S, images::ImageFolder>;

/// An image folder or tar shards (local or stored), and how their images are rendered: as the
/// C++ `images::ImageBatcher` does (float32 CHW, normalised) when `batcher` is set, else as HWC
/// bytes (uint8), augmented the same way but not normalised.
struct ImageSource {
  ImageData images;                             ///< where the images are
  images::Augmentation augmentation;            ///< crop, resize, flip, jitter
  images::PrepareOptions decoding;              ///< channels, decoding
  std::optional<images::ImageBatcher> batcher;  ///< set to normalise

  /// Samples.
  [[nodiscard]] std::size_t size() const {
    return std::visit([](const auto& s) { return s.size(); }, images);
  }
  /// Sample `index`'s encoded image.
  [[nodiscard]] images::EncodedImage get(std::size_t index) const {
    return std::visit([&](const auto& s) { return s.get(index); }, images);
  }
  /// Sample `index`'s label, without decoding.
  [[nodiscard]] std::uint32_t label(std::size_t index) const {
    return std::visit([&](const auto& s) { return s.label(index); }, images);
  }
  /// Where each tar shard's samples begin (null for a folder).
  [[nodiscard]] const std::vector<std::size_t>* shard_begins() const {
    return std::visit(
        []<class S>(const S& s) -> const std::vector<std::size_t>* {
          if constexpr (is_tar_shards<S>) return &s.shard_begins();
          return nullptr;
        },
        images);
  }
  /// Reads the epoch's next tar shards ahead (advised to the kernel, or fetched from a store).
  void read_ahead(std::span<const std::size_t> shards) const {
    std::visit(
        [&]<class S>(const S& s) {
          if constexpr (is_tar_shards<S>) s.read_ahead(shards);
        },
        images);
  }
  /// The shape of one rendered image, HWC.
  [[nodiscard]] images::ImageShape output_shape() const noexcept {
    return {augmentation.height(), augmentation.width(), decoding.channels};
  }
};

/// The images of an `ImageSource`, one per row: float32 `[C, H, W]` normalised, or uint8
/// `[H, W, C]`. Each is drawn from its sample's own random stream (seed, epoch, dataset index),
/// so it does not depend on workers, devices or ranks.
class ImageColumn final : public Column {
 public:
  /// The column `name` over `source`.
  ImageColumn(std::string name, std::shared_ptr<const ImageSource> source)
      : Column(std::move(name), element_type(*source), row_shape_of(*source)),
        source_(std::move(source)) {
    set_rows(source_->size());
  }

  void copy_rows(std::span<const std::size_t> indices, std::size_t first_row,
                 std::byte* out) const override {
    const std::size_t bytes = row_bytes();
    for (std::size_t k = 0; k < indices.size(); ++k, out += bytes) {
      std::string source = "?";
      try {
        const images::EncodedImage item = source_->get(indices[k]);
        source = item.source;
        render(item, stoke::sample_rng(first_row + k), out);
      } catch (const stoke::Error& error) {
        throw stoke::InputError("stoke_loader: column '" + name() + "', sample " +
                                std::to_string(indices[k]) + " (" + source + "): " + error.what());
      }
    }
  }

  [[nodiscard]] const std::vector<std::size_t>* shard_begins() const override {
    return source_->shard_begins();
  }
  void read_ahead(std::span<const std::size_t> shards) const override {
    source_->read_ahead(shards);
  }

 private:
  static nb::dlpack::dtype element_type(const ImageSource& source) {
    return source.batcher ? nb::dtype<float>() : nb::dtype<std::uint8_t>();
  }
  static std::vector<std::size_t> row_shape_of(const ImageSource& source) {
    const images::ImageShape shape = source.output_shape();
    if (source.batcher) return {shape.channels, shape.height, shape.width};
    return {shape.height, shape.width, shape.channels};
  }

  /// Renders `item` into `out` (one row) with `rng`.
  void render(const images::EncodedImage& item, stoke::SampleRng rng, std::byte* out) const {
    if (source_->batcher) {
      const std::span<float> row(reinterpret_cast<float*>(out), row_bytes() / sizeof(float));
      source_->batcher->render_row(item, rng, row);
      return;
    }
    const std::span<std::uint8_t> row(reinterpret_cast<std::uint8_t*>(out), row_bytes());
    const images::AugmentDraw draw =
        images::render_row_bytes(item, source_->augmentation, source_->decoding, rng, row);
    if (draw.flip) flip_rows(row, source_->output_shape());
  }

  /// Mirrors the HWC image `image` of `shape` left to right, in place.
  static void flip_rows(std::span<std::uint8_t> image, images::ImageShape shape) {
    const std::size_t pixel = shape.channels;
    for (std::size_t y = 0; y < shape.height; ++y) {
      std::uint8_t* line = image.data() + y * shape.width * pixel;
      for (std::size_t l = 0, r = shape.width - 1; l < r; ++l, --r) {
        std::swap_ranges(line + l * pixel, line + (l + 1) * pixel, line + r * pixel);
      }
    }
  }

  std::shared_ptr<const ImageSource> source_;
};

/// The labels of an `ImageSource` (int32, as the C++ batcher gives them), read without
/// decoding the images.
class LabelColumn final : public Column {
 public:
  /// The column `name` over `source`.
  LabelColumn(std::string name, std::shared_ptr<const ImageSource> source)
      : Column(std::move(name), nb::dtype<std::int32_t>(), {}), source_(std::move(source)) {
    set_rows(source_->size());
  }

  void copy_rows(std::span<const std::size_t> indices, std::size_t /*first_row*/,
                 std::byte* out) const override {
    for (const std::size_t index : indices) {
      const auto label = static_cast<std::int32_t>(source_->label(index));
      std::memcpy(out, &label, sizeof label);
      out += sizeof label;
    }
  }

  [[nodiscard]] const std::vector<std::size_t>* shard_begins() const override {
    return source_->shard_begins();
  }

 private:
  std::shared_ptr<const ImageSource> source_;
};

}  // namespace stoke_python
