#pragma once
/// @file
/// The opt-in bad-sample policy of the image batchers: a sample that fails to decode either
/// ends the run with an error naming it (the default), or, up to a limit per epoch, is
/// replaced within its batch and reported in a `BadSampleLog` that copies of the batcher
/// share. Replacing instead of dropping keeps every batch, and so every device's batch count,
/// the size the epoch plan gave it.

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <stoke/core/error.hpp>

namespace stoke::images {

/// What a batcher does with a sample that fails to decode.
struct BadSamplePolicy {
  /// How many distinct bad samples an epoch may replace (in the whole process: copies of a
  /// batcher share the count); one more ends the run with an `InputError` that names them all.
  /// 0, the default: the first bad sample ends the run, naming its file and the reason.
  std::size_t max_per_epoch = 0;
};

/// One replaced sample.
struct BadSample {
  std::size_t epoch = 0;        ///< the epoch it was read in
  std::size_t index = 0;        ///< its dataset index
  std::string source;           ///< its file, or `shard.tar:key`
  std::string reason;           ///< the decoder's message
  std::size_t replacement = 0;  ///< the dataset index whose image took its row
};

/// The bad samples replaced so far, per epoch: thread-safe, shared by the copies of a batcher
/// (every worker and device of a process).
class BadSampleLog {
 public:
  /// Records `sample` under `policy`, once per epoch and index (a sample met again in its
  /// epoch, as padding or by a second loader sharing this log, is not counted again). Throws
  /// `InputError` naming every bad sample of the epoch if it is one more than the policy
  /// allows.
  void record(const BadSample& sample, const BadSamplePolicy& policy) {
    const std::scoped_lock lock(mutex_);
    auto& epoch = epochs_[sample.epoch];
    for (const BadSample& known : epoch) {
      if (known.index == sample.index) return;
    }
    epoch.push_back(sample);
    if (epoch.size() > policy.max_per_epoch) {
      throw InputError(describe_limit(sample.epoch, epoch, policy));
    }
  }

  /// Every bad sample recorded, epoch by epoch, in the order they were met.
  [[nodiscard]] std::vector<BadSample> samples() const {
    const std::scoped_lock lock(mutex_);
    std::vector<BadSample> all;
    for (const auto& [epoch, samples] : epochs_)
      all.insert(all.end(), samples.begin(), samples.end());
    return all;
  }

  /// How many distinct samples were replaced in `epoch`.
  [[nodiscard]] std::size_t count(std::size_t epoch) const {
    const std::scoped_lock lock(mutex_);
    const auto found = epochs_.find(epoch);
    return found == epochs_.end() ? 0 : found->second.size();
  }

 private:
  static std::string describe_limit(std::size_t epoch, const std::vector<BadSample>& samples,
                                    const BadSamplePolicy& policy) {
    std::string message = "stoke: epoch " + std::to_string(epoch) + " met " +
                          std::to_string(samples.size()) + " bad samples, more than the " +
                          std::to_string(policy.max_per_epoch) + " the bad-sample policy allows:";
    for (const BadSample& sample : samples) {
      message += "\n  index " + std::to_string(sample.index) + " (" + sample.source +
                 "): " + sample.reason;
    }
    return message;
  }

  mutable std::mutex mutex_;
  std::map<std::size_t, std::vector<BadSample>> epochs_;
};

}  // namespace stoke::images
