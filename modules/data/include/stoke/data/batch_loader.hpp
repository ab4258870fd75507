#pragma once
/// @file
/// `BatchLoader`: loads batches in the caller's thread, one at a time as the range advances.

#include <stoke/data/batch_range.hpp>
#include <stoke/data/detail/loader_base.hpp>

namespace stoke {

/// A loader that makes each batch in the consumer's thread when the range advances.
/// No threads, no queue: the simplest loader, and the reference the others must equal.
template <Dataset S, class T, Backend B>
class BatchLoader : public detail::LoaderBase<BatchLoader<S, T, B>, S, T, B> {
  using Base = detail::LoaderBase<BatchLoader<S, T, B>, S, T, B>;

 public:
  using Base::Base;
  using typename Base::batch_type;
  using typename Base::device_type;

  /// The batches of the next epoch, in order; advances the epoch.
  [[nodiscard]] BatchRange<batch_type> iter() { return this->iter_in_caller(); }
};

}  // namespace stoke
