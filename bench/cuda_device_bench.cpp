// What stoke's CUDA path costs on a real GPU, measured side by side in one run:
//
//   normalise:  cuda::kernels::normalize_u8 over --megabytes of bytes (u8 in, f32 out) against a
//               device-to-device cudaMemcpyAsync of the float buffer; bandwidth counts the bytes
//               read plus written (5 per pixel for the kernel, 8 per float for the copy).
//   step share: a training loop whose step is a spin kernel of --step-us on a compute stream
//               that waits on the batch's fence (at most two steps queued ahead of the host,
//               as a loop that reads its loss every other step). The loop's time per step is
//               compared with the same spin kernels alone:
//               (a) host batches (StackImages, 256 Fashion-MNIST-sized images), each uploaded
//                   through a stager and waited for, then stepped (no prefetch);
//               (b) the same loader through prefetch_to_device<cuda::Backend>(loader, depth);
//               (c) a device batcher: cuda::ImageBatcher normalises each batch on the GPU.
//
// Prints `ratio <name>: <x>` lines (scripts/gpu-check collects them into bench/GPU_RESULTS.md):
//   normalize_vs_d2d_copy          kernel bytes/s over copy bytes/s, random bytes (target >= 0.85)
//   normalize_flip_chw_vs_d2d_copy the same for the augmenting batcher's kernel
//   loader_share_with_prefetch     (loop time / spin time) - 1 for (b) (target <= 0.005)
//   loader_share_without_prefetch  the same for (a)
//   loader_share_device_batcher    the same for (c)
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>
#include <CLI/CLI.hpp>

#include <stoke/cuda.hpp>
#include <stoke/cuda/kernels.hpp>
#include <stoke/data/normalization_table.hpp>
#include <stoke/data/prefetch.hpp>
#include <stoke/stoke.hpp>

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kPixels = 28 * 28;

/// The median of `values` (not empty).
double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

/// Seconds of `count` runs of `enqueue(stream)`, timed with events on `stream`.
template <class Enqueue>
double gpu_seconds(cudaStream_t stream, int count, Enqueue&& enqueue) {
  cudaEvent_t begin = nullptr, end = nullptr;
  STOKE_CUDA_CHECK(cudaEventCreate(&begin));
  STOKE_CUDA_CHECK(cudaEventCreate(&end));
  STOKE_CUDA_CHECK(cudaEventRecord(begin, stream));
  for (int i = 0; i < count; ++i) enqueue(stream);
  STOKE_CUDA_CHECK(cudaEventRecord(end, stream));
  STOKE_CUDA_CHECK(cudaEventSynchronize(end));
  float ms = 0;
  STOKE_CUDA_CHECK(cudaEventElapsedTime(&ms, begin, end));
  STOKE_CUDA_CHECK(cudaEventDestroy(begin));
  STOKE_CUDA_CHECK(cudaEventDestroy(end));
  return ms / 1e3;
}

/// `n` pseudo-random bytes of a linear congruential generator started at `seed`.
std::vector<std::uint8_t> pseudo_random_bytes(std::size_t n, std::uint64_t seed) {
  std::vector<std::uint8_t> bytes(n);
  std::uint64_t state = seed;
  for (auto& b : bytes) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    b = static_cast<std::uint8_t>(state >> 56);
  }
  return bytes;
}

/// `n` pseudo-random bytes on `device` (table lookups of one repeated byte would all hit one
/// shared-memory bank and flatter the kernels).
stoke::cuda::Buffer random_bytes(const stoke::cuda::Device& device, std::size_t n) {
  const std::vector<std::uint8_t> host = pseudo_random_bytes(n, 0x2545f4914f6cdd1dULL);
  stoke::cuda::Buffer bytes(device, n);
  bytes.written().wait();  // allocated on the copy stream; cudaMemcpy does not wait for it
  STOKE_CUDA_CHECK(cudaMemcpy(bytes.data(), host.data(), n, cudaMemcpyHostToDevice));
  return bytes;
}

