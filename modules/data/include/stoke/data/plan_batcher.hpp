#pragma once
/// @file
/// The `PlanBatcher` concept: a batcher whose batches are planned per epoch (variable-length
/// batches: padded, packed, bucketed) rather than made of `batch_size` samples at a time; and
/// `LoaderBatcher`, what a loader batches with: a `Batcher` or a `PlanBatcher`.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include <stoke/core/backend.hpp>
#include <stoke/data/batcher.hpp>
#include <stoke/data/dataset.hpp>

namespace stoke {

/// A batcher that plans the batches of every epoch itself: batch `k` of epoch `e` is a pure
/// function of (its seed, `e`, `k`, the lengths of the dataset's samples, its sizes). A loader
/// with one runs through the same plan, split, state and worker machinery as any other, its
/// positions being the epoch plan's batches (one per loader batch; see `EpochPlan`).
///
/// Requirements:
/// 1. `t.epoch_batches(e)` returns the number of batches of epoch `e`'s plan, the same on every
///    call, thread, device and rank;
/// 2. `t.plan_fingerprint()` identifies the plan (its kind, sizes, seed and the lengths): a
///    state saved under another plan is refused on restore;
/// 3. `t.batch_planned(dataset, e, k, padding, device)` makes batch `k` of epoch `e`'s plan from
///    `dataset` for `device`; `padding` says the loader repeats it to even out a split (the
///    batch then says so in its mask); callable on a `const` batcher from several threads;
/// 4. `T` is copy-constructible, and its copies share its plan.
template <class T, class B, class S>
concept PlanBatcher = Backend<B> && Dataset<S> && std::copy_constructible<T> &&
                      requires(const T& batcher, const S& dataset, std::size_t epoch,
                               std::size_t batch, bool padding, const device_t<B>& device) {
                        { batcher.epoch_batches(epoch) } -> std::convertible_to<std::size_t>;
                        { batcher.plan_fingerprint() } -> std::convertible_to<std::uint64_t>;
                        batcher.batch_planned(dataset, epoch, batch, padding, device);
                        requires !std::is_void_v<decltype(batcher.batch_planned(
                            dataset, epoch, batch, padding, device))>;
                      };

/// What a loader over `S` batches with for backend `B`: a `Batcher` of its samples or a
/// `PlanBatcher`.
template <class T, class B, class S>
concept LoaderBatcher = Dataset<S> && (Batcher<T, B, dataset_item_t<S>> || PlanBatcher<T, B, S>);

namespace detail {
template <class T, class B, class S>
struct loader_output;
template <class T, class B, class S>
  requires Batcher<T, B, dataset_item_t<S>>
struct loader_output<T, B, S> {
  using type = batch_output_t<T, B, dataset_item_t<S>>;
};
template <class T, class B, class S>
  requires(!Batcher<T, B, dataset_item_t<S>> && PlanBatcher<T, B, S>)
struct loader_output<T, B, S> {
  using type = std::remove_cvref_t<decltype(std::declval<const T&>().batch_planned(
      std::declval<const S&>(), std::size_t{}, std::size_t{}, bool{},
      std::declval<const device_t<B>&>()))>;
};
}  // namespace detail

/// What a loader over `S` with batcher `T` for backend `B` puts in each batch's `data`.
template <class T, class B, class S>
  requires LoaderBatcher<T, B, S>
using loader_output_t = typename detail::loader_output<T, B, S>::type;

/// Whether a loader over `S` with `T` plans its batches (`PlanBatcher`) rather than batching
/// `batch_size` samples at a time.
template <class T, class B, class S>
inline constexpr bool is_plan_batcher_v = !Batcher<T, B, dataset_item_t<S>> && PlanBatcher<T, B, S>;

}  // namespace stoke
