#pragma once
/// @file
/// How a `WorkerPool` makes the steps of one epoch: `StepMaker` makes a step whole or opens
/// it as `StepParts`, made in parts on several threads at once.

#include <cstddef>
#include <memory>

namespace stoke::detail {

/// A step made in parts, on several threads at once: `make_part(k, who)` once for every part
/// `k < parts()` (at least one), concurrently for different parts, then `finish()` once.
template <class Value>
class StepParts {
 public:
  virtual ~StepParts() = default;
  /// Number of parts (at least one).
  [[nodiscard]] virtual std::size_t parts() const = 0;
  /// Makes part `part`; `worker` says which thread runs it (`WorkerPool::consumer` for the
  /// consumer's own thread).
  virtual void make_part(std::size_t part, std::size_t worker) = 0;
  /// The value, once every part was made.
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
  /// Whether `open` makes steps in parts (else the pool makes every step whole).
  [[nodiscard]] virtual bool makes_parts() const noexcept { return false; }
  /// Prepares `step` to be made in parts; `worker` says which thread runs it.
  virtual std::shared_ptr<StepParts<Value>> open(std::size_t step, std::size_t worker) const {
    (void)step;
    (void)worker;
    return nullptr;
  }
};

}  // namespace stoke::detail
