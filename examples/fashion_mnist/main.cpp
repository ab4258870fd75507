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
  std::filesystem::path data = "/usr/share/datasets/fashion-mnist";
  std::size_t devices = 2, epochs = 10, batch_size = 64, workers = 1;
  float learning_rate = 1e-3f;
  std::uint64_t seed = 7;
  std::filesystem::path checkpoint_dir, metrics_csv;
  bool resume = false;
  app.add_option("--data", data, "folder with the four IDX files (gzip or not)")
      ->capture_default_str();
  app.add_option("--devices", devices, "CPU devices, one thread and replica each")
      ->capture_default_str();
  app.add_option("--epochs", epochs, "epochs to train")->capture_default_str();
  app.add_option("--batch-size", batch_size, "samples per batch per device")->capture_default_str();
  app.add_option("--workers", workers, "loader threads per device")->capture_default_str();
  app.add_option("--lr", learning_rate, "peak learning rate (Adam)")->capture_default_str();
  app.add_option("--seed", seed, "seed of the shuffle and the initial weights")
      ->capture_default_str();
  app.add_option("--checkpoint-dir", checkpoint_dir, "write a checkpoint here every epoch");
  app.add_option("--metrics-csv", metrics_csv, "append per-epoch metrics to this CSV file");
  app.add_flag("--resume", resume, "continue from the checkpoint in --checkpoint-dir");
  CLI11_PARSE(app, argc, argv);

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
