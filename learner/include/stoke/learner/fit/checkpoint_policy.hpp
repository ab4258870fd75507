#pragma once
/// @file
/// `detail::CheckpointPolicy`: when and where the learner writes checkpoints, whether it
/// resumes from one, and what a checkpoint of a replica holds.

#include <cstddef>
#include <filesystem>
#include <span>
#include <vector>

#include <stoke/learner/checkpoint.hpp>
#include <stoke/learner/options.hpp>

namespace stoke::detail {

/// The checkpoint settings of `LearnerOptions`: one file, `checkpoint_dir/checkpoint.safetensors`,
/// written after every epoch and every `checkpoint_every_steps` steps where `write_checkpoints`
/// (one rank of a distributed run), read back when `resume` is set and the file exists.
class CheckpointPolicy {
 public:
  /// The policy `options` set.
  explicit CheckpointPolicy(const LearnerOptions& options)
      : dir_(options.checkpoint_dir),
        every_steps_(options.checkpoint_every_steps),
        resume_(options.resume),
        writes_(!options.checkpoint_dir.empty() && options.write_checkpoints) {}

  /// The checkpoint file.
  [[nodiscard]] std::filesystem::path file() const { return dir_ / "checkpoint.safetensors"; }

  /// Whether training starts from the checkpoint file: asked to resume, and the file exists.
  [[nodiscard]] bool resumes() const {
    return resume_ && !dir_.empty() && std::filesystem::exists(file());
  }

  /// Makes the checkpoint directory, if there is one.
  void make_directory() const {
    if (!dir_.empty()) std::filesystem::create_directories(dir_);
  }

  /// Whether checkpoints are written (at every epoch's end, at least).
  [[nodiscard]] bool writes() const noexcept { return writes_; }

  /// Whether a checkpoint is written after optimizer step `global_step` (counted from 1).
  [[nodiscard]] bool due_after_step(std::size_t global_step) const noexcept {
    return writes_ && every_steps_ != 0 && global_step % every_steps_ == 0;
  }

  /// Writes the checkpoint of `replica` (device 0's) with the whole optimizer `state`, which
  /// every device gathered with `whole_optimizer_state()`, and `progress`.
  template <class R>
  void write(R& replica, std::span<const float> state, const TrainingProgress& progress) const {
    const auto parameters = replica.parameters();
    save_checkpoint(file(), replica.model(), std::span<const float>(parameters), state, progress);
  }

 private:
  std::filesystem::path dir_;
  std::size_t every_steps_;
  bool resume_;
  bool writes_;
};

}  // namespace stoke::detail
