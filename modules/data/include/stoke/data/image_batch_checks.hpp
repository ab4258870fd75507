#pragma once
/// @file
/// The input checks every batcher of `LabeledImage`s makes, whatever its backend: the
/// normalisation it was given, equal pixel counts, and labels that fit the int32 they become;
/// and the normalisation and upload of the checked pixel rows that the device batchers share.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/data/labeled_image.hpp>

namespace stoke {

/// Throws `InputError`, naming `batcher`, unless `mean` and `std` are finite and `std` is not
/// zero.
inline void check_image_normalization(std::string_view batcher, float mean, float std) {
  if (std == 0.0F || !std::isfinite(std) || !std::isfinite(mean)) {
    throw InputError("stoke: " + std::string(batcher) + ": mean " + std::to_string(mean) +
                     " and std " + std::to_string(std) + " must be finite, and std non-zero");
  }
}

/// The pixel count of the images of a batch: that of its first image (0 for no image).
inline std::size_t image_batch_pixels(std::span<const LabeledImage> items) noexcept {
  return items.empty() ? 0 : items.front().pixels.size();
}

/// The classes of `items` as int32, after checking that every image has the pixel count of
/// the first and every label fits in int32; throws `InputError` naming `batcher` and the item.
inline std::vector<std::int32_t> image_batch_labels(std::string_view batcher,
                                                    std::span<const LabeledImage> items) {
  const std::size_t pixels = image_batch_pixels(items);
  std::vector<std::int32_t> labels;
  labels.reserve(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    const auto where = "stoke: " + std::string(batcher) + ": item " + std::to_string(i);
    if (items[i].pixels.size() != pixels) {
      throw InputError(where + " of the batch has " + std::to_string(items[i].pixels.size()) +
                       " pixels, item 0 has " + std::to_string(pixels));
    }
    if (items[i].label > static_cast<std::uint32_t>(std::numeric_limits<std::int32_t>::max())) {
      throw InputError(where + " of the batch has label " + std::to_string(items[i].label) +
                       ", which does not fit in int32");
    }
    labels.push_back(static_cast<std::int32_t>(items[i].label));
  }
  return labels;
}

/// The rows of an image batch, checked: how many, the pixels of each, the labels as int32.
struct ImageRows {
  std::size_t rows = 0;              ///< one per image
  std::size_t pixels = 0;            ///< bytes per image
  std::vector<std::int32_t> labels;  ///< one per image
};

/// Checks the normalisation and `items` for the batcher named `batcher` (an `InputError`
/// names what is wrong); their rows.
inline ImageRows check_image_rows(std::string_view batcher, float mean, float std,
                                  std::span<const LabeledImage> items) {
  check_image_normalization(batcher, mean, std);
  return ImageRows{items.size(), image_batch_pixels(items), image_batch_labels(batcher, items)};
}

/// The normalisation `(b / 255 - mean) / std` of a device image batcher, and the checks of a
/// batch against it: the CUDA and Vulkan `ImageBatcher`s derive from it.
class ByteImageNormalization {
 public:
  /// Subtracts `mean` after scaling bytes to [0, 1], then divides by `std`.
  ByteImageNormalization(float mean, float std) noexcept : mean_(mean), std_(std) {}

  /// Subtracted after scaling bytes to [0, 1].
  [[nodiscard]] float mean() const noexcept { return mean_; }
  /// Then divided by.
  [[nodiscard]] float std() const noexcept { return std_; }

 protected:
  /// The rows of `items`, checked with `check_image_rows` for the batcher named `batcher`.
  [[nodiscard]] ImageRows checked_rows(std::string_view batcher,
                                       std::span<const LabeledImage> items) const {
    return check_image_rows(batcher, mean_, std_, items);
  }

 private:
  float mean_;
  float std_;
};

namespace detail {
/// Copies the pixels of `items`, row after row, to `to` (`rows.rows * rows.pixels` bytes).
inline void copy_image_rows(std::byte* to, std::span<const LabeledImage> items,
                            const ImageRows& rows) {
  for (std::size_t i = 0; i < rows.rows && rows.pixels > 0; ++i) {
    std::memcpy(to + i * rows.pixels, items[i].pixels.data(), rows.pixels);
  }
}
}  // namespace detail

/// Starts the upload of the pixels of `items`, row after row, through `stager.upload_with`
/// (CUDA and Vulkan stagers); returns what it returns.
template <class Stager>
auto upload_image_rows(Stager& stager, std::span<const LabeledImage> items, const ImageRows& rows) {
  return stager.upload_with(rows.rows * rows.pixels, [&](std::span<std::byte> staging) {
    detail::copy_image_rows(staging.data(), items, rows);
  });
}

/// Where the pixels start in the buffer `upload_labelled_image_rows` fills: after the labels.
[[nodiscard]] inline std::size_t labelled_rows_offset(const ImageRows& rows) noexcept {
  return rows.labels.size() * sizeof(std::int32_t);
}

/// Starts the upload of the labels (int32) of `rows` and then the pixels of `items`, row after
/// row, as one copy through `stager.upload_with`: one staging claim, one copy and one device
/// buffer for both, whose first `rows.rows` words are the batch's device labels and whose
/// pixels start at `labelled_rows_offset(rows)`. Returns what `upload_with` returns.
template <class Stager>
auto upload_labelled_image_rows(Stager& stager, std::span<const LabeledImage> items,
                                const ImageRows& rows) {
  const std::size_t label_bytes = labelled_rows_offset(rows);
  return stager.upload_with(label_bytes + rows.rows * rows.pixels,
                            [&](std::span<std::byte> staging) {
                              if (label_bytes > 0)
                                std::memcpy(staging.data(), rows.labels.data(), label_bytes);
                              detail::copy_image_rows(staging.data() + label_bytes, items, rows);
                            });
}

}  // namespace stoke
