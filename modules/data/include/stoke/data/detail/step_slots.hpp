#pragma once
/// @file
/// `StepSlots`: the slots of a `WorkerPool`, where workers leave the steps they made out of
/// order and the consumer takes them in step order; and `StepResult`, what a slot holds.

#include <cstddef>
#include <exception>
#include <optional>
#include <utility>
#include <vector>

namespace stoke::detail {

/// What making one step gave: its value, or the exception that ended it.
template <class Value>
struct StepResult {
  std::optional<Value> value;
  std::exception_ptr error;

  /// The value `make()` returns, or the exception it throws.
  template <class Make>
  static StepResult attempt(const Make& make) {
    StepResult result;
    try {
      result.value.emplace(make());
    } catch (...) {
      result.error = std::current_exception();
    }
    return result;
  }
};

/// The steps of one epoch at a time between the workers that make them and the consumer that
/// takes them: `depth` slots (the queue depth), step `s` in slot `s % depth`. Workers claim
/// steps in increasing order, but at most `depth` steps ahead of the consumer, so at most
/// `depth` finished steps wait; the consumer takes slot after slot, so the order is the same for
/// any number of workers. Starting an epoch or cancelling one bumps a generation counter; results
/// of an older generation are discarded.
///
/// Not thread-safe: the pool's mutex guards it.
template <class Value>
class StepSlots {
 public:
  using Result = StepResult<Value>;

  /// Slots for `depth` (at least one) steps.
  explicit StepSlots(std::size_t depth) : slots_(depth == 0 ? 1 : depth) {}

  /// Starts an epoch of `num_steps` steps, dropping what the slots held; its generation.
  std::size_t start(std::size_t num_steps) {
    num_steps_ = num_steps;
    next_claim_ = 0;
    next_take_ = 0;
    clear();
    return ++generation_;
  }

  /// Abandons the current epoch: it has no more steps, and its results are discarded.
  void cancel() {
    ++generation_;
    num_steps_ = 0;
    clear();
  }

  /// The current epoch's generation.
  [[nodiscard]] std::size_t generation() const noexcept { return generation_; }
  /// The step the consumer takes next (the head).
  [[nodiscard]] std::size_t head_step() const noexcept { return next_take_; }
  /// Whether the consumer has taken every step of the epoch.
  [[nodiscard]] bool all_taken() const noexcept { return next_take_ >= num_steps_; }

  /// Whether a worker may claim a step: one is left, and fewer than `depth` steps are ahead of
  /// the consumer.
  [[nodiscard]] bool has_claimable_step() const noexcept {
    return next_claim_ < num_steps_ && next_claim_ < next_take_ + slots_.size();
  }
  /// Claims the next step (`has_claimable_step()` must hold).
  std::size_t claim() noexcept { return next_claim_++; }

  /// Whether the head step's result has landed.
  [[nodiscard]] bool head_ready() const noexcept { return head().has_value(); }

  /// Takes the head step's result (`head_ready()` must hold); the next step becomes the head.
  Result take_head() {
    auto& slot = slots_[next_take_ % slots_.size()];
    Result result = std::move(*slot);
    slot.reset();
    ++next_take_;
    return result;
  }

  /// Stores the result of `step` unless epoch `generation` was abandoned; whether it did.
  bool deliver(std::size_t step, std::size_t generation, Result result) {
    if (generation != generation_) return false;
    slots_[step % slots_.size()] = std::move(result);
    return true;
  }

 private:
  [[nodiscard]] const std::optional<Result>& head() const noexcept {
    return slots_[next_take_ % slots_.size()];
  }
  void clear() {
    for (auto& slot : slots_) slot.reset();
  }

  std::vector<std::optional<Result>> slots_;
  std::size_t generation_ = 0;
  std::size_t num_steps_ = 0;
  std::size_t next_claim_ = 0;
  std::size_t next_take_ = 0;
};

}  // namespace stoke::detail
