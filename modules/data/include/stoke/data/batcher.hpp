#pragma once
/// @file
/// The `Batcher` concept: turns a list of samples into one batch on a given device; and
/// `ChunkedBatcher`, a batcher that can also make one batch in chunks on several threads at
/// once, and its `PendingBatch`.

#include <concepts>
#include <cstddef>
#include <type_traits>
#include <utility>
#include <vector>

#include <stoke/core/backend.hpp>

namespace stoke {

/// A batcher builds one batch from samples, for the device the batch is for.
///
/// Requirements:
/// 1. `t.batch(std::vector<I> items, const B::Device& device)` returns the batch;
/// 2. it is callable on a `const` batcher from several threads at once;
/// 3. the returned batch is in memory `device` reads without another device's help: a
///    device batcher's batch is on `device` (it copies there itself, so no batch takes a
///    detour through another device); a host batcher's batch is in host memory, which a CPU
///    device reads as it is and which reaches any other device by `prefetch_to_device`, the
///    one road (with the batcher's pool lent staging memory, the host batch already lies
///    where that device's DMA reads it).
template <class T, class B, class I>
concept Batcher = Backend<B> && std::copy_constructible<T> &&
                  requires(const T& batcher, std::vector<I> items, const device_t<B>& device) {
                    batcher.batch(std::move(items), device);
                    requires !std::is_void_v<decltype(batcher.batch(std::move(items), device))>;
                  };

/// The batch type a batcher makes from items of type `I`.
template <class T, class B, class I>
  requires Batcher<T, B, I>
using batch_output_t = std::remove_cvref_t<decltype(std::declval<const T&>().batch(
    std::declval<std::vector<I>>(), std::declval<const device_t<B>&>()))>;

/// A pending batch: one batch being made in chunks of rows (what
/// `ChunkedBatcher::begin_batch` returns), of type `Out` once finished.
///
/// Requirements:
/// 1. `p.rows()` is the number of rows (one per item), on a `const` pending batch;
/// 2. `p.fill(first, last)` writes rows `[first, last)`;
/// 3. `std::move(p).finish()` returns the finished `Out`;
/// 4. `P` is move-constructible.
template <class P, class Out>
concept PendingBatch = std::move_constructible<P> && requires(P& pending, std::size_t row) {
  { std::as_const(pending).rows() } -> std::convertible_to<std::size_t>;
  pending.fill(row, row);
  { std::move(pending).finish() } -> std::same_as<Out>;
};

/// A chunked batcher: a batcher that can also make one batch in chunks (row ranges), on
/// several threads at once. A multithread loader uses it for the batch its consumer waits for with
/// nothing buffered (the first of an epoch): the idle workers and the consumer fill it together.
///
/// Requirements, beyond `Batcher`:
/// 1. `t.begin_batch(items, device)` checks the items and allocates the batch; it returns a
///    pending batch `p` with `p.rows()` rows (one per item);
/// 2. `p.fill(first, last)` writes rows `[first, last)`; calls on disjoint ranges may run at
///    once on different threads;
/// 3. once every row was filled once, `std::move(p).finish()` returns the batch, equal to
///    what `t.batch(items, device)` returns.
template <class T, class B, class I>
concept ChunkedBatcher = Batcher<T, B, I> && requires(const T& batcher, std::vector<I> items,
                                                      const device_t<B>& device) {
  { batcher.begin_batch(std::move(items), device) } -> PendingBatch<batch_output_t<T, B, I>>;
};

}  // namespace stoke
