#pragma once
/// @file
/// What every Python loader of the package shares: `PyEpochOf`, one epoch's batches handed to
/// Python (waiting with the GIL released, Ctrl-C honoured, the bound on held batches kept),
/// `share_of` and `device_name`.

#include <Python.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include <nanobind/nanobind.h>

#include <stoke/core/error.hpp>
#include <stoke/cpu/backend.hpp>
#include <stoke/data/batch_range.hpp>

#include "gil.hpp"
#include "held_batches.hpp"

namespace stoke_python {

namespace nb = nanobind;

/// Share `index` of `count` (the C++ API is renaming `part` to `share`; either works).
template <class L>
L share_of(const L& loader, std::size_t count, std::size_t index) {
  if (count == 0 || index >= count) {
    throw stoke::UsageError("stoke_loader: share " + std::to_string(index) + " of " +
                            std::to_string(count) + ": needs index < count");
  }
  return loader.share(count, index);
}

/// `cpu:N`, the name Python sees of a CPU device.
inline std::string device_name(const stoke::cpu::Device& device) {
  return "cpu:" + std::to_string(device.index);
}

/// One epoch's batches of a loader whose batches are `LoaderBatch` values, handed to Python as
/// `PyB` (made from the batch and the loader's `HeldBatches`): `next` waits for the next batch
/// with the GIL released.
template <class LoaderBatch, class PyB>
class PyEpochOf {
 public:
  using Range = stoke::BatchRange<LoaderBatch>;

  PyEpochOf(Range range, std::shared_ptr<HeldBatches> held)
      : range_(std::make_unique<Range>(std::move(range))), held_(std::move(held)) {}
  PyEpochOf(const PyEpochOf&) = delete;
  PyEpochOf& operator=(const PyEpochOf&) = delete;
  ~PyEpochOf() {
    without_gil([this] { range_.reset(); });
  }

  /// The next batch; `StopIteration` after the last. Calls from several threads take turns.
  /// `HeldBatchesError` when the consumer holds as many batches of the loader as its bound: the
  /// batch taken is kept for the next call, so that no batch is lost (nor made twice).
  PyB next() {
    wait_for_batch();
    std::optional<LoaderBatch> batch;
    bool over = false;
    {
      GilRelease release;
      std::unique_ptr<Range> finished;
      {
        const std::lock_guard lock(mutex_);
        if (kept_) {
          batch = std::move(kept_);
          kept_.reset();
        } else if (range_) {
          if (!started_) {
            started_ = true;
            at_ = range_->begin();
          } else {
            ++at_;
          }
          if (at_ != range_->end()) {
            batch.emplace(std::move(*at_));
          } else {
            finished = std::move(range_);
          }
        }
      }
      finished.reset();  // the epoch is over: let go of its workers, without the GIL
      if (batch && held_->max != 0 && held_->held.load(std::memory_order_acquire) >= held_->max) {
        const std::lock_guard lock(mutex_);
        kept_ = std::move(batch);
        batch.reset();
        over = true;
      }
    }
    if (over) throw_held(*held_);
    if (!batch) throw nb::stop_iteration();
    return {std::move(*batch), held_};
  }

 private:
  /// How long `next` waits for a batch with the GIL released before it runs the signal handlers:
  /// Ctrl-C raises `KeyboardInterrupt` within about this long.
  static constexpr std::chrono::milliseconds signal_check_interval{10};

  /// Waits until the next batch is ready, in slices of `signal_check_interval` with the GIL
  /// released, running the signal handlers between them: a `KeyboardInterrupt` (or whatever a
  /// handler raises) ends the wait and takes no batch, so the epoch can go on or be dropped.
  void wait_for_batch() {
    for (;;) {
      bool ready = true;
      {
        GilRelease release;
        const std::lock_guard lock(mutex_);
        if (!kept_ && range_) {
          ready = range_->wait_until(std::chrono::steady_clock::now() + signal_check_interval);
        }
      }
      if (ready) return;
      if (PyErr_CheckSignals() != 0) throw nb::python_error();
    }
  }

  std::mutex mutex_;  ///< held while the range advances
  std::unique_ptr<Range> range_;
  std::shared_ptr<HeldBatches> held_;
  std::optional<LoaderBatch> kept_;  ///< a batch taken while the consumer held too many
  typename Range::iterator at_;
  bool started_ = false;
};

}  // namespace stoke_python
