#pragma once
/// @file
/// A small learnable image dataset, its loaders and a learner over it, shared by the
/// distributed tests (the MPI programs and the in-process unit suite).

#include <atomic>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <stoke/learner.hpp>
#include <stoke/stoke.hpp>

namespace stoke::testing {

constexpr std::size_t kToyPixels = 16;
constexpr std::size_t kToyClasses = 4;

/// Images whose pixels depend on their class plus noise: learnable, deterministic. Optionally
/// counts the reads of every index (`seen`) and fails once `fail_after_reads` were made (throws,
/// or kills its process when `die_on_failure`).
struct ToyImages {
  std::shared_ptr<const std::vector<std::uint8_t>> pixels;
  std::shared_ptr<const std::vector<std::uint32_t>> labels;
  std::shared_ptr<std::vector<std::atomic<std::uint64_t>>> seen;  ///< reads per index, if set
  std::shared_ptr<std::atomic<std::size_t>> reads = std::make_shared<std::atomic<std::size_t>>(0);
  std::size_t fail_after_reads = SIZE_MAX;  ///< the read after this many throws
  bool die_on_failure = false;  ///< that read kills the process (SIGKILL), as the OOM killer does

  explicit ToyImages(std::size_t count, std::uint64_t seed = 1) {
    auto bytes = std::make_shared<std::vector<std::uint8_t>>(count * kToyPixels);
    auto classes = std::make_shared<std::vector<std::uint32_t>>(count);
    for (std::size_t i = 0; i < count; ++i) {
      SampleRng rng(seed, 0, i);
      const std::uint32_t label = rng() % kToyClasses;
      (*classes)[i] = label;
      for (std::size_t p = 0; p < kToyPixels; ++p) {
        const bool lit = p % kToyClasses == label;
        (*bytes)[i * kToyPixels + p] = static_cast<std::uint8_t>((lit ? 160 : 40) + rng() % 64);
      }
    }
    pixels = bytes;
    labels = classes;
  }
  /// Counts the reads of every index from now on.
  void record_reads() { seen = std::make_shared<std::vector<std::atomic<std::uint64_t>>>(size()); }
  [[nodiscard]] std::size_t size() const { return labels->size(); }
  [[nodiscard]] LabeledImage get(std::size_t i) const {
    if (reads->fetch_add(1) >= fail_after_reads) {
      if (die_on_failure) ::raise(SIGKILL);
      throw std::runtime_error("sample " + std::to_string(i) + " is unreadable (injected failure)");
    }
    if (seen) (*seen)[i].fetch_add(1);
    return {std::span(*pixels).subspan(i * kToyPixels, kToyPixels), (*labels)[i]};
  }
};

/// A shuffled training loader dropping the remainder.
inline auto toy_train_loader(const ToyImages& data, std::size_t batch, std::uint64_t seed,
                             std::size_t workers = 1) {
  return DataLoaderBuilder<cpu::Backend, cpu::ImageBatcher>({})
      .batch_size(batch)
      .shuffle(seed)
      .drop_last()
      .num_workers(workers)
      .build(data);
}

/// A validation loader padding the remainder.
inline auto toy_valid_loader(const ToyImages& data) {
  return DataLoaderBuilder<cpu::Backend, cpu::ImageBatcher>({}).batch_size(16).pad().build(data);
}

using ToyLearner = Learner<cpu::Backend, Mlp, Sgd, ConstantLr>;

/// A small MLP learner on `devices` CPU devices, silent.
inline ToyLearner toy_learner(std::size_t devices, LearnerOptions options = {}) {
  options.log = nullptr;
  return ToyLearner(Mlp({kToyPixels, 12, kToyClasses}, 3), Sgd(0.1f, 0.9f), ConstantLr{0.1f},
                    cpu::Backend::devices(devices), std::move(options));
}

/// Throws `std::runtime_error(what)` unless `condition`: in a rank, `run_rank` turns it into
/// the end of the job with that reason.
inline void require(bool condition, const std::string& what) {
  if (!condition) throw std::runtime_error("check failed: " + what);
}

/// Whether `a` and `b` agree element-wise within `tolerance` (relative to `b`).
inline bool near_all(std::span<const float> a, std::span<const float> b, float tolerance) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const float scale = 1.0f + (b[i] < 0 ? -b[i] : b[i]);
    const float difference = a[i] - b[i];
    if ((difference < 0 ? -difference : difference) > tolerance * scale) return false;
  }
  return true;
}

}  // namespace stoke::testing
