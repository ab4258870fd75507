#pragma once
/// @file
/// `BatchChunks`: one batch of a loader filled in row ranges by a `ChunkedBatcher`, on whichever
/// threads take its chunks.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/data/batch.hpp>
#include <stoke/data/detail/batch_maker.hpp>
#include <stoke/data/detail/thread_names.hpp>
#include <stoke/data/detail/worker_activity.hpp>
#include <stoke/data/sample_context.hpp>

namespace stoke::detail {

/// Batch `where.step` of epoch `where.epoch`, allocated by a `ChunkedBatcher` (`pending`) and
/// filled in `chunks` row ranges of nearly equal size. A range that fails is rethrown as a
/// `DataError` naming the dataset index of its first row and the thread that filled it.
template <class Output, class Pending>
class BatchChunks final : public BatchInChunks<Batch<Output>> {
 public:
  /// `where` names the batch (epoch, step, device) in errors; `indices` are its dataset
  /// indices, the last `padding` of them padding; `seed` is the loader's, for the sample
  /// context the batcher sees.
  BatchChunks(Pending pending, std::size_t chunks, DataErrorContext where, std::uint64_t seed,
              std::vector<std::size_t> indices, std::size_t padding)
      : pending_(std::move(pending)),
        chunks_(std::clamp<std::size_t>(chunks, 1, std::max<std::size_t>(1, pending_.rows()))),
        where_(std::move(where)),
        seed_(seed),
        indices_(std::move(indices)),
        padding_(padding) {}

  [[nodiscard]] std::size_t chunks() const override { return chunks_; }

  void make_chunk(std::size_t chunk, std::size_t worker) override {
    const std::size_t rows = pending_.rows();
    const std::size_t first = rows * chunk / chunks_;
    const std::size_t last = rows * (chunk + 1) / chunks_;
    const SampleContext context{seed_, where_.epoch, indices_, std::nullopt};
    const SampleContextScope scope(context);
    note_activity(Activity::batch, first < indices_.size() ? indices_[first] : 0);
    try {
      pending_.fill(first, last);
    } catch (...) {
      DataErrorContext at = where_;
      at.index = first < indices_.size() ? indices_[first] : 0;
      at.activity = "batch";
      at.worker = thread_name(worker);
      throw DataError(std::move(at), current_exception_message());
    }
  }

  Batch<Output> finish() override {
    return Batch<Output>{std::move(pending_).finish(), where_.epoch, where_.step, padding_,
                         std::move(indices_)};
  }

 private:
  Pending pending_;
  std::size_t chunks_;
  DataErrorContext where_;
  std::uint64_t seed_;
  std::vector<std::size_t> indices_;
  std::size_t padding_;
};

}  // namespace stoke::detail
