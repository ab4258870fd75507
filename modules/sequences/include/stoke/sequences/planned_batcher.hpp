#pragma once
/// @file
/// `PlannedBatcher`: the `PlanBatcher` that runs a variable-length plan (packed, first-fit,
/// best-fit, bucketed) inside stoke's own loaders. The C++ API of sequences in a loader:
///
///     stoke::TokenStore store("corpus");                        // or any dataset of tokens
///     stoke::DocumentLengths lengths(store.size(), [store](std::size_t i) {
///       return std::size_t{store.lengths()[i]}; });
///     stoke::ConcatPlanner planner(lengths, {.sequence_length = 2048, .rows_per_batch = 8,
///                                            .seed = 7});
///     stoke::LoaderOptions options;                            // batch_size 1, no shuffle:
///     options.remainder = stoke::Remainder::pad;               // the plan orders and sizes
///     options.num_workers = 2;
///     stoke::MultiThreadLoader<stoke::TokenStore, stoke::PlannedBatcher<stoke::ConcatPlanner>,
///                              stoke::cpu::Backend>
///         loader(store, stoke::PlannedBatcher(planner, /*pad_id=*/0), options);
///     auto devices = stoke::split(loader, 4);                  // equal batch counts
///     for (auto& batch : devices[0].iter()) use(batch.data);   // a `PackedBatch`
///
/// The loader's positions are the batches of each epoch's plan: batch `k` of epoch `e` is a
/// pure function of (seed, `e`, `k`, lengths, sizes), planned lazily per plan window keyed by
/// (seed, epoch, window). Everything a loader does holds as for batches of samples: `split` and
/// `share` take every n-th planned batch (equal counts on every device and rank; with
/// `Remainder::pad` the last round repeats the epoch's first batches, marked as padding:
/// `Batch::padding == 1` and a loss mask of zeros), `slice`, `set_device`, the same bits for
/// any number of workers, fork, interrupt and close. `state()` counts planned batches consumed
/// and carries the plan's fingerprint; `restore` refuses a state of another plan, and resumes
/// exactly, also onto another number of devices or ranks (the remaining batches are split
/// anew). `Batch::indices` holds the planned batch's index in the epoch; the documents are in
/// `PackedBatch::documents`.
///
/// Knowing an epoch's number of batches (for equal shares) is closed form for concatenation (one
/// sum of the lengths, once); for first-fit, best-fit and buckets it takes one walk over the
/// epoch's plan windows the first time the epoch is asked for (see `PlanWindows`).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

#include <stoke/core/buffer_pool.hpp>
#include <stoke/data/dataset.hpp>
#include <stoke/sequences/packed_batch.hpp>
#include <stoke/sequences/piece_tokens.hpp>
#include <stoke/sequences/plan_windows.hpp>
#include <stoke/sequences/sequence_plan.hpp>

namespace stoke {

/// Makes the batches of `P`'s plan for a loader (a `PlanBatcher` over any dataset of token
/// sequences): each a `PackedBatch` on the host, which reaches a device through
/// `prefetch_to_device` (see `UploadSequenceBatch`), its storage from `pool`. Copies share the
/// plan's windows and the pool.
template <WindowPlanner P>
class PlannedBatcher {
 public:
  /// Batches of `planner`'s plan, with `pad_id` in padding slots.
  explicit PlannedBatcher(P planner, std::int32_t pad_id = 0)
      : windows_(std::make_shared<const PlanWindows<P>>(std::move(planner))), pad_id_(pad_id) {}

  /// The number of batches of `epoch`'s plan.
  [[nodiscard]] std::size_t epoch_batches(std::size_t epoch) const {
    return windows_->epoch_batches(epoch);
  }
  /// The plan's fingerprint (its kind, sizes, seed and lengths).
  [[nodiscard]] std::uint64_t plan_fingerprint() const { return windows_->planner().fingerprint(); }
  /// Batch `batch` of `epoch`'s plan: the pieces of documents of each row.
  [[nodiscard]] PlannedBatch planned(std::size_t epoch, std::size_t batch) const {
    return windows_->batch(epoch, batch);
  }
  /// The planner's account of where `consumed` batches of `epoch` leave it (null when it gives
  /// none), for `LoaderState::plan_state`: a mixture's parameters and per-source counts.
  [[nodiscard]] nlohmann::json plan_state(std::size_t epoch, std::size_t consumed) const
    requires ReportingPlanner<P>
  {
    if (!planner().reports_state()) return nullptr;
    return planner().describe_state(windows_->point(epoch, consumed));
  }
  /// Refuses `saved`, an account of `consumed` batches of `epoch`, that the planner would not
  /// give: its parameters first (naming what changed), then its counts.
  void check_plan_state(const nlohmann::json& saved, std::size_t epoch, std::size_t consumed) const
    requires ReportingPlanner<P>
  {
    planner().check_parameters(saved);
    if (planner().reports_state() && consumed <= epoch_batches(epoch)) {
      planner().check_state(saved, windows_->point(epoch, consumed));
    }
  }

  /// The planner.
  [[nodiscard]] const P& planner() const noexcept { return windows_->planner(); }
  /// The token padding slots hold.
  [[nodiscard]] std::int32_t pad_id() const noexcept { return pad_id_; }

  /// The tensors of batch `batch` of `epoch`'s plan, read from `dataset` (on the host, for any
  /// device); a `padding` batch (a repeat that evens out a split) has a loss mask of zeros.
  template <Dataset S, class D>
    requires TokenSequence<dataset_item_t<S>>
  [[nodiscard]] PackedBatch batch_planned(const S& dataset, std::size_t epoch, std::size_t batch,
                                          bool padding, const D& /*device*/) const {
    PackedBatch out = make_packed_batch(windows_->batch(epoch, batch), dataset, pad_id_, pool);
    if (padding) std::fill(out.loss_mask.begin(), out.loss_mask.end(), std::uint8_t{0});
    return out;
  }

  /// Where batch storage comes from, shared with copies of the batcher: a batch's block is
  /// recycled once the batch is dropped, and `prefetch_to_device` lends it the device's staging
  /// memory, so the batch is written where the upload reads it.
  BufferPool pool{};

 private:
  std::shared_ptr<const PlanWindows<P>> windows_;
  std::int32_t pad_id_;
};

}  // namespace stoke
