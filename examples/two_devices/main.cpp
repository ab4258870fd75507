// Loads a dataset of 28x28 byte images on several CPU devices (two by default), one
// thread per device, and prints what each device received and the throughput.
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include <stoke/stoke.hpp>

namespace {

/// What one device received over all epochs.
struct DeviceReport {
  std::size_t batches = 0;
  std::size_t items = 0;
  std::size_t padding = 0;
  double checksum = 0.0;  // keeps the work from being optimised away
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"stoke: load a dataset on several CPU devices"};
  std::size_t samples = 60000, batch_size = 256, workers = 2, devices = 2, epochs = 2;
  std::uint64_t seed = 42;
  app.add_option("--samples", samples, "images in the dataset")->capture_default_str();
  app.add_option("--batch-size", batch_size, "images per batch")->capture_default_str();
  app.add_option("--workers", workers, "worker threads per device")->capture_default_str();
  app.add_option("--devices", devices, "CPU devices (threads over host memory)")
      ->capture_default_str();
  app.add_option("--epochs", epochs, "epochs to load")->capture_default_str();
  app.add_option("--seed", seed, "shuffle seed")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  // --8<-- [start:dataset]
  // A dataset is anything with size() and get(i); here, images held in memory.
  using Image = std::array<std::uint8_t, 28 * 28>;
  std::vector<Image> images(samples);
  for (std::size_t i = 0; i < samples; ++i) {
    for (std::size_t p = 0; p < images[i].size(); ++p) images[i][p] = (i + p) % 256;
  }
  const stoke::InMemoryDataset dataset(std::move(images));
  // --8<-- [end:dataset]

  // --8<-- [start:loader]
  // A batcher receives the items and the device the batch is for: here it stacks the
  // images into one float tensor on that device, scaled to [0, 1].
  using Batcher = stoke::cpu::StackBatcher<float>;
  auto loader = stoke::DataLoaderBuilder<stoke::cpu::Backend, Batcher>({.scale = 1.0f / 255.0f})
                    .batch_size(batch_size)
                    .shuffle(seed)
                    .num_workers(workers)
                    .pad()
                    .build(dataset);
  // One loader per device: every device gets the same number of batches, new samples every
  // epoch, and the padding that evens them out is marked in each batch.
  auto per_device = stoke::split(loader, stoke::cpu::Backend::devices(devices));
  // --8<-- [end:loader]

  // --8<-- [start:loop]
  std::vector<DeviceReport> reports(per_device.size());
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (std::size_t d = 0; d < per_device.size(); ++d) {
    threads.emplace_back([&, d] {
      for (std::size_t epoch = 0; epoch < epochs; ++epoch) {
        for (auto& batch : per_device[d].iter()) {  // each iter() is the next epoch
          reports[d].batches += 1;
          reports[d].items += batch.real_size();
          reports[d].padding += batch.padding;
          for (const float value : batch.data.values()) reports[d].checksum += value;
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  // --8<-- [end:loop]
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::printf("stoke: %zu images, batch %zu, %zu devices x %zu workers, %zu epochs, seed %llu\n",
              samples, batch_size, per_device.size(), workers, epochs,
              static_cast<unsigned long long>(seed));
  std::size_t total = 0;
  for (std::size_t d = 0; d < per_device.size(); ++d) {
    const auto& report = reports[d];
    std::printf("%s: %zu batches, %zu samples, %zu padding, checksum %.0f\n",
                stoke::device_name(per_device[d].device()).c_str(), report.batches, report.items,
                report.padding, report.checksum);
    total += report.items;
  }
  const double bytes = static_cast<double>(total) * 28 * 28 * sizeof(float);
  std::printf("throughput: %.0f samples/s, %.1f MB/s of float32 batches (%zu samples in %.3f s)\n",
              static_cast<double>(total) / seconds, bytes / seconds / 1e6, total, seconds);
  return total == samples * epochs ? 0 : 1;
}
