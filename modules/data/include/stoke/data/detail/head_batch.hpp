#pragma once
/// @file
/// `HeadBatch`: the batch the consumer needs next, while a `WorkerPool`'s threads make it in
/// chunks: which chunk is next, how many are made, and the failure to report.

#include <algorithm>
#include <cstddef>
#include <exception>
#include <memory>
#include <optional>
#include <thread>
#include <utility>

#include <stoke/data/detail/batch_maker.hpp>
#include <stoke/data/detail/step_slots.hpp>

namespace stoke::detail {

/// The head batch (`step` of epoch `generation`) while it is made in chunks: threads claim its
/// chunks in order (`claim`), make them without the pool's lock, and say when one is done
/// (`finish_chunk`); the thread that finishes the last chunk finishes the batch (`result`).
///
/// Its bookkeeping is guarded by the pool's mutex; `make_chunk` and `result` run without it.
template <class Value>
class HeadBatch {
 public:
  /// The batch of `step` of epoch `generation`, opened as `chunks` of `chunk_count` chunks
  /// (`chunks->chunks()`, asked by the caller: asked here, through the object being made, g++ 12
  /// at -O2 warns that "<anonymous> is used uninitialized", an error in users' -Werror builds).
  HeadBatch(std::shared_ptr<BatchInChunks<Value>> chunks, std::size_t chunk_count, std::size_t step,
            std::size_t generation)
      : count_(at_least_one(chunk_count)),
        chunks_(std::move(chunks)),
        step_(step),
        generation_(generation) {}

  /// Which step it is.
  [[nodiscard]] std::size_t step() const noexcept { return step_; }
  /// Which epoch it belongs to.
  [[nodiscard]] std::size_t generation() const noexcept { return generation_; }

  /// Whether a thread may claim a chunk now: one is left, and fewer than `max_makers` threads
  /// make chunks (one more would only take turns with them, and a thread descheduled in the
  /// middle of a chunk would hold the whole step back).
  [[nodiscard]] bool can_claim(std::size_t max_makers) const noexcept {
    return next_chunk_ < count_ && active_ < max_makers;
  }

  /// Claims the next chunk (`can_claim` must hold); its index.
  std::size_t claim() noexcept {
    ++active_;
    return next_chunk_++;
  }

  /// Makes chunk `chunk` on thread `worker`; the exception it threw, if any.
  std::exception_ptr make_chunk(std::size_t chunk, std::size_t worker) {
    try {
      chunks_->make_chunk(chunk, worker);
    } catch (...) {
      return std::current_exception();
    }
    return nullptr;
  }

  /// Notes that `chunk` is done, with the exception it threw (if any); whether it was the last.
  /// The batch's error is the lowest failed chunk's, which names its first failing row in batch
  /// order whichever thread failed first: the same error on every run.
  bool finish_chunk(std::size_t chunk, std::exception_ptr error) {
    --active_;
    if (error && (!error_ || chunk < error_chunk_)) {
      error_ = std::move(error);
      error_chunk_ = chunk;
    }
    return ++done_ == count_;
  }

  /// The batch once every chunk is done: the failure of its lowest failed chunk, else its value.
  StepResult<Value> result() {
    if (error_) return StepResult<Value>{.value = std::nullopt, .error = error_};
    return StepResult<Value>::attempt([&] { return chunks_->finish(); });
  }

 private:
  /// `n`, or 1 for 0.
  static constexpr std::size_t at_least_one(std::size_t n) noexcept { return n == 0 ? 1 : n; }

  std::size_t count_;  ///< number of chunks (at least one)
  std::shared_ptr<BatchInChunks<Value>> chunks_;
  std::size_t step_;
  std::size_t generation_;
  std::size_t next_chunk_ = 0;   ///< the next chunk to claim
  std::size_t done_ = 0;         ///< chunks made
  std::size_t active_ = 0;       ///< threads making a chunk now
  std::exception_ptr error_{};   ///< the failure of the lowest chunk that failed
  std::size_t error_chunk_ = 0;  ///< that chunk's index
};

/// The most threads that make chunks of a head batch at once: one per processor.
[[nodiscard]] inline std::size_t max_chunk_makers() noexcept {
  return std::max(1U, std::thread::hardware_concurrency());
}

}  // namespace stoke::detail
