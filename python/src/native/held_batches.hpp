#pragma once
/// @file
/// The bound on batches the consumer holds: every batch handed to Python counts in its
/// loader's `HeldBatches` until the batch and every array over it are gone (from any thread).

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <utility>

#include <stoke/core/error.hpp>

namespace stoke_python {

/// How many batches of one loader the consumer holds, and how many it may (0: no bound).
struct HeldBatches {
  std::atomic<std::size_t> held{0};  ///< batches alive in Python (or arrays over them)
  std::size_t max = 0;               ///< the bound; 0: none
};

/// Thrown when the consumer asks for a batch while it holds `max` of them already.
class HeldBatchesError : public stoke::Error {
 public:
  using stoke::Error::Error;
};

/// A batch handed to the consumer: counted in `count` for as long as it lives.
template <class Batch>
struct HeldBatch {
  /// `batch`, counted in `count`.
  HeldBatch(Batch batch_, std::shared_ptr<HeldBatches> count_)
      : batch(std::move(batch_)), count(std::move(count_)) {
    count->held.fetch_add(1, std::memory_order_relaxed);
  }
  HeldBatch(const HeldBatch&) = delete;
  HeldBatch& operator=(const HeldBatch&) = delete;
  ~HeldBatch() { count->held.fetch_sub(1, std::memory_order_acq_rel); }

  Batch batch;                         ///< the batch
  std::shared_ptr<HeldBatches> count;  ///< its loader's count
};

/// Throws the `HeldBatchesError` that says the consumer holds too many batches of `count`.
[[noreturn]] inline void throw_held(const HeldBatches& count) {
  const std::size_t held = count.held.load(std::memory_order_acquire);
  throw HeldBatchesError(
      "stoke_loader: the consumer holds " + std::to_string(held) +
      " batches of this loader (each batch, or an array over it, that is still alive), its "
      "bound max_held_batches=" +
      std::to_string(count.max) +
      "; a new batch would pass it. Let go of batches you no longer need (del batch; copy what "
      "you keep: np.array(batch['x'])), or raise the bound: Loader(..., max_held_batches=" +
      std::to_string(count.max * 2) + "), or None for no bound");
}

}  // namespace stoke_python
