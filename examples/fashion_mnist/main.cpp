// Trains an MLP on the real Fashion-MNIST files on several CPU devices (two by default):
// one loader split per device, one replica per device, gradients all-reduced.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

#include <CLI/CLI.hpp>

#include <stoke/learner.hpp>
#include <stoke/stoke.hpp>

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

  const auto file = [&](const char* name) {
    const auto plain = data / name;
    return std::filesystem::exists(plain) ? plain : data / (std::string(name) + ".gz");
  };
  try {
    // --8<-- [start:data]
    // The IDX files are read (and un-gzipped) once; samples point into that buffer.
    const stoke::IdxClassificationDataset train_set(file("train-images-idx3-ubyte"),
                                                    file("train-labels-idx1-ubyte"));
    const stoke::IdxClassificationDataset test_set(file("t10k-images-idx3-ubyte"),
                                                   file("t10k-labels-idx1-ubyte"));
    // Bytes become floats normalised with the training set's mean and deviation.
    const stoke::cpu::ClassificationBatcher batcher{.mean = 0.2860f, .std = 0.3530f};
    using Builder =
        stoke::DataLoaderBuilder<stoke::cpu::Backend, stoke::cpu::ClassificationBatcher>;
    auto train = Builder(batcher)
                     .batch_size(batch_size)
                     .shuffle(seed)
                     .num_workers(workers)
                     .prefetch(4)
                     .drop_last()
                     .build(train_set);
    auto test = Builder(batcher).batch_size(500).num_workers(workers).pad().build(test_set);
    // --8<-- [end:data]

    // --8<-- [start:learner]
    const std::size_t steps_per_epoch = train_set.size() / (batch_size * devices);
    stoke::Mlp model({28 * 28, 256, 128, 10}, seed);
    stoke::CosineLr schedule{.base = learning_rate,
                             .minimum = learning_rate / 20,
                             .total_steps = epochs * steps_per_epoch,
                             .warmup_steps = steps_per_epoch / 2};
    stoke::LearnerOptions options{.epochs = epochs,
                                  .checkpoint_dir = checkpoint_dir,
                                  .resume = resume,
                                  .metrics_csv = metrics_csv,
                                  .live_progress = stoke::stdout_is_terminal()};
    stoke::Learner<stoke::cpu::Backend, stoke::Mlp, stoke::Adam, stoke::CosineLr> learner(
        std::move(model), stoke::Adam{}, schedule, stoke::cpu::Backend::devices(devices), options);
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
