#pragma once
/// @file
/// `StepParts`: a step of a `WorkerPool` made in parts on several threads at once.

#include <cstddef>

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

}  // namespace stoke::detail