/// Bytes per second of `kernel` against a device-to-device copy of its output's size, both
/// timed on `stream` (medians of 7 rounds of 10), printed as `ratio <name>: <x>` with `what`.
template <class Kernel>
void against_d2d_copy(const char* name, const char* what, cudaStream_t stream, std::size_t n,
                      stoke::cuda::Buffer& floats, stoke::cuda::Buffer& copy, Kernel&& kernel) {
  const auto d2d = [&](cudaStream_t s) {
    STOKE_CUDA_CHECK(cudaMemcpyAsync(copy.data(), floats.data(), n * sizeof(float),
                                     cudaMemcpyDeviceToDevice, s));
  };
  std::vector<double> kernel_seconds, copy_seconds;
  (void)gpu_seconds(stream, 3, kernel);  // warm up
  (void)gpu_seconds(stream, 3, d2d);
  for (int r = 0; r < 7; ++r) {
    kernel_seconds.push_back(gpu_seconds(stream, 10, kernel) / 10);
    copy_seconds.push_back(gpu_seconds(stream, 10, d2d) / 10);
  }
  const double kernel_bps = 5.0 * double(n) / median(kernel_seconds);
  const double copy_bps = 8.0 * double(n) / median(copy_seconds);
  std::printf("%s: %zu MiB of random bytes -> floats in %.3f ms: %.0f GB/s (read + written)\n",
              what, n >> 20, median(kernel_seconds) * 1e3, kernel_bps / 1e9);
  std::printf("d2d copy:  %zu MiB of floats in %.3f ms: %.0f GB/s (read + written)\n",
              (n >> 20) * 4, median(copy_seconds) * 1e3, copy_bps / 1e9);
  std::printf("ratio %s: %.3f\n", name, kernel_bps / copy_bps);
}

/// The normalise kernels on `megabytes` MiB of random bytes against a device-to-device copy of
/// the floats they write: `normalize_u8` (cuda::ImageBatcher's) and `normalize_flip_chw`
/// (cuda::AugmentingImageBatcher's, 224 x 224 RGB images, every other one mirrored).
void normalise_bandwidth(const stoke::cuda::Device& device, std::size_t megabytes) {
  const stoke::cuda::DeviceGuard guard(device);
  const stoke::cuda::Stream stream(device);
  constexpr std::uint32_t side = 224, channels = 3;
  const std::size_t image = std::size_t{side} * side * channels;
  const std::size_t n = (megabytes << 20) / image * image;
  stoke::cuda::Buffer bytes = random_bytes(device, n);
  stoke::cuda::Buffer floats(device, n * sizeof(float)), copy(device, n * sizeof(float));
  floats.written().enqueue_wait(stream.handle());  // their allocations, on the copy stream
  copy.written().enqueue_wait(stream.handle());
  STOKE_CUDA_CHECK(cudaMemsetAsync(floats.data(), 0, n * sizeof(float), stream.handle()));
  const auto* in = static_cast<const std::uint8_t*>(bytes.data());
  const auto table =
      stoke::cuda::kernels::ByteTable::of(stoke::normalization_table(0.286F, 0.353F));
  against_d2d_copy(
      "normalize_vs_d2d_copy", "normalise", stream.handle(), n, floats, copy, [&](cudaStream_t s) {
        STOKE_CUDA_CHECK(
            stoke::cuda::kernels::normalize_u8(in, floats.floats().data(), n, table, s));
      });

  const stoke::cuda::kernels::ImageRowsShape shape{static_cast<std::uint32_t>(n / image), side,
                                                   side, channels};
  std::vector<std::uint32_t> host_flips(shape.rows);
  for (std::size_t i = 0; i < host_flips.size(); ++i) host_flips[i] = i % 2;
  stoke::cuda::Buffer flips(device, host_flips.size() * sizeof(std::uint32_t));
  flips.written().wait();
  STOKE_CUDA_CHECK(
      cudaMemcpy(flips.data(), host_flips.data(), flips.size(), cudaMemcpyHostToDevice));
  stoke::cuda::kernels::ChannelTables tables{};
  const auto channel = stoke::normalization_table(0.286F, 0.353F);
  for (std::uint32_t c = 0; c < channels; ++c) {
    for (std::size_t b = 0; b < 256; ++b) tables.values[c][b] = channel[b];
  }
  against_d2d_copy("normalize_flip_chw_vs_d2d_copy", "normalise, flip, CHW", stream.handle(), n,
                   floats, copy, [&](cudaStream_t s) {
                     STOKE_CUDA_CHECK(stoke::cuda::kernels::normalize_flip_chw(
                         in, static_cast<const std::uint32_t*>(flips.data()),
                         floats.floats().data(), shape, tables, s));
                   });
}

