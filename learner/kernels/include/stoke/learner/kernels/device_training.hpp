#pragma once
/// @file
/// What a backend's device kernels take to train any model on its devices: the shape of an
/// element-wise optimizer step and the layout of the learner's reduced buffer. Backends
/// (Vulkan shaders, CUDA kernels) implement them; the learner and its device-resident models
/// call them (see `stoke::DeviceBackend` in the learner). One model's own kernels live with
/// that model (the softmax classifier's: `softmax_classifier.hpp`).

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include <stoke/learner/kernels/step_table.hpp>

namespace stoke {

/// The learner's reduced buffer: `parameters` gradient SUMS, then the step's loss sum, its
/// real-item count and its correct count, `parameters + reduced_tail` floats in all. A device
/// model's `train_step` writes it, the collective sums it over the devices, and the optimizer
/// step reads the count from it on the device (no host round trip per step).
inline constexpr std::size_t reduced_tail = 3;

/// One element-wise optimizer step on the parameters `[begin, begin + size)` (a device's
/// parameter shard, or all of them), with the gradients `reduced[i] / reduced[parameters + 1]`.
/// When the count is zero the parameters and the state are left unchanged. The step also copies the
/// reduced buffer's three sums into `history[3 * history_slot ...]`, so the learner reads an
/// epoch's step losses once, at its end. A step given a step table (`step_table.hpp`) reads its
/// rate and its history slot from the table on the device instead; the host still checks the
/// tensors' sizes against `history_slot`.
struct OptimizerStepShape {
  std::size_t parameters = 0;    ///< floats of gradients in the reduced buffer
  std::size_t begin = 0;         ///< first parameter stepped
  std::size_t size = 0;          ///< parameters stepped (the state tensors hold `size` floats)
  float learning_rate = 0.0f;    ///< this step's rate (the learner owns the schedule)
  std::size_t history_slot = 0;  ///< the step's index in the epoch
};

/// Stochastic gradient descent with heavy-ball momentum and L2 weight decay, as `stoke::Sgd`:
/// `v = momentum v + (g + weight_decay p)`, `p -= lr v`.
struct SgdHyperparameters {
  float momentum = 0.0f;      ///< velocity decay
  float weight_decay = 0.0f;  ///< L2 factor added to the gradient
};

/// Adam with decoupled weight decay, as `stoke::Adam`, at step `step` (from 1).
struct AdamHyperparameters {
  float beta1 = 0.9f;         ///< first-moment decay
  float beta2 = 0.999f;       ///< second-moment decay
  float epsilon = 1e-8f;      ///< added to the root of the second moment
  float weight_decay = 0.0f;  ///< decoupled decay factor
  std::uint64_t step = 1;     ///< the step's number, counting from 1
};

namespace detail {

/// The floats in `bytes` (a tensor's download), whole floats only.
inline std::vector<float> floats_of(const std::vector<std::byte>& bytes) {
  std::vector<float> out(bytes.size() / sizeof(float));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}

}  // namespace detail

}  // namespace stoke
