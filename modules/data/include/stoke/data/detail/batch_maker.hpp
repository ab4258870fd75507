#pragma once
/// @file
/// How a `WorkerPool` makes the batches of one epoch: `BatchMaker` makes a batch whole or opens
/// it as `BatchInChunks`, made in chunks on several threads at once.

#include <cstddef>
#include <memory>

#include <stoke/core/error.hpp>

namespace stoke::detail {

/// A batch made in chunks, on several threads at once: `make_chunk(k, who)` once for every chunk
/// `k < chunks()` (at least one), concurrently for different chunks, then `finish()` once.
template <class Value>
class BatchInChunks {
 public:
  virtual ~BatchInChunks() = default;
  /// Number of chunks (at least one).
  [[nodiscard]] virtual std::size_t chunks() const = 0;
  /// Makes chunk `chunk`; `worker` says which thread runs it (`WorkerPool::consumer` for the
  /// consumer's own thread).
  virtual void make_chunk(std::size_t chunk, std::size_t worker) = 0;
  /// The value, once every chunk was made.
  virtual Value finish() = 0;
};

/// The batches of one epoch of a `WorkerPool` (one per step of the loader), made on any of its
/// threads.
template <class Value>
class BatchMaker {
 public:
  BatchMaker() = default;
  BatchMaker(const BatchMaker&) = delete;
  BatchMaker& operator=(const BatchMaker&) = delete;
  virtual ~BatchMaker() = default;
  /// Makes the batch of `step` whole; `worker` says which thread runs it.
  virtual Value make(std::size_t step, std::size_t worker) const = 0;
  /// Whether `open` makes batches in chunks (else the pool makes every batch whole).
  [[nodiscard]] virtual bool makes_chunks() const noexcept { return false; }
  /// Where the batch of `step` is in errors: its epoch, the loader's step, its first dataset
  /// index and its device (activity and worker left empty).
  [[nodiscard]] virtual DataErrorContext where(std::size_t step) const {
    return DataErrorContext{.step = step};
  }
  /// Prepares the batch of `step` to be made in chunks; `worker` says which thread runs it.
  virtual std::shared_ptr<BatchInChunks<Value>> open(std::size_t step, std::size_t worker) const {
    (void)step;
    (void)worker;
    return nullptr;
  }
};

}  // namespace stoke::detail
