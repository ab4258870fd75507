// Trains an MLP on the real Fashion-MNIST files on several CPU devices (two by default):
// one loader split per device, one replica per device, gradients all-reduced.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

#include <CLI/CLI.hpp>

#include "fashion_mnist.hpp"

int main(int argc, char** argv) {
  CLI::App app{"stoke: train an MLP on Fashion-MNIST on several CPU devices"};
  fashion_mnist::Flags flags;
  fashion_mnist::add_flags(app, flags, "CPU devices, one thread and replica each");
  CLI11_PARSE(app, argc, argv);

  const auto& [data, devices, epochs, batch_size, workers, learning_rate, seed, checkpoint_dir,
               metrics_csv, resume] = flags;
  try {
    const fashion_mnist::Data data_sets = fashion_mnist::load(data);
    auto train = fashion_mnist::train_loader(data_sets, batch_size, seed, workers);
    auto test = fashion_mnist::test_loader(data_sets, workers);

    // --8<-- [start:learner]
    const std::size_t steps_per_epoch = data_sets.train.size() / (batch_size * devices);
    stoke::LearnerOptions options{.epochs = epochs,
                                  .checkpoint_dir = checkpoint_dir,
                                  .resume = resume,
                                  .metrics_csv = metrics_csv,
                                  .live_progress = stoke::stdout_is_terminal()};
    fashion_mnist::Learner learner(fashion_mnist::model(seed), stoke::Adam{},
                                   fashion_mnist::schedule(learning_rate, epochs, steps_per_epoch),
                                   stoke::cpu::Backend::devices(devices), options);
    const stoke::FitResult result = learner.fit(train, test);
    // --8<-- [end:learner]

    std::printf("%zu devices x batch %zu, %zu steps, %.0f samples/s in the last epoch\n", devices,
                batch_size, result.global_step,
                result.epochs.empty() ? 0.0 : result.epochs.back().samples_per_second);
    if (result.epochs.empty()) {
      std::printf("nothing to train: the checkpoint already has %zu epochs\n", epochs);
      return 0;
    }
    std::printf("test accuracy: %.4f\n", result.epochs.back().valid_accuracy);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "fashion_mnist: %s\n", error.what());
    return 1;
  }
  return 0;
}
