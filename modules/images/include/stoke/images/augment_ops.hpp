#pragma once
/// @file
/// The operations of an augmentation pipeline and their builders: one geometric operation that
/// gives the output size (`random_resized_crop`, `center_crop`, `resize`), then optionally
/// `horizontal_flip` and `color_jitter`. Compose them with `|` (see `Augmentation`).

#include <array>
#include <cstdint>

#include <stoke/images/detail/augment_checks.hpp>

namespace stoke::images {

/// A random part of the source (area and aspect ratio drawn), resized to `height` x `width`:
/// torchvision's `RandomResizedCrop` (made by `random_resized_crop`, which checks it).
struct RandomResizedCrop {
  std::uint32_t height = 0;                              ///< output rows
  std::uint32_t width = 0;                               ///< output columns
  std::array<float, 2> scale{0.08F, 1.0F};               ///< area fraction of the source, in (0, 1]
  std::array<float, 2> ratio{3.0F / 4.0F, 4.0F / 3.0F};  ///< aspect ratio (width / height)
};

/// The `height` x `width` centre of the source, not resized (made by `center_crop`).
struct CenterCrop {
  std::uint32_t height = 0;  ///< output rows
  std::uint32_t width = 0;   ///< output columns
};

/// The whole source resized to `height` x `width` (made by `resize`).
struct Resize {
  std::uint32_t height = 0;  ///< output rows
  std::uint32_t width = 0;   ///< output columns
};

/// Mirrors the output left to right with `probability` (made by `horizontal_flip`).
struct HorizontalFlip {
  float probability = 0.5F;  ///< in [0, 1]
};

/// Random brightness, contrast and saturation factors, each uniform in
/// `[max(0, 1 - x), 1 + x]` (made by `color_jitter`).
struct ColorJitter {
  float brightness = 0.0F;  ///< strength of the brightness factor, at least 0
  float contrast = 0.0F;    ///< strength of the contrast factor, at least 0
  float saturation = 0.0F;  ///< strength of the saturation factor, at least 0
};

namespace detail {

/// Throws `UsageError` naming the value unless `op` is valid.
inline void check_op(const RandomResizedCrop& op) {
  check_output_size("random_resized_crop", op.height, op.width);
  check_crop_scale("random_resized_crop", op.scale);
  check_crop_ratio("random_resized_crop", op.ratio);
}
/// Throws `UsageError` naming the value unless `op` is valid.
inline void check_op(const CenterCrop& op) {
  check_output_size("center_crop", op.height, op.width);
}
/// Throws `UsageError` naming the value unless `op` is valid.
inline void check_op(const Resize& op) {
  check_output_size("resize", op.height, op.width);
}
/// Throws `UsageError` naming the value unless `op` is valid.
inline void check_op(const HorizontalFlip& op) {
  check_probability("horizontal_flip", op.probability);
}
/// Throws `UsageError` naming the value unless `op` is valid.
inline void check_op(const ColorJitter& op) {
  check_jitter("color_jitter", "brightness", op.brightness);
  check_jitter("color_jitter", "contrast", op.contrast);
  check_jitter("color_jitter", "saturation", op.saturation);
}

/// `op`, checked.
template <class Op>
[[nodiscard]] Op checked(Op op) {
  check_op(op);
  return op;
}

}  // namespace detail

/// A random crop resized to `height` x `width`, as torchvision's `RandomResizedCrop`: the
/// area fraction is drawn uniform in `scale`, the aspect ratio log-uniform in `ratio` (see
/// `detail::random_resized_crop_box`). Throws `UsageError` for a zero size, a `scale` outside
/// (0, 1] or a `ratio` that is not positive (or either not ordered).
[[nodiscard]] inline RandomResizedCrop random_resized_crop(
    std::uint32_t height, std::uint32_t width, std::array<float, 2> scale = {0.08F, 1.0F},
    std::array<float, 2> ratio = {3.0F / 4.0F, 4.0F / 3.0F}) {
  return detail::checked(RandomResizedCrop{height, width, scale, ratio});
}

/// The `height` x `width` centre of the image, not resized. Throws `UsageError` for a zero
/// size; drawing it for a smaller image throws `InputError` naming both sizes (no padding).
[[nodiscard]] inline CenterCrop center_crop(std::uint32_t height, std::uint32_t width) {
  return detail::checked(CenterCrop{height, width});
}

/// The whole image resized to `height` x `width`. Throws `UsageError` for a zero size.
[[nodiscard]] inline Resize resize(std::uint32_t height, std::uint32_t width) {
  return detail::checked(Resize{height, width});
}

/// Mirrors the output left to right with `probability`. Throws `UsageError` for a
/// probability outside [0, 1].
[[nodiscard]] inline HorizontalFlip horizontal_flip(float probability = 0.5F) {
  return detail::checked(HorizontalFlip{probability});
}

/// Colour jitter as torchvision's `ColorJitter` without hue: each factor uniform in
/// `[max(0, 1 - x), 1 + x]`, applied in the fixed order brightness, contrast, saturation (see
/// `apply_color_jitter`). Throws `UsageError` for a strength that is negative or not finite.
[[nodiscard]] inline ColorJitter color_jitter(float brightness, float contrast, float saturation) {
  return detail::checked(ColorJitter{brightness, contrast, saturation});
}

}  // namespace stoke::images
