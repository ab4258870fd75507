#pragma once
/// @file
/// The `TrainingLoader` concept: what `Learner::fit` needs of the loader it trains on.

#include <concepts>
#include <cstddef>

#include <stoke/data/dataloader.hpp>
#include <stoke/data/epoch_plan.hpp>
#include <stoke/data/state.hpp>

namespace stoke {

/// A training loader: a loader that can be split over devices, numbered by epoch, and
/// stopped and resumed exactly. stoke's loaders model it, and so does a `PrefetchLoader`
/// over one (it forwards to the loader it wraps).
///
/// Requirements:
/// 1. `L` models `SplitSource`: `l.share(count, index)` is share `index` of `count`;
/// 2. `l.layout(epoch)` is the `EpochLayout` of `epoch` for `l` (batches, padding, dropped);
/// 3. `l.set_epoch(epoch)` makes the next `iter()` load `epoch` from its start;
/// 4. `l.state()` is where the consumer stands: taken inside the loop body, it counts the
///    batch being processed (not batches a prefetcher already pulled ahead);
/// 5. `l.restore(state)` makes the next `iter()` load the rest of `state.epoch`, also on
///    another number of shares than `state` was taken with.
template <class L>
concept TrainingLoader = SplitSource<L> && requires(L& loader, const L& const_loader,
                                                    std::size_t epoch, const LoaderState& state) {
  { const_loader.layout(epoch) } -> std::same_as<EpochLayout>;
  loader.set_epoch(epoch);
  { const_loader.state() } -> std::same_as<LoaderState>;
  loader.restore(state);
};

}  // namespace stoke
