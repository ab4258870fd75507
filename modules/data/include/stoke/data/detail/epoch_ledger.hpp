#pragma once
/// @file
/// `detail::EpochLedger`: the epochs that a loader and its copies have begun, so that a copy
/// which would load an epoch again without being told to fails loudly.

#include <cstddef>
#include <mutex>
#include <string>

#include <stoke/core/error.hpp>

namespace stoke::detail {

/// The highest epoch a loader and its copies have begun. A copy starts at its source's
/// epoch, so a loader copied once per epoch (`auto share = shares[d];` inside the epoch loop)
/// would otherwise load epoch 0 every time: the forgotten-`set_epoch` bug of other loaders.
/// Slices and shares are loaders of their own, with ledgers of their own; a loader whose next
/// epoch was chosen (`set_epoch`, `restore`) starts a new ledger. Thread-safe.
class EpochLedger {
 public:
  /// Records that a loader of the family begins `epoch`; an epoch at or below one the family
  /// already began is refused with an `Error` that says why and what to do.
  void begin(std::size_t epoch) {
    const std::lock_guard lock(mutex_);
    if (begun_ && epoch <= highest_) {
      throw Error("stoke: this loader would load epoch " + std::to_string(epoch) +
                  " again: it or a copy of it already began epoch " + std::to_string(highest_) +
                  ". A copy starts at its source's epoch, so a loader copied once per epoch "
                  "replays the same order; keep one loader across epochs, or call "
                  "set_epoch(" +
                  std::to_string(epoch) + ") first to load that epoch again on purpose");
    }
    if (!begun_ || epoch > highest_) highest_ = epoch;
    begun_ = true;
  }

 private:
  std::mutex mutex_;
  bool begun_ = false;
  std::size_t highest_ = 0;
};

}  // namespace stoke::detail
