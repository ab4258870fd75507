#pragma once
/// @file
/// tiny's model: a two-layer perceptron (tanh hidden layer, softmax cross-entropy) on tiny's
/// tensors, with its backward pass written by hand. Its parameters are one flat buffer of
/// floats, which is what stoke's learner all-reduces and updates. It satisfies stoke's
/// `TrainStep` and `ValidationStep` for batches of tiny's `Batch`, so the one stoke name it
/// needs is the step's result, `stoke::StepOutput` (and `stoke::Batch`, which carries the
/// padding count): this header imports stoke for those.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "backend.hpp"
#include "data.hpp"

import stoke;

namespace tiny {

// --8<-- [start:model]
/// `inputs -> hidden (tanh) -> classes (softmax)`. Parameters, in order: W1 (`inputs x hidden`),
/// b1, W2 (`hidden x classes`), b2.
class Mlp {
 public:
  Mlp(std::size_t inputs, std::size_t hidden, std::size_t classes, std::uint64_t seed)
      : inputs_(inputs),
        hidden_(hidden),
        classes_(classes),
        parameters_(inputs * hidden + hidden + hidden * classes + classes) {
    // Uniform(-a, a) with a = sqrt(6 / (fan_in + fan_out)) (Glorot), biases zero.
    const auto init = [&](std::size_t offset, std::size_t fan_in, std::size_t fan_out) {
      const float a = std::sqrt(6.0f / static_cast<float>(fan_in + fan_out));
      for (std::size_t i = 0; i < fan_in * fan_out; ++i) {
        parameters_[offset + i] = a * (2.0f * uniform(mix(seed) + offset + i) - 1.0f);
      }
    };
    init(0, inputs_, hidden_);
    init(w2(), hidden_, classes_);
  }

  [[nodiscard]] std::span<float> parameters() noexcept { return parameters_; }
  [[nodiscard]] std::span<const float> parameters() const noexcept { return parameters_; }

  /// Forward and backward over the batch's real items (the trailing `batch.padding` are
  /// skipped): writes the SUM of their gradients and returns their loss sum and count.
  stoke::StepOutput train_step(const stoke::Batch<Batch>& batch, std::span<float> gradients) {
    std::ranges::fill(gradients, 0.0f);
    return run(batch, gradients.data());
  }

  /// Forward only: the loss sum, the number right and the count over the real items.
  [[nodiscard]] stoke::StepOutput valid_step(const stoke::Batch<Batch>& batch) const {
    return run(batch, nullptr);
  }
  // --8<-- [end:model]

 private:
  [[nodiscard]] std::size_t b1() const { return inputs_ * hidden_; }
  [[nodiscard]] std::size_t w2() const { return b1() + hidden_; }
  [[nodiscard]] std::size_t b2() const { return w2() + hidden_ * classes_; }

  /// One forward pass per item; with `gradients`, its backward pass adds into them.
  stoke::StepOutput run(const stoke::Batch<Batch>& batch, float* gradients) const {
    const Tensor& x = batch.data.inputs;
    const float* p = parameters_.data();
    std::vector<float> hidden(hidden_), logits(classes_), delta(classes_);
    stoke::StepOutput out;
    for (std::size_t row = 0; row < batch.real_size(); ++row) {
      for (std::size_t j = 0; j < hidden_; ++j) {
        float z = p[b1() + j];
        for (std::size_t i = 0; i < inputs_; ++i) z += x(row, i) * p[i * hidden_ + j];
        hidden[j] = std::tanh(z);
      }
      for (std::size_t k = 0; k < classes_; ++k) {
        logits[k] = p[b2() + k];
        for (std::size_t j = 0; j < hidden_; ++j)
          logits[k] += hidden[j] * p[w2() + j * classes_ + k];
      }
      // Softmax cross-entropy, stable: subtract the largest logit.
      const auto label = static_cast<std::size_t>(batch.data.labels[row]);
      const std::size_t predicted =
          static_cast<std::size_t>(std::ranges::max_element(logits) - logits.begin());
      const float top = logits[predicted];
      float total = 0.0f;
      for (std::size_t k = 0; k < classes_; ++k) total += std::exp(logits[k] - top);
      out.loss_sum += std::log(total) - (logits[label] - top);
      out.correct += predicted == label ? 1 : 0;
      ++out.count;
      if (gradients == nullptr) continue;
      // d loss / d logits = softmax - one_hot(label); then back through W2, tanh and W1.
      for (std::size_t k = 0; k < classes_; ++k) {
        delta[k] = std::exp(logits[k] - top) / total - (k == label ? 1.0f : 0.0f);
        gradients[b2() + k] += delta[k];
      }
      for (std::size_t j = 0; j < hidden_; ++j) {
        float back = 0.0f;
        for (std::size_t k = 0; k < classes_; ++k) {
          gradients[w2() + j * classes_ + k] += hidden[j] * delta[k];
          back += p[w2() + j * classes_ + k] * delta[k];
        }
        const float dz = back * (1.0f - hidden[j] * hidden[j]);
        gradients[b1() + j] += dz;
        for (std::size_t i = 0; i < inputs_; ++i) gradients[i * hidden_ + j] += x(row, i) * dz;
      }
    }
    return out;
  }

  std::size_t inputs_, hidden_, classes_;
  std::vector<float> parameters_;
};

}  // namespace tiny