/// Images of pseudo-random bytes, viewed without copies.
class Images {
 public:
  explicit Images(std::size_t count)
      : bytes_(std::make_shared<std::vector<std::uint8_t>>(
            pseudo_random_bytes(count * kPixels, 0x9e3779b97f4a7c15ULL))) {}
  [[nodiscard]] std::size_t size() const noexcept { return bytes_->size() / kPixels; }
  [[nodiscard]] stoke::LabeledImage get(std::size_t i) const {
    return {std::span<const std::uint8_t>(*bytes_).subspan(i * kPixels, kPixels),
            static_cast<std::uint32_t>(i % 10)};
  }

 private:
  std::shared_ptr<std::vector<std::uint8_t>> bytes_;
};

/// Host batches: the images' bytes one after the other.
struct StackBytes {
  template <class Device>
  std::vector<std::uint8_t> batch(std::vector<stoke::LabeledImage> items, const Device&) const {
    std::vector<std::uint8_t> out(items.size() * kPixels);
    for (std::size_t i = 0; i < items.size(); ++i)
      std::memcpy(out.data() + i * kPixels, items[i].pixels.data(), kPixels);
    return out;
  }
};

/// A training loop's compute stream: each step waits on its batch, spins, and at most
/// `ahead` steps are queued before the host waits for the oldest.
class StepStream {
 public:
  StepStream(const stoke::cuda::Device& device, std::uint64_t step_ns)
      : device_(device), stream_(device), sink_(device, sizeof(float)), step_ns_(step_ns) {}
  /// Queues one step reading `input` after `ready`.
  void step(const stoke::cuda::Fence& ready, stoke::cuda::Buffer* input) {
    const stoke::cuda::DeviceGuard guard(device_);
    while (queued_.size() >= 2) {
      queued_.front().wait();
      queued_.pop_front();
    }
    ready.enqueue_wait(stream_.handle());
    STOKE_CUDA_CHECK(stoke::cuda::kernels::spin(step_ns_,
                                                input != nullptr ? input->floats().data() : nullptr,
                                                sink_.floats().data(), stream_.handle()));
    if (input != nullptr) input->record_use(stream_.handle());
    queued_.emplace_back(device_, stream_.handle());
  }
  /// Waits for every queued step.
  void finish() {
    for (auto& fence : queued_) fence.wait();
    queued_.clear();
  }

 private:
  stoke::cuda::Device device_;
  stoke::cuda::Stream stream_;
  stoke::cuda::Buffer sink_;
  std::uint64_t step_ns_;
  std::deque<stoke::cuda::Fence> queued_;
};

/// Seconds per step of `loop(step_stream)`, which runs every step of one epoch.
template <class Loop>
double seconds_per_step(const stoke::cuda::Device& device, std::uint64_t step_ns, std::size_t steps,
                        Loop&& loop) {
  StepStream stream(device, step_ns);
  const auto start = Clock::now();
  loop(stream);
  stream.finish();
  return std::chrono::duration<double>(Clock::now() - start).count() / double(steps);
}

