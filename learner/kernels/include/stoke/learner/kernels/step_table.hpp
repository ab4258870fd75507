#pragma once
/// @file
/// The step table: the scalars of an optimizer step that change from step to step (the
/// learning rate, Adam's decay and bias corrections), one row a step, in a device tensor the
/// learner fills once an epoch, behind a step counter that the step itself advances on the
/// device. A step then takes no changing scalar from the host: what it hands the device is the
/// same every step (what a captured step needs). Backends (Vulkan shaders, CUDA kernels) read
/// it; the learner fills it (see `stoke::DeviceBackend`).

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace stoke {

/// The scalars of one optimizer step that change from step to step, computed on the host in
/// the precision the host optimizers use (`detail::adam_factors` for Adam), so a step reading
/// them from the table gives the bits of one given them as kernel arguments.
struct StepScalars {
  float learning_rate = 0.0f;     ///< the step's rate (the learner's schedule)
  float decay = 1.0f;             ///< Adam's `1 - learning_rate * weight_decay` (SGD: 1)
  float correction1 = 1.0f;       ///< Adam's `1 - beta1^t` (SGD: 1)
  float root_correction2 = 1.0f;  ///< Adam's `sqrt(1 - beta2^t)` (SGD: 1)
};

/// Floats of one row of the step table: a `StepScalars`.
inline constexpr std::size_t step_table_row = 4;
/// The step table's header, in 32-bit words before the first row: word 0 is the step counter
/// (an unsigned 32-bit integer, the index of the row and history slot of the next step),
/// which the backend's `advance_step` adds one to; the others are zero.
inline constexpr std::size_t step_table_header = 4;

/// Floats of a step table of `steps` rows.
[[nodiscard]] constexpr std::size_t step_table_floats(std::size_t steps) noexcept {
  return step_table_header + step_table_row * steps;
}

/// The host image of a step table whose rows are `rows` and whose counter is zero (the
/// counter's word is an unsigned integer: zero bits, as the float 0).
[[nodiscard]] inline std::vector<float> step_table(std::span<const StepScalars> rows) {
  std::vector<float> table(step_table_floats(rows.size()), 0.0f);
  for (std::size_t s = 0; s < rows.size(); ++s) {
    float* row = table.data() + step_table_floats(s);
    row[0] = rows[s].learning_rate;
    row[1] = rows[s].decay;
    row[2] = rows[s].correction1;
    row[3] = rows[s].root_correction2;
  }
  return table;
}

/// The value a kernel's history slot or real-row count takes when it is to read it from the
/// device (the step table's counter, a batch's row-count tensor) instead.
inline constexpr std::uint32_t read_on_device = 0xFFFFFFFFu;

}  // namespace stoke
