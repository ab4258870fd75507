// Under mpirun -np N with --devices D per rank: every sample of an epoch is seen exactly once
// across all ranks and devices, every device runs the same number of batches, and training
// follows the same loss curve as one process with the same global batch (2 ranks of 1 device:
// the same bits as 1 process of 2 devices, Adam included).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <stoke/dist/agreement.hpp>
#include <stoke/dist/group_collective.hpp>
#include <stoke/dist/in_process_group.hpp>
#include <stoke/dist/mpi_group.hpp>
#include <stoke/dist/run_rank.hpp>

#include "args.hpp"
#include "mpi_programs.hpp"
#include "toy_data.hpp"

namespace {

using stoke::dist::MpiGroup;
using stoke::testing::require;

/// Two epochs of `remainder` loaders split over ranks, then devices: counts every real item
/// and every device's batches, sums them over the ranks and checks them on every rank.
void check_coverage(MpiGroup& group, std::size_t devices, stoke::Remainder remainder) {
  const std::size_t world = group.size(), rank = group.rank(), size = 1003, batch = 4;
  const stoke::testing::ToyImages data(size);
  auto loader = stoke::DataLoaderBuilder<stoke::cpu::Backend, stoke::cpu::ImageBatcher>({})
                    .batch_size(batch)
                    .shuffle(11)
                    .remainder(remainder)
                    .num_workers(2)
                    .build(data);
  stoke::dist::check_agreement(group, loader);
  auto parts =
      stoke::split(stoke::rank_share(loader, rank, world), stoke::cpu::Backend::devices(devices));
  const std::string where = "(" + std::to_string(world) + " ranks x " + std::to_string(devices) +
                            " devices, " + (remainder == stoke::Remainder::drop ? "drop" : "pad") +
                            ")";
  for (std::size_t epoch = 0; epoch < 2; ++epoch) {
    std::vector<std::uint64_t> counts(size, 0);           // real items per dataset index
    std::vector<std::uint64_t> batches(world * devices);  // batches per (rank, device)
    std::vector<std::uint64_t> padding(1, 0);
    std::vector<std::vector<std::size_t>> seen(devices);
    std::vector<std::size_t> padded(devices, 0);
    std::vector<std::thread> threads;
    for (std::size_t d = 0; d < devices; ++d) {
      threads.emplace_back([&, d] {
        for (const auto& b : parts[d].iter()) {
          seen[d].insert(seen[d].end(), b.indices.begin(), b.indices.end() - b.padding);
          padded[d] += b.padding;
          ++batches[rank * devices + d];
        }
      });
    }
    for (auto& thread : threads) thread.join();
    for (std::size_t d = 0; d < devices; ++d) {
      for (const std::size_t index : seen[d]) ++counts[index];
      padding[0] += padded[d];
    }
    group.all_reduce_sum(std::span(counts));
    group.all_reduce_sum(std::span(batches));
    group.all_reduce_sum(std::span(padding));

    const std::size_t round = world * devices * batch;
    const std::size_t steps =
        remainder == stoke::Remainder::drop ? size / round : (size + round - 1) / round;
    for (std::size_t k = 0; k < batches.size(); ++k) {
      require(batches[k] == steps, "rank " + std::to_string(k / devices) + " device " +
                                       std::to_string(k % devices) + " ran " +
                                       std::to_string(batches[k]) + " batches, expected " +
                                       std::to_string(steps) + " " + where);
    }
    std::size_t once = 0;
    for (std::size_t i = 0; i < size; ++i) {
      require(counts[i] <= 1, "index " + std::to_string(i) + " seen " + std::to_string(counts[i]) +
                                  " times in epoch " + std::to_string(epoch) + " " + where);
      once += counts[i];
    }
    const std::size_t expected = remainder == stoke::Remainder::drop ? steps * round : size;
    require(once == expected, std::to_string(once) + " samples seen once in epoch " +
                                  std::to_string(epoch) + ", expected " + std::to_string(expected) +
                                  " " + where);
    require(padding[0] == steps * round - expected, "padding " + std::to_string(padding[0]) +
                                                        " in epoch " + std::to_string(epoch) + " " +
                                                        where);
  }
}

/// The learner with a collective across ranks: rank r trains on its part, split over its
/// devices. Rank 0 then trains the same model in one process, on one device with the global
/// batch and on in-process ranks, and compares the loss curves and the weights.
void check_equivalence(MpiGroup& group, std::size_t devices) {
  const std::size_t world = group.size(), batch = 4;
  const stoke::testing::ToyImages train(960), valid(200, 9);
  const auto train_loader = stoke::testing::toy_train_loader(train, batch, 5);
  const auto valid_loader = stoke::testing::toy_valid_loader(valid);
  stoke::dist::check_agreement(group, train_loader);

  auto learner = stoke::testing::toy_learner(
      devices, {.epochs = 2, .make_collective = stoke::dist::make_group_collective_factory(group)});
  const auto run = learner.fit(stoke::rank_share(train_loader, group.rank(), world),
                               stoke::rank_share(valid_loader, group.rank(), world));
  const std::size_t steps = 2 * (960 / (world * devices * batch));
  require(run.step_losses.size() == steps, "rank " + std::to_string(group.rank()) + " took " +
                                               std::to_string(run.step_losses.size()) +
                                               " steps, expected " + std::to_string(steps));

  // Every rank has the same loss curve, bit for bit (MPI_Allreduce gives every rank one sum).
  std::vector<float> losses = run.step_losses;
  group.broadcast(std::as_writable_bytes(std::span(losses)), 0);
  require(losses == run.step_losses,
          "rank " + std::to_string(group.rank()) + "'s loss curve differs from rank 0's");
  // Validation is split over the ranks too, and its sums are reduced over all of them.
  require(run.epochs.back().valid_items == 200, "validation counted " +
                                                    std::to_string(run.epochs.back().valid_items) +
                                                    " items over the ranks, expected 200");

  if (group.rank() == 0) {
    auto single = stoke::testing::toy_learner(1, {.epochs = 2});
    const auto reference = single.fit(
        stoke::testing::toy_train_loader(train, world * devices * batch, 5), valid_loader);
    require(stoke::testing::near_all(run.step_losses, reference.step_losses, 1e-4f),
            "the loss curve differs from one device with the global batch");
    require(
        stoke::testing::near_all(learner.model().parameters(), single.model().parameters(), 1e-4f),
        "the weights differ from one device with the global batch");
    const double accuracy_gap =
        run.epochs.back().valid_accuracy - reference.epochs.back().valid_accuracy;
    require(accuracy_gap * accuracy_gap <= 1.0 / (200.0 * 200.0),
            "the validation accuracy differs from one device with the global batch by more "
            "than one sample");

    std::vector<float> in_process_losses;
    stoke::dist::run_in_process_group(world, [&](stoke::dist::InProcessGroup& ranks) {
      auto local = stoke::testing::toy_learner(
          devices,
          {.epochs = 2, .make_collective = stoke::dist::make_group_collective_factory(ranks)});
      const auto result = local.fit(stoke::rank_share(train_loader, ranks.rank(), world),
                                    stoke::rank_share(valid_loader, ranks.rank(), world));
      if (ranks.rank() == 0) in_process_losses = result.step_losses;
    });
    require(stoke::testing::near_all(run.step_losses, in_process_losses, 1e-5f),
            "the loss curve differs from the same ranks as threads of one process");
    std::printf("%zu ranks x %zu devices: %zu steps, loss %.4f -> %.4f, as one process\n", world,
                devices, run.step_losses.size(), run.step_losses.front(), run.step_losses.back());
  }
  group.barrier();  // rank 0's checks are done before any rank leaves
}

/// With two summands (2 ranks of 1 device), a job gives the same bits as one process with 2
/// devices, also with Adam, whose step is sharded over a process's devices but taken whole
/// by a rank of one device. (With more summands the sums are associated otherwise: across
/// ranks MPI adds the ranks' sums of their devices; in a process, device after device. They
/// then agree within rounding, as `check_equivalence` checks.)
void check_same_bits_as_one_process(MpiGroup& group, std::size_t devices) {
  const std::size_t world = group.size(), batch = 4;
  if (world * devices != 2) return;
  const stoke::testing::ToyImages train(960), valid(200, 9);
  const auto train_loader = stoke::testing::toy_train_loader(train, batch, 5);
  const auto valid_loader = stoke::testing::toy_valid_loader(valid);
  using AdamLearner =
      stoke::Learner<stoke::cpu::Backend, stoke::Mlp, stoke::Adam, stoke::ConstantLr>;
  const auto make = [](std::size_t local_devices, stoke::LearnerOptions options) {
    options.log = nullptr;
    // 277 parameters: the two shards of the sharded step are not whole blocks of 16 floats.
    return AdamLearner(stoke::Mlp({stoke::testing::kToyPixels, 13, stoke::testing::kToyClasses}, 3),
                       stoke::Adam{}, stoke::ConstantLr{0.01f},
                       stoke::cpu::Backend::devices(local_devices), std::move(options));
  };
  auto ranks = make(
      devices, {.epochs = 2, .make_collective = stoke::dist::make_group_collective_factory(group)});
  const auto run = ranks.fit(stoke::rank_share(train_loader, group.rank(), world),
                             stoke::rank_share(valid_loader, group.rank(), world));
  if (group.rank() == 0) {
    auto one = make(2, {.epochs = 2});
    const auto reference = one.fit(train_loader, valid_loader);
    require(run.step_losses == reference.step_losses,
            "with Adam, the loss curve is not the same bits as one process with 2 devices");
    require(std::ranges::equal(ranks.model().parameters(), one.model().parameters()),
            "with Adam, the weights are not the same bits as one process with 2 devices");
    std::printf("2 ranks x 1 device with Adam: the same bits as 1 process x 2 devices\n");
  }
  group.barrier();
}

}  // namespace

int stoke::testing::mpi_training(int argc, char** argv) {
  stoke::dist::MpiEnvironment environment(argc, argv);
  MpiGroup group(environment);
  return stoke::dist::run_rank(group, [&] {
    const std::size_t devices = stoke::testing::number_option(argc, argv, "--devices", 1);
    check_coverage(group, devices, stoke::Remainder::drop);
    check_coverage(group, devices, stoke::Remainder::pad);
    check_equivalence(group, devices);
    check_same_bits_as_one_process(group, devices);
    if (group.rank() == 0) std::printf("ok\n");
  });
}
