#pragma once
/// @file
/// `LearnerOptions`: how long to train, where to log and checkpoint, whether to resume.

#include <cstddef>
#include <filesystem>
#include <functional>
#include <iostream>
#include <ostream>

#include <stoke/core/collective.hpp>

namespace stoke {

/// The settings of a `Learner`.
struct LearnerOptions {
  std::size_t epochs = 1;                  ///< epochs to train (resuming counts those done)
  std::filesystem::path checkpoint_dir{};  ///< where checkpoints go (empty: none)
  std::size_t checkpoint_every_steps = 0;  ///< also checkpoint every N steps (0: epoch ends only)
  bool resume = false;                     ///< start from `checkpoint_dir`'s checkpoint if any
  std::filesystem::path metrics_csv{};     ///< per-epoch CSV log (empty: none)
  std::ostream* log = &std::cout;          ///< where progress goes (nullptr: silent)
  bool live_progress = false;              ///< a live line during each epoch (terminals)
  std::size_t stop_after_steps = 0;        ///< stop once this many steps are done (0: never)
  bool write_checkpoints = true;           ///< false on all but one rank of a distributed run
  /// Run a device step as one captured graph where the backend can (`CapturingBackend`, one
  /// device): the same bits, fewer host calls. False runs every step uncaptured.
  bool capture_steps = true;
  /// Makes the collective over the learner's devices (participant k is device k); empty: the
  /// backend's own. A distributed run passes one that also reduces across ranks.
  std::function<AnyCollective(std::size_t participants)> make_collective{};
};

}  // namespace stoke
