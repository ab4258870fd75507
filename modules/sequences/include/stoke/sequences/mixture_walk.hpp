#pragma once
/// @file
/// `MixtureWalk`: random access to the picks of a `Mixture`'s epochs, by their position in the
/// epoch, from a few `MixtureState` checkpoints per epoch (what a plan over a mixture reads).

#include <algorithm>
#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/core/fork.hpp>
#include <stoke/sequences/mixture.hpp>

namespace stoke {

/// The picks of every epoch of a mixture, by position; safe to use from several threads at once.
///
/// A mixture's picks are a sequence (each depends on the counts before it), so the first use of
/// an epoch walks all its picks once: time linear in its picks times its sources, which is what
/// knowing the epoch's number of picks and tokens costs (and every plan's batch count needs
/// one of them). The walk keeps the `MixtureState` before every `checkpoint_picks`-th pick (a
/// few numbers per source each: memory of picks / `checkpoint_picks` states), for the two
/// epochs used last. A pick is then found by replaying at most `checkpoint_picks` picks from
/// the checkpoint before it; the blocks replayed last are kept, so reading a plan window
/// forward replays each block about once, and resuming mid-epoch never replays the epoch.
///
/// A source that runs out under `SourceExhaustion::error` ends the walk in a `DataError` (stage
/// `"plan"`, `context().index` the pick, `context().epoch` the epoch) whose nested `InputError`
/// names the source, the epoch and the pick.
class MixtureWalk {
 public:
  /// Picks between two checkpoints of an epoch's walk.
  static constexpr std::size_t checkpoint_picks = 1024;
  /// Blocks of replayed picks kept at once.
  static constexpr std::size_t cached_blocks = 16;
  /// Epochs whose checkpoints are kept at once.
  static constexpr std::size_t cached_epochs = 2;

  /// The picks of `mixture`'s epochs.
  explicit MixtureWalk(Mixture mixture) : mixture_(std::move(mixture)) {}
  MixtureWalk(const MixtureWalk&) = delete;
  MixtureWalk& operator=(const MixtureWalk&) = delete;
  ~MixtureWalk() = default;

  /// The mixture.
  [[nodiscard]] const Mixture& mixture() const noexcept { return mixture_; }

  /// The number of picks of `epoch`.
  [[nodiscard]] std::size_t picks(std::size_t epoch) const { return walked(epoch)->picks; }

  /// Pick `position` of `epoch`; a `UsageError` naming both past the epoch's end.
  [[nodiscard]] MixturePick pick(std::size_t epoch, std::size_t position) const {
    const std::shared_ptr<const Walked> walk = walked(epoch);
    if (position >= walk->picks) {
      throw UsageError("stoke: pick " + std::to_string(position) + " of mixture epoch " +
                       std::to_string(epoch) + " is past its end (" + std::to_string(walk->picks) +
                       " picks)");
    }
    return (*block(epoch, *walk, position / checkpoint_picks))[position % checkpoint_picks];
  }

  /// The mixture's state before pick `position` of `epoch` (its end at the epoch's last).
  [[nodiscard]] MixtureState state_at(std::size_t epoch, std::size_t position) const {
    const std::shared_ptr<const Walked> walk = walked(epoch);
    if (position >= walk->picks) return walk->end;
    MixtureState state = walk->checkpoints[position / checkpoint_picks];
    for (std::size_t p = position / checkpoint_picks * checkpoint_picks; p < position; ++p) {
      static_cast<void>(mixture_.next(state));
    }
    return state;
  }

 private:
  /// One epoch walked: a state every `checkpoint_picks` picks, its number of picks, its end.
  struct Walked {
    std::vector<MixtureState> checkpoints;
    std::size_t picks = 0;
    MixtureState end;
  };
  /// Picks replayed from one checkpoint, by (epoch, block).
  struct CachedBlock {
    std::size_t epoch = 0;
    std::size_t block = 0;
    std::shared_ptr<const std::vector<MixturePick>> picks;
  };

  /// `epoch` walked: kept, or walked now (outside the lock; threads that ask at once may each
  /// walk it, and the first result is kept).
  [[nodiscard]] std::shared_ptr<const Walked> walked(std::size_t epoch) const {
    {
      const std::lock_guard lock(mutex_);
      if (const auto found = epochs_.find(epoch); found != epochs_.end()) return found->second;
    }
    auto walk = std::make_shared<Walked>();
    MixtureState state = mixture_.start(epoch);
    try {
      for (;;) {
        if (walk->picks % checkpoint_picks == 0) walk->checkpoints.push_back(state);
        if (!mixture_.next(state)) break;
        ++walk->picks;
      }
    } catch (const InputError& error) {
      throw DataError(DataErrorContext{.epoch = epoch,
                                       .step = 0,
                                       .index = state.picks,
                                       .worker = "mixture walk",
                                       .device = "host",
                                       .activity = "plan"},
                      error.what());
    }
    walk->end = std::move(state);
    const std::lock_guard lock(mutex_);
    if (const auto found = epochs_.find(epoch); found != epochs_.end()) return found->second;
    detail::keep_nearest_epochs(epochs_, epoch, cached_epochs - 1);  // room for this one
    epochs_.emplace(epoch, walk);
    return walk;
  }

  /// The picks of block `index` of `epoch` (kept, or replayed from its checkpoint and kept).
  [[nodiscard]] std::shared_ptr<const std::vector<MixturePick>> block(std::size_t epoch,
                                                                      const Walked& walk,
                                                                      std::size_t index) const {
    {
      const std::lock_guard lock(mutex_);
      for (const CachedBlock& cached : blocks_) {
        if (cached.epoch == epoch && cached.block == index) return cached.picks;
      }
    }
    auto picks = std::make_shared<std::vector<MixturePick>>();
    MixtureState state = walk.checkpoints[index];
    const std::size_t count = std::min(checkpoint_picks, walk.picks - index * checkpoint_picks);
    picks->reserve(count);
    for (std::size_t k = 0; k < count; ++k) picks->push_back(*mixture_.next(state));
    const std::lock_guard lock(mutex_);
    blocks_.push_back(CachedBlock{epoch, index, picks});
    if (blocks_.size() > cached_blocks) blocks_.pop_front();
    return picks;
  }

  Mixture mixture_;
  mutable detail::ForkGuarded mutex_;  ///< guards both caches; free in a forked child too
  mutable std::map<std::size_t, std::shared_ptr<const Walked>> epochs_;
  mutable std::deque<CachedBlock> blocks_;
};

}  // namespace stoke
