#pragma once
/// @file
/// `Normalization`: per-channel mean and std, kept as one byte-to-float table a channel.

#include <array>
#include <cmath>
#include <cstdint>
#include <string>

#include <stoke/core/error.hpp>
#include <stoke/data/normalization_table.hpp>
#include <stoke/images/detail/augment_checks.hpp>

namespace stoke::images {

/// Per-channel normalisation of image bytes: channel `c`'s byte `b` becomes
/// `(b / 255 - mean[c]) / std[c]` in float32, looked up in a table made by
/// `stoke::normalization_table` (the expression every batcher shares, so host and
/// device batches are equal bit for bit).
class Normalization {
 public:
  /// For RGB images. Throws `UsageError` naming the channel and value unless every mean and
  /// std is finite and every std non-zero.
  Normalization(std::array<float, 3> mean, std::array<float, 3> std) : channels_(3) {
    for (std::uint32_t c = 0; c < 3; ++c) set(c, mean[c], std[c]);
  }
  /// For grey images (1 channel); the same checks.
  Normalization(float mean, float std) : channels_(1) { set(0, mean, std); }

  /// The channels this normalises: 3 or 1; an image must have as many.
  [[nodiscard]] std::uint32_t channels() const noexcept { return channels_; }

  /// The table of `channel`: `table(c)[b] = (b / 255 - mean[c]) / std[c]`. Throws
  /// `UsageError` for a channel it does not have.
  [[nodiscard]] const std::array<float, 256>& table(std::uint32_t channel) const {
    if (channel >= channels_) {
      throw UsageError("stoke: Normalization: channel " + std::to_string(channel) +
                       " of a normalisation of " + std::to_string(channels_) + " channels");
    }
    return tables_[channel];
  }

 private:
  void set(std::uint32_t channel, float mean, float std) {
    const std::string which = "[" + std::to_string(channel) + "] ";
    if (!std::isfinite(mean)) {
      throw UsageError("stoke: Normalization: mean" + which + detail::format_value(mean) +
                       " must be finite");
    }
    if (std == 0.0F || !std::isfinite(std)) {
      throw UsageError("stoke: Normalization: std" + which + detail::format_value(std) +
                       " must be finite and non-zero");
    }
    tables_[channel] = stoke::normalization_table(mean, std);
  }

  std::array<std::array<float, 256>, 3> tables_{};
  std::uint32_t channels_;
};

}  // namespace stoke::images
