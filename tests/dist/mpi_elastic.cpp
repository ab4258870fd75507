// Elastic resume across processes. `--phase save` trains part of epoch 0 and stops right
// after a checkpoint (which rank 0 alone writes); `--phase resume`, run with another number of
// ranks or devices, resumes from it and finishes the epoch. Together the two runs must read
// every sample of the epoch exactly once; the reads of the first are kept in `seen.txt`.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <stoke/dist/agreement.hpp>
#include <stoke/dist/group_collective.hpp>
#include <stoke/dist/mpi_group.hpp>
#include <stoke/dist/run_rank.hpp>

#include "args.hpp"
#include "mpi_programs.hpp"
#include "toy_data.hpp"

namespace {

using stoke::testing::require;

constexpr std::size_t kSamples = 640, kBatch = 8, kSaveSteps = 10;

/// Every rank's reads of every training sample, summed over the ranks.
std::vector<std::uint64_t> reads_over_ranks(stoke::dist::MpiGroup& group,
                                            const stoke::testing::ToyImages& train) {
  std::vector<std::uint64_t> counts(kSamples);
  for (std::size_t i = 0; i < kSamples; ++i) counts[i] = (*train.seen)[i].load();
  group.all_reduce_sum(std::span(counts));
  return counts;
}

}  // namespace

int stoke::testing::mpi_elastic(int argc, char** argv) {
  stoke::dist::MpiEnvironment environment(argc, argv);
  stoke::dist::MpiGroup group(environment);
  return stoke::dist::run_rank(group, [&] {
    const std::string phase = stoke::testing::option(argc, argv, "--phase", "save");
    const std::filesystem::path dir = stoke::testing::option(argc, argv, "--dir", "");
    const std::size_t devices = stoke::testing::number_option(argc, argv, "--devices", 1);
    require(!dir.empty() && (phase == "save" || phase == "resume"),
            "usage: --phase save|resume --dir DIR [--devices N]");
    const bool save = phase == "save";
    if (save && group.rank() == 0) {
      std::filesystem::remove_all(dir);
      std::filesystem::create_directories(dir);
    }
    group.barrier();

    stoke::testing::ToyImages train(kSamples);
    train.record_reads();
    const stoke::testing::ToyImages valid(64, 9);
    // No worker threads: a sample is read only when its batch is trained on.
    const auto loader = stoke::testing::toy_train_loader(train, kBatch, 4, 0);
    stoke::dist::check_agreement(group, loader);
    stoke::LearnerOptions options{
        .epochs = 1,
        .checkpoint_dir = dir,
        .resume = !save,
        .write_checkpoints = group.rank() == 0,
        .make_collective = stoke::dist::make_group_collective_factory(group)};
    if (save) {
      options.checkpoint_every_steps = kSaveSteps;
      options.stop_after_steps = kSaveSteps;
    }
    auto learner = stoke::testing::toy_learner(devices, options);
    const auto run = learner.fit(
        stoke::rank_share(loader, group.rank(), group.size()),
        stoke::rank_share(stoke::testing::toy_valid_loader(valid), group.rank(), group.size()));
    const std::vector<std::uint64_t> counts = reads_over_ranks(group, train);
    const std::size_t global_batch = group.size() * devices * kBatch;
    const std::string shape =
        std::to_string(group.size()) + " ranks x " + std::to_string(devices) + " devices";

    if (save) {
      require(run.stopped_early && run.step_losses.size() == kSaveSteps,
              "the first run did not stop after " + std::to_string(kSaveSteps) + " steps");
      if (group.rank() == 0) {
        std::ofstream out(dir / "seen.txt");
        for (const std::uint64_t count : counts) out << count << '\n';
        std::printf("saved after %zu steps on %s: %zu samples read\n", kSaveSteps, shape.c_str(),
                    kSaveSteps * global_batch);
      }
      group.barrier();
      return;
    }

    require(run.resumed, "the second run did not resume from the checkpoint");
    std::ifstream in(dir / "seen.txt");
    std::size_t before = 0, total = 0;
    for (std::size_t i = 0; i < kSamples; ++i) {
      std::uint64_t earlier = 0;
      in >> earlier;
      require(static_cast<bool>(in), "seen.txt is incomplete");
      before += earlier;
      total += earlier + counts[i];
      require(earlier + counts[i] == 1, "sample " + std::to_string(i) + " was read " +
                                            std::to_string(earlier) + " + " +
                                            std::to_string(counts[i]) + " times");
    }
    require(total == kSamples, "the epoch read " + std::to_string(total) + " samples");
    require(run.step_losses.size() * global_batch == kSamples - before,
            "the resumed run took " + std::to_string(run.step_losses.size()) + " steps for " +
                std::to_string(kSamples - before) + " samples");
    if (group.rank() == 0) {
      std::printf("resumed on %s: %zu steps; all %zu samples read exactly once\n", shape.c_str(),
                  run.step_losses.size(), kSamples);
    }
    group.barrier();
  });
}
