#pragma once
/// @file
/// Per-sample randomness for augmentations: while a loader reads sample `i` of epoch `e`
/// (in `Dataset::get`, through any chain of transforms) or builds a batch (in
/// `Batcher::batch`), `stoke::sample_rng()` gives the counter-based stream keyed by
/// (seed, epoch, dataset index). It does not depend on the worker, device or rank that
/// loads the sample, nor on how many there are.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include <stoke/core/error.hpp>
#include <stoke/core/rng.hpp>

namespace stoke {

/// What the loader is doing in this thread.
struct SampleContext {
  std::uint64_t seed = 0;                ///< the loader's seed
  std::size_t epoch = 0;                 ///< the epoch being loaded
  std::span<const std::size_t> indices;  ///< dataset indices of the batch being built
  std::optional<std::size_t> item;       ///< position in `indices` being read by `get`
};

namespace detail {
inline thread_local const SampleContext* current_sample_context = nullptr;

/// Installs `context` as this thread's sample context for its lifetime.
class SampleContextScope {
 public:
  explicit SampleContextScope(const SampleContext& context) noexcept
      : previous_(current_sample_context) {
    current_sample_context = &context;
  }
  SampleContextScope(const SampleContextScope&) = delete;
  SampleContextScope& operator=(const SampleContextScope&) = delete;
  ~SampleContextScope() { current_sample_context = previous_; }

 private:
  const SampleContext* previous_;
};
}  // namespace detail

/// The loader's context in this thread, or nothing outside a loader's `get` / `batch` call.
[[nodiscard]] inline const SampleContext* current_sample_context() noexcept {
  return detail::current_sample_context;
}

/// Makes `item` of the current `get_many` call (or batch) the sample this thread reads, for
/// its lifetime: a `get_many` that reads each item through code calling `sample_rng()` (its
/// own `get`, say) opens one per item, so that code draws item `item`'s stream. Throws
/// `UsageError` outside a loader or past the call's items.
class SampleItemScope {
 public:
  /// Item `item` of the indices this thread's loader call reads.
  explicit SampleItemScope(std::size_t item) : context_(checked(item)), scope_(context_) {}

 private:
  static SampleContext checked(std::size_t item) {
    const SampleContext* context = detail::current_sample_context;
    if (context == nullptr || item >= context->indices.size()) {
      throw UsageError("stoke: SampleItemScope(" + std::to_string(item) +
                       ") outside a loader's get_many or batch, or past its items");
    }
    SampleContext copy = *context;
    copy.item = item;
    return copy;
  }

  SampleContext context_;
  detail::SampleContextScope scope_;
};

/// The random stream of the sample being read by `Dataset::get` in this thread (or the
/// item a `SampleItemScope` names). Throws `stoke::Error` elsewhere: inside `get_many`, use
/// `sample_rng(k)` for item `k` of the call, or a `SampleItemScope`.
[[nodiscard]] inline SampleRng sample_rng() {
  const SampleContext* context = detail::current_sample_context;
  if (context == nullptr) {
    throw Error("stoke: sample_rng() was called outside a loader's Dataset::get");
  }
  if (!context->item) {
    throw Error("stoke: sample_rng() was called in a loader's get_many or batch, which reads " +
                std::to_string(context->indices.size()) +
                " items: use sample_rng(k) for item k, or open a SampleItemScope(k)");
  }
  return SampleRng(context->seed, context->epoch, context->indices[*context->item]);
}

/// The random stream of item `item` of the batch being built by `Batcher::batch` (or read by
/// `Dataset::get`) in this thread. Throws `stoke::Error` outside a loader or past the batch.
[[nodiscard]] inline SampleRng sample_rng(std::size_t item) {
  const SampleContext* context = detail::current_sample_context;
  if (context == nullptr || item >= context->indices.size()) {
    throw Error("stoke: sample_rng(" + std::to_string(item) +
                ") was called outside a loader's batch, or past its end");
  }
  return SampleRng(context->seed, context->epoch, context->indices[item]);
}

}  // namespace stoke
