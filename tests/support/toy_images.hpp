#pragma once
/// @file
/// A small learnable image-classification dataset for learner tests: each image's pixels
/// depend on its class plus noise from a counter-based generator, so it is deterministic.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <stoke/core/rng.hpp>
#include <stoke/data/labeled_image.hpp>

namespace stoke::testing {

/// `count` images of `kPixels` bytes in `kClasses` classes; reading `failing_index` throws.
struct ToyImages {
  static constexpr std::size_t kPixels = 16;  ///< pixels per image
  static constexpr std::size_t kClasses = 4;  ///< classes

  std::shared_ptr<const std::vector<std::uint8_t>> pixels;
  std::shared_ptr<const std::vector<std::uint32_t>> labels;
  std::size_t failing_index = SIZE_MAX;

  /// `count` images drawn with `seed`.
  explicit ToyImages(std::size_t count, std::uint64_t seed = 1) {
    auto bytes = std::make_shared<std::vector<std::uint8_t>>(count * kPixels);
    auto classes = std::make_shared<std::vector<std::uint32_t>>(count);
    for (std::size_t i = 0; i < count; ++i) {
      SampleRng rng(seed, 0, i);
      const std::uint32_t label = rng() % kClasses;
      (*classes)[i] = label;
      for (std::size_t p = 0; p < kPixels; ++p) {
        const bool lit = p % kClasses == label;
        (*bytes)[i * kPixels + p] = static_cast<std::uint8_t>((lit ? 160 : 40) + rng() % 64);
      }
    }
    pixels = bytes;
    labels = classes;
  }
  [[nodiscard]] std::size_t size() const { return labels->size(); }
  [[nodiscard]] LabeledImage get(std::size_t i) const {
    if (i == failing_index) {
      throw std::runtime_error("sample " + std::to_string(i) + " is unreadable");
    }
    return {std::span(*pixels).subspan(i * kPixels, kPixels), (*labels)[i]};
  }
};

}  // namespace stoke::testing