void step_share(const stoke::cuda::Device& device, double step_us, std::size_t batches,
                std::size_t workers, std::size_t depth) {
  const std::size_t batch_size = 256;
  const Images images(batches * batch_size);
  const auto step_ns = static_cast<std::uint64_t>(step_us * 1e3);
  // The same loader settings for every variant: only the batcher differs.
  const auto loader_with = [&]<class Batcher>(Batcher batcher) {
    return stoke::DataLoaderBuilder<stoke::cuda::Backend, Batcher>(std::move(batcher))
        .batch_size(batch_size)
        .shuffle(7)
        .num_workers(workers)
        .device(device)
        .drop_last()
        .build(images);
  };
  const auto host_loader = [&] { return loader_with(StackBytes{}); };
  auto device_loader = loader_with(stoke::cuda::ImageBatcher(0.286F, 0.353F, depth + 2));
  std::vector<double> alone, without, with, on_device;
  for (int r = 0; r < 5; ++r) {
    alone.push_back(seconds_per_step(device, step_ns, batches, [&](StepStream& s) {
      for (std::size_t k = 0; k < batches; ++k) s.step(stoke::cuda::Fence{}, nullptr);
    }));
    without.push_back(seconds_per_step(device, step_ns, batches, [&](StepStream& s) {
      auto loader = host_loader();
      const auto stager = stoke::cuda::Backend::make_stager(device, depth);
      for (auto& batch : loader.iter()) {
        auto staged = stager->upload(stoke::host_bytes(batch.data));
        staged.fence.wait();
        s.step(staged.fence, &staged.value);
      }
    }));
    with.push_back(seconds_per_step(device, step_ns, batches, [&](StepStream& s) {
      auto loader = stoke::prefetch_to_device<stoke::cuda::Backend>(host_loader(), depth);
      for (auto& batch : loader.iter()) s.step(batch.data.written(), &batch.data);
    }));
    on_device.push_back(seconds_per_step(device, step_ns, batches, [&](StepStream& s) {
      for (auto& batch : device_loader.iter()) s.step(batch.data.ready, &batch.data.inputs);
    }));
  }
  const double base = median(alone);
  std::printf(
      "step alone: %.1f us; without prefetch %.1f us, with prefetch %.1f us, device "
      "batcher %.1f us (medians of 5 epochs of %zu steps, %zu workers, depth %zu)\n",
      base * 1e6, median(without) * 1e6, median(with) * 1e6, median(on_device) * 1e6, batches,
      workers, depth);
  std::printf("ratio loader_share_without_prefetch: %.4f\n", median(without) / base - 1);
  std::printf("ratio loader_share_with_prefetch: %.4f\n", median(with) / base - 1);
  std::printf("ratio loader_share_device_batcher: %.4f\n", median(on_device) / base - 1);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"stoke: the CUDA path's normalise bandwidth and its share of step time"};
  std::size_t megabytes = 256, batches = 200, workers = 2, depth = 3;
  double step_us = 1000;
  app.add_option("--megabytes", megabytes, "bytes normalised, in MiB")->capture_default_str();
  app.add_option("--step-us", step_us, "length of the synthetic step")->capture_default_str();
  app.add_option("--batches", batches, "steps per epoch")->capture_default_str();
  app.add_option("--workers", workers, "loader threads")->capture_default_str();
  app.add_option("--depth", depth, "prefetch depth")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (const std::string why = stoke::cuda::unavailable_reason(); !why.empty()) {
    std::printf("cuda_device_bench: skipped: %s\n", why.c_str());
    return 0;
  }
  try {
    const auto device = stoke::cuda::Backend::devices().front();
    cudaDeviceProp properties{};
    STOKE_CUDA_CHECK(cudaGetDeviceProperties(&properties, device.ordinal));
    std::printf("device: %s (%d multiprocessors)\n", properties.name,
                properties.multiProcessorCount);
    normalise_bandwidth(device, megabytes);
    step_share(device, step_us, batches, workers, depth);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "cuda_device_bench: %s\n", error.what());
    return 1;
  }
  return 0;
}
