#pragma once
/// @file
/// Learning-rate schedules: small value types mapping a step number to a learning rate.

#include <cmath>
#include <concepts>
#include <cstddef>
#include <numbers>

namespace stoke {

/// A learning-rate schedule.
///
/// Requirements:
/// 1. `s(step)`, on a `const` schedule, is the learning rate (a `float`) of optimizer step
///    `step`, counted from 0;
/// 2. it is a pure function of the step (a resumed run gets the same rates);
/// 3. `S` is copy-constructible (each device's replica holds a copy).
template <class S>
concept LrSchedule = std::copy_constructible<S> && requires(const S& schedule, std::size_t step) {
  { schedule(step) } -> std::convertible_to<float>;
};

/// The same learning rate at every step.
struct ConstantLr {
  float value = 0.01f;  ///< the learning rate

  /// `value`, whatever the step.
  [[nodiscard]] float operator()(std::size_t /*step*/) const noexcept { return value; }
};

/// Step decay: `base * gamma^(step / step_size)` (integer division), as PyTorch's `StepLR`.
struct StepLr {
  float base = 0.01f;         ///< the learning rate for the first `step_size` steps
  float gamma = 0.1f;         ///< the factor applied every `step_size` steps
  std::size_t step_size = 1;  ///< steps between decays (0 is read as 1)

  /// The learning rate at `step`.
  [[nodiscard]] float operator()(std::size_t step) const noexcept {
    const auto decays = step / (step_size == 0 ? 1 : step_size);
    return static_cast<float>(static_cast<double>(base) *
                              std::pow(static_cast<double>(gamma), static_cast<double>(decays)));
  }
};

/// Linear warmup, then cosine decay to a minimum.
///
/// For `step < warmup_steps` the rate is `base * (step + 1) / warmup_steps` (so the first
/// step already trains and step `warmup_steps - 1` reaches `base`); from `warmup_steps` to
/// `total_steps` it follows `minimum + (base - minimum) * (1 + cos(pi * progress)) / 2`
/// with `progress = (step - warmup_steps) / (total_steps - warmup_steps)`; from
/// `total_steps` on it stays at `minimum`.
struct CosineLr {
  float base = 0.01f;            ///< the peak learning rate, reached at the end of warmup
  float minimum = 0.0f;          ///< the learning rate at and after `total_steps`
  std::size_t total_steps = 1;   ///< where the decay ends (warmup included)
  std::size_t warmup_steps = 0;  ///< length of the linear warmup

  /// The learning rate at `step`.
  [[nodiscard]] float operator()(std::size_t step) const noexcept {
    if (step < warmup_steps) {
      return static_cast<float>(static_cast<double>(base) * static_cast<double>(step + 1) /
                                static_cast<double>(warmup_steps));
    }
    if (step >= total_steps) return minimum;
    const double progress =
        static_cast<double>(step - warmup_steps) / static_cast<double>(total_steps - warmup_steps);
    const double low = minimum;
    return static_cast<float>(low + (static_cast<double>(base) - low) *
                                        (1.0 + std::cos(std::numbers::pi * progress)) / 2.0);
  }
};

}  // namespace stoke
