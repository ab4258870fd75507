// A framework of its own (tiny/: device, tensor, backend with its own all_reduce, dataset,
// batcher, model) trained through stoke: `import stoke;`, one loader split over two of tiny's
// devices, and stoke's Learner running one replica per device. Prints every epoch's metrics
// and a last line with the accuracy; exits non-zero if the accuracy is below --min-accuracy.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "tiny/backend.hpp"
#include "tiny/data.hpp"
#include "tiny/model.hpp"

// --8<-- [start:import]
import stoke;

// tiny's types satisfy stoke's concepts by their members alone.
static_assert(stoke::Device<tiny::Device>);
static_assert(stoke::Backend<tiny::Backend>);
static_assert(stoke::CollectiveBackend<tiny::Backend>);
static_assert(stoke::Dataset<tiny::Moons>);
static_assert(stoke::Batcher<tiny::Batcher, tiny::Backend, tiny::Sample>);
static_assert(stoke::TrainStep<tiny::Mlp, stoke::Batch<tiny::Batch>>);
static_assert(stoke::ValidationStep<tiny::Mlp, stoke::Batch<tiny::Batch>>);
// --8<-- [end:import]

int main(int argc, char** argv) {
  const double min_accuracy = argc > 1 ? std::strtod(argv[1], nullptr) : 0.0;
  try {
    // --8<-- [start:loader]
    const tiny::Moons train_set(4000, /*seed=*/1), valid_set(1000, /*seed=*/2);
    const tiny::Batcher batcher;
    using Builder = stoke::DataLoaderBuilder<tiny::Backend, tiny::Batcher>;
    // One loader for the whole epoch; the learner splits it into one loader per device.
    auto train =
        Builder(batcher).batch_size(32).shuffle(7).num_workers(1).drop_last().build(train_set);
    auto valid = Builder(batcher).batch_size(100).num_workers(1).pad().build(valid_set);
    // --8<-- [end:loader]

    // --8<-- [start:learner]
    const auto devices = tiny::Backend::devices();
    stoke::Learner<tiny::Backend, tiny::Mlp, stoke::Sgd, stoke::ConstantLr> learner(
        tiny::Mlp(2, 16, 2, /*seed=*/3), stoke::Sgd(0.1f, /*momentum=*/0.9f),
        stoke::ConstantLr{0.1f}, devices, stoke::LearnerOptions{.epochs = 8});
    const stoke::FitResult result = learner.fit(train, valid);
    // --8<-- [end:learner]

    const stoke::EpochMetrics& last = result.epochs.back();
    std::printf(
        "custom_framework: valid accuracy %.4f after %zu steps on %s and %s "
        "(batches made: %zu and %zu)\n",
        last.valid_accuracy, result.global_step, stoke::device_name(devices[0]).c_str(),
        stoke::device_name(devices[1]).c_str(), batcher.made_for(devices[0]),
        batcher.made_for(devices[1]));
    if (last.valid_accuracy < min_accuracy) {
      std::fprintf(stderr, "custom_framework: accuracy %.4f is below %.4f\n", last.valid_accuracy,
                   min_accuracy);
      return 1;
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "custom_framework: %s\n", error.what());
    return 1;
  }
  return 0;
}
