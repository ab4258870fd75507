// Trains the MLP of examples/fashion_mnist on Fashion-MNIST with several processes, started
// with `mpirun -np N` (or a cluster's `srun`): each rank takes its share of the loaders, splits
// it over its own CPU devices, and the gradients are summed over the devices of every rank.
// Rank 0 logs and writes the checkpoints; any rank can resume from them, also a run with
// another number of ranks.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include <stoke/dist/agreement.hpp>
#include <stoke/dist/group_collective.hpp>
#include <stoke/dist/mpi_group.hpp>
#include <stoke/dist/run_rank.hpp>
#include <stoke/learner.hpp>
#include <stoke/stoke.hpp>

#include "fashion_mnist.hpp"

int main(int argc, char** argv) {
  // --8<-- [start:group]
  // MPI starts here and ends when `environment` goes out of scope; `group` is every rank.
  stoke::dist::MpiEnvironment environment(argc, argv);
  stoke::dist::MpiGroup group(environment);
  // --8<-- [end:group]

  CLI::App app{"stoke: train an MLP on Fashion-MNIST on several processes (mpirun -np N)"};
  fashion_mnist::Flags flags;
  flags.devices = 1;
  fashion_mnist::add_flags(app, flags, "CPU devices per rank, one thread and replica each");
  std::size_t checkpoint_every_steps = 0, stop_after_steps = 0;
  app.add_option("--checkpoint-every-steps", checkpoint_every_steps,
                 "also checkpoint every N steps (0: at epoch ends only)");
  app.add_option("--stop-after-steps", stop_after_steps, "stop after N steps, as a crash would");
  CLI11_PARSE(app, argc, argv);
  const auto& [data, devices, epochs, batch_size, workers, learning_rate, seed, checkpoint_dir,
               metrics_csv, resume] = flags;

  // An exception on one rank ends the job on every rank with its message (MPI_Abort), so no
  // rank waits forever for a rank that failed.
  return stoke::dist::run_rank(group, [&] {
    const bool leader = group.rank() == 0;
    // The same data, loaders and model as the single-process example, on every rank.
    const fashion_mnist::Data data_sets = fashion_mnist::load(data);
    auto train = fashion_mnist::train_loader(data_sets, batch_size, seed, workers);
    auto test = fashion_mnist::test_loader(data_sets, workers);

    // --8<-- [start:agreement]
    // Every rank must split the same loaders: one broadcast and one all_reduce of a few
    // numbers (no data) check seed, epoch, dataset size, batch size, order and remainder.
    stoke::dist::check_agreement(group, train);
    stoke::dist::check_agreement(group, test);
    // --8<-- [end:agreement]

    // --8<-- [start:rank_share]
    // This rank's share: every N-th batch of each epoch, starting with batch `rank`. The
    // learner splits it over this rank's devices by the same rule.
    auto my_train = stoke::rank_share(train, group.rank(), group.size());
    auto my_test = stoke::rank_share(test, group.rank(), group.size());
    const auto my_devices = stoke::cpu::Backend::devices(devices);
    // --8<-- [end:rank_share]
    for (std::size_t r = 0; r < group.size(); ++r) {  // one line per rank, in rank order
      if (r == group.rank()) {
        std::printf(
            "rank %zu of %zu (local rank %zu of %zu): %zu batches of %zu per epoch, "
            "over %zu device(s)\n",
            group.rank(), group.size(), group.local_rank(), group.local_size(),
            my_train.num_batches(), batch_size, my_devices.size());
        std::fflush(stdout);
      }
      group.barrier();
    }

    // --8<-- [start:learner]
    const std::size_t global_batch = batch_size * devices * group.size();
    const std::size_t steps_per_epoch = data_sets.train.size() / global_batch;
    stoke::LearnerOptions options{
        .epochs = epochs,
        .checkpoint_dir = checkpoint_dir,
        .checkpoint_every_steps = checkpoint_every_steps,
        .resume = resume,  // every rank reads the same checkpoint
        .metrics_csv = leader ? metrics_csv : std::filesystem::path(),
        .log = leader ? &std::cout : nullptr,
        .stop_after_steps = stop_after_steps,
        .write_checkpoints = leader,  // one writer
        // Sums gradients over this rank's devices, then over the ranks.
        .make_collective = stoke::dist::make_group_collective_factory(group)};
    fashion_mnist::Learner learner(fashion_mnist::model(seed), stoke::Adam{},
                                   fashion_mnist::schedule(learning_rate, epochs, steps_per_epoch),
                                   my_devices, options);
    const stoke::FitResult result = learner.fit(my_train, my_test);
    // --8<-- [end:learner]

    if (!leader) return 0;
    std::printf(
        "%zu ranks x %zu devices x batch %zu, %zu steps, %.0f samples/s in the last "
        "epoch\n",
        group.size(), devices, batch_size, result.global_step,
        result.epochs.empty() ? 0.0 : result.epochs.back().samples_per_second);
    if (result.stopped_early) {
      std::printf("stopped after step %zu, as asked\n", result.global_step);
    } else if (result.epochs.empty()) {
      std::printf("nothing to train: the checkpoint already has %zu epochs\n", epochs);
    } else {
      std::printf("test accuracy: %.4f\n", result.epochs.back().valid_accuracy);
    }
    return 0;
  });
}
