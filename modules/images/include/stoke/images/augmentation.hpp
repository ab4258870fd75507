#pragma once
/// @file
/// `Augmentation`: one pipeline of augmentation operations composed with `|`, drawn per sample
/// from the sample's own random stream (`SampleRng`), so a sample gets the same augmentation
/// whichever worker, device or rank loads it.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>

#include <stoke/core/error.hpp>
#include <stoke/core/rng.hpp>
#include <stoke/images/augment_draw.hpp>
#include <stoke/images/augment_ops.hpp>
#include <stoke/images/detail/crop_draws.hpp>

namespace stoke::images {

/// One augmentation pipeline: exactly one geometric operation that gives the output size
/// (`random_resized_crop`, `center_crop` or `resize`), then optionally `horizontal_flip` and
/// `color_jitter`, each at most once, in either order:
///
///     Augmentation train = random_resized_crop(224, 224) | horizontal_flip() |
///                          color_jitter(0.4F, 0.4F, 0.4F);
///
/// A geometric operation converts to an `Augmentation`; `|` adds a flip or a jitter to it. A
/// pipeline that does not start with a geometric operation, or holds two, does not compile; a
/// flip or a jitter given twice throws `UsageError`.
///
/// `draw` only draws (see there); `render`, `normalize_into` and `render_normalized` apply.
class Augmentation {
 public:
  /// A pipeline of a random resized crop alone (checked: `UsageError` naming the value).
  Augmentation(RandomResizedCrop op) : geometry_(detail::checked(op)) {}  // NOLINT
  /// A pipeline of a centre crop alone (checked: `UsageError` naming the value).
  Augmentation(CenterCrop op) : geometry_(detail::checked(op)) {}  // NOLINT
  /// A pipeline of a resize alone (checked: `UsageError` naming the value).
  Augmentation(Resize op) : geometry_(detail::checked(op)) {}  // NOLINT

  /// Output rows.
  [[nodiscard]] std::uint32_t height() const noexcept {
    return std::visit([](const auto& op) { return op.height; }, geometry_);
  }
  /// Output columns.
  [[nodiscard]] std::uint32_t width() const noexcept {
    return std::visit([](const auto& op) { return op.width; }, geometry_);
  }
  /// Whether the pipeline flips (with a probability above 0).
  [[nodiscard]] bool has_flip() const noexcept { return flip_ && flip_->probability > 0.0F; }
  /// Whether the pipeline jitters colours (some strength above 0): its draws may then have
  /// factors other than 1, which `render_normalized` refuses.
  [[nodiscard]] bool has_color_jitter() const noexcept {
    return jitter_ &&
           (jitter_->brightness > 0.0F || jitter_->contrast > 0.0F || jitter_->saturation > 0.0F);
  }

  /// Draws the augmentation of one sample whose source is `source_height` x `source_width`,
  /// from `rng` (the sample's `SampleRng`), always in this order whatever the order of `|`:
  /// 1. the box: `random_resized_crop` draws as `detail::random_resized_crop_box` (two draws
  ///    an attempt, two more for the position of the attempt that fits); `center_crop` (the
  ///    centre, `detail::center_crop_box`) and `resize` (the whole source) draw nothing;
  /// 2. the flip, if the pipeline has one: one draw `u`, flip when `u < probability`;
  /// 3. the colour factors, if the pipeline has a jitter: three draws, brightness, contrast,
  ///    saturation, each `low + (high - low) * u` over `[max(0, 1 - x), 1 + x]` (exactly 1
  ///    for a strength of 0).
  /// Throws `InputError` for a source with no pixels, or one smaller than a `center_crop`.
  [[nodiscard]] AugmentDraw draw(std::uint32_t source_height, std::uint32_t source_width,
                                 SampleRng& rng) const {
    if (source_height == 0 || source_width == 0) {
      throw InputError("stoke: Augmentation::draw: the image is " + std::to_string(source_height) +
                       "x" + std::to_string(source_width) + ", it has no pixels");
    }
    AugmentDraw out;
    out.box = std::visit(
        [&](const auto& op) { return box_of(op, source_height, source_width, rng); }, geometry_);
    if (flip_) out.flip = rng.uniform() < flip_->probability;
    if (jitter_) {
      out.brightness = factor(jitter_->brightness, rng);
      out.contrast = factor(jitter_->contrast, rng);
      out.saturation = factor(jitter_->saturation, rng);
    }
    return out;
  }

  /// `augmentation` followed by `flip`; `UsageError` if it flips already.
  friend Augmentation operator|(Augmentation augmentation, HorizontalFlip flip);
  /// `augmentation` followed by `jitter`; `UsageError` if it jitters already.
  friend Augmentation operator|(Augmentation augmentation, ColorJitter jitter);

 private:
  static CropBox box_of(const RandomResizedCrop& op, std::uint32_t source_height,
                        std::uint32_t source_width, SampleRng& rng) {
    return detail::random_resized_crop_box(source_height, source_width, op.scale, op.ratio, rng);
  }
  static CropBox box_of(const CenterCrop& op, std::uint32_t source_height,
                        std::uint32_t source_width, SampleRng& /*rng*/) {
    return detail::center_crop_box(source_height, source_width, op.height, op.width);
  }
  static CropBox box_of(const Resize& /*op*/, std::uint32_t source_height,
                        std::uint32_t source_width, SampleRng& /*rng*/) {
    return {0.0F, 0.0F, static_cast<float>(source_height), static_cast<float>(source_width)};
  }
  /// A factor uniform in `[max(0, 1 - strength), 1 + strength]`, from one draw.
  static float factor(float strength, SampleRng& rng) {
    const double low = std::max(0.0, 1.0 - strength);
    const double high = 1.0 + static_cast<double>(strength);
    return static_cast<float>(low + (high - low) * rng.uniform());
  }

  std::variant<RandomResizedCrop, CenterCrop, Resize> geometry_;
  std::optional<HorizontalFlip> flip_;
  std::optional<ColorJitter> jitter_;
};

/// `augmentation` followed by `flip` (also `random_resized_crop(...) | horizontal_flip()`):
/// throws `UsageError` if `augmentation` flips already, or for an invalid probability.
inline Augmentation operator|(Augmentation augmentation, HorizontalFlip flip) {
  if (augmentation.flip_) {
    throw UsageError("stoke: Augmentation: horizontal_flip is given twice (probabilities " +
                     detail::format_value(augmentation.flip_->probability) + " and " +
                     detail::format_value(flip.probability) + ")");
  }
  augmentation.flip_ = detail::checked(flip);
  return augmentation;
}

/// `augmentation` followed by `jitter` (also `resize(...) | color_jitter(...)`): throws
/// `UsageError` if `augmentation` jitters already, or for an invalid strength.
inline Augmentation operator|(Augmentation augmentation, ColorJitter jitter) {
  if (augmentation.jitter_) {
    throw UsageError("stoke: Augmentation: color_jitter is given twice");
  }
  augmentation.jitter_ = detail::checked(jitter);
  return augmentation;
}

}  // namespace stoke::images
