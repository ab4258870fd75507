#pragma once
/// @file
/// How a `WorkerPool` makes the steps of one epoch: `StepMaker` makes a step whole or opens
/// it as `StepChunks`, made in chunks on several threads at once.

#include <cstddef>
#include <memory>

#include <stoke/core/error.hpp>

namespace stoke::detail {

/// A step made in chunks, on several threads at once: `make_chunk(k, who)` once for every chunk
/// `k < chunks()` (at least one), concurrently for different chunks, then `finish()` once.
template <class Value>
class StepChunks {
 public:
  virtual ~StepChunks() = default;
  /// Number of chunks (at least one).
  [[nodiscard]] virtual std::size_t chunks() const = 0;
  /// Makes chunk `chunk`; `worker` says which thread runs it (`WorkerPool::consumer` for the
  /// consumer's own thread).
  virtual void make_chunk(std::size_t chunk, std::size_t worker) = 0;
  /// The value, once every chunk was made.
  virtual Value finish() = 0;
};

/// The steps of one epoch of a `WorkerPool`, made on any of its threads.
template <class Value>
class StepMaker {
 public:
  StepMaker() = default;
  StepMaker(const StepMaker&) = delete;
  StepMaker& operator=(const StepMaker&) = delete;
  virtual ~StepMaker() = default;
  /// Makes `step` whole; `worker` says which thread runs it.
  virtual Value make(std::size_t step, std::size_t worker) const = 0;
  /// Whether `open` makes steps in chunks (else the pool makes every step whole).
  [[nodiscard]] virtual bool makes_chunks() const noexcept { return false; }
  /// Where `step` is in errors: its epoch, the loader's step, its first dataset index and its
  /// device (stage and worker left empty).
  [[nodiscard]] virtual DataErrorContext where(std::size_t step) const {
    return DataErrorContext{.step = step};
  }
  /// Prepares `step` to be made in chunks; `worker` says which thread runs it.
  virtual std::shared_ptr<StepChunks<Value>> open(std::size_t step, std::size_t worker) const {
    (void)step;
    (void)worker;
    return nullptr;
  }
};

}  // namespace stoke::detail
