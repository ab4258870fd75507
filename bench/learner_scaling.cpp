// Samples per second of the learner on 1 and 2 CPU devices, the same model and per-device
// batch, measured one after the other in one run; prints the ratio.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

#include <CLI/CLI.hpp>

#include <stoke/learner.hpp>
#include <stoke/stoke.hpp>

namespace {

using Builder = stoke::DataLoaderBuilder<stoke::cpu::Backend, stoke::cpu::ImageBatcher>;

/// Trains one epoch over `samples` of `data` on `devices` devices; returns samples per second.
double train_rate(const stoke::IdxClassificationDataset& data, std::size_t devices,
                  std::size_t batch_size, std::size_t workers) {
  const auto subset = stoke::PartialDataset(data, 0, data.size());
  auto train = Builder({.mean = 0.2860f, .std = 0.3530f})
                   .batch_size(batch_size)
                   .shuffle(1)
                   .num_workers(workers)
                   .queue_depth(4)
                   .drop_last()
                   .build(subset);
  auto valid = Builder({}).batch_size(256).pad().build(stoke::PartialDataset(data, 0, 256));
  stoke::Learner<stoke::cpu::Backend, stoke::Mlp, stoke::Adam, stoke::ConstantLr> learner(
      stoke::Mlp({28 * 28, 256, 128, 10}, 7), stoke::Adam{}, stoke::ConstantLr{1e-3f},
      stoke::cpu::Backend::devices(devices), {.epochs = 1, .log = nullptr});
  const auto result = learner.fit(train, valid);
  return result.epochs.front().samples_per_second;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"stoke: learner throughput on 1 and 2 CPU devices"};
  std::filesystem::path data = "/usr/share/datasets/fashion-mnist";
  std::size_t batch_size = 64, workers = 1, repeats = 3;
  app.add_option("--data", data, "folder with the Fashion-MNIST IDX files")->capture_default_str();
  app.add_option("--batch-size", batch_size, "samples per batch per device")->capture_default_str();
  app.add_option("--workers", workers, "loader threads per device")->capture_default_str();
  app.add_option("--repeats", repeats, "alternating runs of each; the best is kept")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  const stoke::IdxClassificationDataset train_set(data / "train-images-idx3-ubyte.gz",
                                                  data / "train-labels-idx1-ubyte.gz");
  double one = 0.0, two = 0.0;
  for (std::size_t r = 0; r < repeats; ++r) {  // alternate, so drift hits both alike
    one = std::max(one, train_rate(train_set, 1, batch_size, workers));
    two = std::max(two, train_rate(train_set, 2, batch_size, workers));
  }
  std::printf(
      "learner, Fashion-MNIST MLP 784-256-128-10, Adam, batch %zu per device, %zu loader "
      "worker(s) per device, best of %zu epochs each\n",
      batch_size, workers, repeats);
  std::printf("1 device:  %.0f samples/s\n2 devices: %.0f samples/s\n", one, two);
  std::printf("ratio learner_2dev_vs_1dev: %.2f\n", two / one);
  return 0;
}
