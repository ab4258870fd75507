// Does `prefetch_to_device` hide the upload behind the step, and how fast does a stager upload
// compared with copying the same bytes to the same device directly? For every backend built
// (Vulkan, and CUDA where a device exists; a backend that cannot run here prints one line
// saying why it is skipped), measured one after the other in one run:
//
//   step time:  a loader (DataLoaderBuilder; by default 1 worker) of uint8 images 3x64x64 in
//               batches of 256 (3 MiB) from an in-memory dataset, shuffled, consumed by a
//               synthetic step of known duration (a busy-wait of --step-ms, by default 2 ms,
//               on the consuming thread).
//               (a) without prefetch: each host batch is uploaded through a stager and its
//                   fence waited on, then the step runs;
//               (b) with `prefetch_to_device(loader, depth)`: the step runs on batches that
//                   were copied while the previous steps ran.
//               The time per step is measured from the end of the first step to the end of
//               the last (every interval holds one wait for a batch and one step), so the
//               start-up of the workers and of the first upload is not counted.
//               The loader's batcher writes its batches into a buffer pool, which
//               `prefetch_to_device` lends the stager's staging memory (no host copy).
//   throughput: the loader's batches of one epoch, held in host memory, uploaded back to back
//               through a stager of `depth` staging buffers, at most `depth` in flight (device
//               buffers dropped once queued, so they are reused as in a prefetched loader):
//               (road)   from buffers of the stager's lent staging memory, as the batcher of a
//                        prefetched loader writes them: the upload is the device copy alone;
//               (copied) from ordinary host memory: each batch is first copied into staging;
//               against the device copy alone of the same bytes, the same number of batches,
//               already in staging memory, written here without stoke:
//               Vulkan: vkCmdCopyBuffer from mapped host-visible buffers (filled beforehand)
//                       into `depth` device-local buffers in turn, one submission per batch,
//                       at most `depth` in flight, on a VkDevice of its own on the same
//                       physical device;
//               CUDA:   cudaMemcpyAsync from pinned host memory (filled beforehand) into device
//                       memory on one stream, one cudaStreamSynchronize at the end.
//
// For reference it also prints the host loader's time per batch alone (no upload, no step).
// Every figure is the median of --repetitions runs (the range is printed beside it); each
// repetition runs the host loader alone, (a), (b), the two uploads and the reference in turn, so
// drift hits all alike.
// It prints, per backend:
//   ratio prefetch_overlap_<backend>: step time without prefetch / with prefetch
//   ratio prefetch_overhead_<backend>: step time with prefetch / the synthetic step's duration
//                                      (1.00: the loader adds nothing to the step)
//   ratio upload_vs_staging_dma_<backend>: (road) bytes/s / the device copy alone's bytes/s
//   ratio copied_upload_vs_staging_dma_<backend>: (copied) bytes/s / the same
// The targets: upload_vs_staging_dma >= 0.9 on every backend; on CUDA a prefetch overhead
// <= 1.02 at 12 MiB batches (--batch-size 1024) and a 2 ms step.
//
// With --timeline-json PATH it also runs (a) and (b) once more each, after the repetitions, and
// writes when every step of those runs asked for its batch, got it, had it on the device and
// ended, as JSON (book/results/prefetch_timeline.json, drawn by scripts/figures).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <memory>
#include <ostream>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <stoke/data/prefetch.hpp>
#include <stoke/stoke.hpp>

#if defined(STOKE_BENCH_VULKAN)
#include <vulkan/vulkan_core.h>

#include <stoke/vulkan.hpp>
#endif
#if defined(STOKE_BENCH_CUDA)
#include <cuda_runtime_api.h>

#include <stoke/cuda.hpp>
#endif

namespace {

using Clock = std::chrono::steady_clock;

/// Bytes of one image: 3 x 64 x 64 uint8.
constexpr std::size_t image_bytes = 3 * 64 * 64;

/// What the command line sets.
struct Options {
  std::string backend = "all";  ///< `all`, `vulkan` or `cuda`
  double step_ms = 2.0;         ///< duration of the synthetic step
  std::size_t batch_size = 256;
  std::size_t batches = 32;  ///< batches per epoch (the dataset has batches x batch_size images)
  std::size_t depth = 2;     ///< prefetch depth and staging buffers of every stager
  std::size_t workers = 1;   ///< host loader threads
  std::size_t repetitions = 5;
  std::string timeline_json;  ///< where to write the timeline of one run of (a) and (b), or empty
};

/// Images held in host memory; `get(i)` views image `i` (no copy).
class ImageDataset {
 public:
  /// `count` images of pseudo-random bytes.
  explicit ImageDataset(std::size_t count)
      : bytes_(std::make_shared<std::vector<std::uint8_t>>(count * image_bytes)) {
    std::uint64_t state = 0x9e3779b97f4a7c15ULL;
    for (std::size_t i = 0; i + 8 <= bytes_->size(); i += 8) {
      state ^= state << 13;
      state ^= state >> 7;
      state ^= state << 17;
      std::memcpy(bytes_->data() + i, &state, 8);
    }
  }
  /// Images in the dataset.
  [[nodiscard]] std::size_t size() const noexcept { return bytes_->size() / image_bytes; }
  /// The bytes of image `index`.
  [[nodiscard]] std::span<const std::uint8_t> get(std::size_t index) const {
    return std::span<const std::uint8_t>(*bytes_).subspan(index * image_bytes, image_bytes);
  }

 private:
  std::shared_ptr<std::vector<std::uint8_t>> bytes_;
};

/// A host batch: the images one after the other.
using HostBatch = stoke::cpu::Tensor<std::uint8_t>;

/// Stacks images into one contiguous host batch (what a collate function makes) in storage
/// from `pool`; the batch is for a device of any backend and is uploaded to it afterwards.
struct StackImages {
  stoke::cpu::BufferPool pool{16};  ///< lent the stager's staging memory by prefetch_to_device

  /// The images one after the other.
  template <class Device>
  HostBatch batch(std::vector<std::span<const std::uint8_t>> items, const Device&) const {
    auto out = HostBatch::uninitialized({items.size(), image_bytes}, {}, pool);
    for (std::size_t i = 0; i < items.size(); ++i) {
      std::memcpy(out.row(i).data(), items[i].data(), image_bytes);
    }
    return out;
  }
};

/// The synthetic step: busy-waits `duration` on the calling thread.
void step(std::chrono::nanoseconds duration) {
  const auto end = Clock::now() + duration;
  while (Clock::now() < end) {
  }
}

/// Seconds between two time points.
double seconds(Clock::time_point begin, Clock::time_point end) {
  return std::chrono::duration<double>(end - begin).count();
}

/// When each step of one run happened: the consumer asked for its batch, got the batch, had
/// it on the device (its fence waited on; with prefetch, when it got it) and ended the step.
class Timeline {
 public:
  /// The batch is in the consumer's hands.
  void got() { got_ = Clock::now(); }
  /// The batch is on the device.
  void ready() { ready_ = Clock::now(); }
  /// The step ended; the consumer asks for the next batch.
  void done() {
    const auto now = Clock::now();
    steps_.push_back({ms(asked_), ms(got_), ms(ready_), ms(now)});
    asked_ = now;
  }
  /// Every step as [asked, got, ready, done], in milliseconds from the timeline's creation.
  [[nodiscard]] nlohmann::ordered_json json() const { return steps_; }

 private:
  [[nodiscard]] double ms(Clock::time_point at) const {
    const double ms = std::chrono::duration<double, std::milli>(at - start_).count();
    return std::round(ms * 1e3) / 1e3;  // to the microsecond
  }
  Clock::time_point start_ = Clock::now();
  Clock::time_point asked_ = start_, got_, ready_;
  std::vector<std::vector<double>> steps_;
};

/// The median of `values` (not empty).
double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2.0;
}

/// The host loader both step measurements use: the same options, so the same batches.
template <class B>
auto make_loader(const Options& options, const ImageDataset& data,
                 const stoke::device_t<B>& device) {
  return stoke::DataLoaderBuilder<B, StackImages>({})
      .batch_size(options.batch_size)
      .shuffle(7)
      .num_workers(options.workers)
      .queue_depth(4)
      .device(device)
      .drop_last()
      .build(data);
}

/// Seconds per step, from the end of the first step to the end of the last, of `run(on_step)`,
/// which calls `on_step()` after each step.
template <class Run>
double per_step(Run&& run) {
  Clock::time_point start;
  std::size_t steps = 0;
  run([&] {
    if (steps++ == 0) start = Clock::now();
  });
  if (steps < 2) throw std::runtime_error("prefetch_overlap: needs at least 2 batches");
  return seconds(start, Clock::now()) / static_cast<double>(steps - 1);
}

/// For reference: the host loader alone, no upload and no step (seconds per batch).
template <class B>
double host_batches_only(const Options& options, const ImageDataset& data,
                         const stoke::device_t<B>& device) {
  auto loader = make_loader<B>(options, data, device);
  return per_step([&](auto on_step) {
    for (auto& batch : loader.iter()) {
      (void)batch;
      on_step();
    }
  });
}

/// (a): every batch is uploaded and waited for, then stepped; each step's times go to
/// `timeline` if there is one.
template <class B>
double step_without_prefetch(const Options& options, const ImageDataset& data,
                             const stoke::device_t<B>& device, std::chrono::nanoseconds duration,
                             Timeline* timeline = nullptr) {
  auto loader = make_loader<B>(options, data, device);
  const auto stager = B::make_stager(device, options.depth);
  return per_step([&](auto on_step) {
    for (auto& batch : loader.iter()) {
      if (timeline != nullptr) timeline->got();
      auto staged = stager->upload(stoke::host_bytes(batch.data));
      staged.fence.wait();
      if (timeline != nullptr) timeline->ready();
      step(duration);
      if (timeline != nullptr) timeline->done();
      on_step();
    }
  });
}

/// (b): the step runs on batches `prefetch_to_device` copied ahead; each step's times go to
/// `timeline` if there is one.
template <class B>
double step_with_prefetch(const Options& options, const ImageDataset& data,
                          const stoke::device_t<B>& device, std::chrono::nanoseconds duration,
                          Timeline* timeline = nullptr) {
  auto prefetched =
      stoke::prefetch_to_device<B>(make_loader<B>(options, data, device), options.depth);
  return per_step([&](auto on_step) {
    for (auto& batch : prefetched.iter()) {
      (void)batch;
      if (timeline != nullptr) {
        timeline->got();
        timeline->ready();
      }
      step(duration);
      if (timeline != nullptr) timeline->done();
      on_step();
    }
  });
}

/// Seconds to upload every batch of `host` through a stager of `depth` staging buffers, with
/// at most `depth` in flight, until every fence has signalled. With `road`, the batches are first
/// written into buffers of the stager's lent memory (as a prefetched loader's batcher writes them),
/// so every upload is the device copy alone; without, they come from ordinary host memory.
template <class B>
double stager_seconds(const stoke::device_t<B>& device,
                      const std::vector<std::vector<std::uint8_t>>& pageable, std::size_t depth,
                      bool road) {
  const auto stager = B::make_stager(device, depth);
  const stoke::cpu::BufferPool pool(pageable.size());
  std::vector<HostBatch> lent;
  if (road) {
    pool.lend(stager->lent_memory());
    for (const auto& batch : pageable) {
      lent.push_back(HostBatch::uninitialized({batch.size()}, {}, pool));
      std::memcpy(lent.back().values().data(), batch.data(), batch.size());
    }
  }
  const auto bytes = [&](std::size_t k) {
    return road ? stoke::host_bytes(lent[k]) : stoke::host_bytes(pageable[k]);
  };
  for (std::size_t i = 0; i < depth && i < pageable.size(); ++i) {  // allocates staging buffers
    stager->upload(bytes(i)).fence.wait();
  }
  const std::size_t copies_before = stager->host_copies();
  std::vector<typename B::Fence> fences;
  fences.reserve(pageable.size());
  const auto start = Clock::now();
  for (std::size_t k = 0; k < pageable.size(); ++k) {
    // At most `depth` uploads in flight, as prefetch_to_device keeps them: the device buffers
    // of completed uploads (dropped once queued) are reused instead of allocated.
    if (k >= depth) fences[k - depth].wait();
    fences.push_back(stager->upload(bytes(k)).fence);
  }
  for (const auto& fence : fences) fence.wait();
  const double elapsed = seconds(start, Clock::now());
  if (road && stager->host_copies() != copies_before) {
    throw std::runtime_error("prefetch_overlap: an upload from lent memory copied on the host");
  }
  return elapsed;
}

/// What the benchmark needs of a backend: why it cannot run here, its device's name, and the
/// device copy alone it is measured against (`StagingDma(device, host, depth)`, `run()` ->
/// seconds).
template <class B>
struct BenchBackend;

#if defined(STOKE_BENCH_VULKAN)

/// The Vulkan device copy alone: `vkCmdCopyBuffer` from mapped host-visible buffers, filled
/// before any timing, into `depth` device-local buffers in turn; one submission per batch, at
/// most `depth` in flight (as the stager keeps them), on a `VkDevice` of its own.
class VulkanStagingDma {
 public:
  /// Copies of `host` in host-visible buffers and `depth` device-local buffers, on the
  /// physical device that runs `device` (all allocated and filled here, before any timing).
  VulkanStagingDma(const stoke::vulkan::Device& device,
                   const std::vector<std::vector<std::uint8_t>>& host, std::size_t depth)
      : logical_(logical_device_for(device)), device_(logical_.handle()) {
    for (const auto& batch : host) size_ = std::max(size_, batch.size());
    const VkCommandPoolCreateInfo pool{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, nullptr,
                                       VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                       logical_.physical().queue_family};
    STOKE_VK_CHECK(vkCreateCommandPool(device_, &pool, nullptr, &pool_));
    commands_.resize(host.size());
    const VkCommandBufferAllocateInfo allocate{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                               nullptr, pool_, VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                               static_cast<std::uint32_t>(host.size())};
    STOKE_VK_CHECK(vkAllocateCommandBuffers(device_, &allocate, commands_.data()));
    for (const auto& batch : host) {
      staging_.push_back(
          make_buffer(VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT));
      void* mapped = nullptr;
      STOKE_VK_CHECK(vkMapMemory(device_, staging_.back().memory, 0, VK_WHOLE_SIZE, 0, &mapped));
      std::memcpy(mapped, batch.data(), batch.size());
      vkUnmapMemory(device_, staging_.back().memory);
      sizes_.push_back(batch.size());
    }
    for (std::size_t i = 0; i < std::max<std::size_t>(depth, 1); ++i) {
      targets_.push_back(make_buffer(VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT));
      const VkFenceCreateInfo fence{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO, nullptr,
                                    VK_FENCE_CREATE_SIGNALED_BIT};
      fences_.emplace_back();
      STOKE_VK_CHECK(vkCreateFence(device_, &fence, nullptr, &fences_.back()));
    }
    run();  // touches every page once
  }
  VulkanStagingDma(const VulkanStagingDma&) = delete;
  VulkanStagingDma& operator=(const VulkanStagingDma&) = delete;
  ~VulkanStagingDma() {
    vkDeviceWaitIdle(device_);
    for (const Allocation& target : targets_) free(target);
    for (const Allocation& staging : staging_) free(staging);
    for (VkFence fence : fences_) vkDestroyFence(device_, fence, nullptr);
    vkDestroyCommandPool(device_, pool_, nullptr);
  }

  /// Copies every batch; returns the seconds it took.
  double run() {
    const auto start = Clock::now();
    for (std::size_t k = 0; k < staging_.size(); ++k) {
      const std::size_t slot = k % targets_.size();
      STOKE_VK_CHECK(vkWaitForFences(device_, 1, &fences_[slot], VK_TRUE, UINT64_MAX));
      STOKE_VK_CHECK(vkResetFences(device_, 1, &fences_[slot]));
      const VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, nullptr,
                                           VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT, nullptr};
      STOKE_VK_CHECK(vkBeginCommandBuffer(commands_[k], &begin));
      const VkBufferCopy region{0, 0, sizes_[k]};
      vkCmdCopyBuffer(commands_[k], staging_[k].buffer, targets_[slot].buffer, 1, &region);
      STOKE_VK_CHECK(vkEndCommandBuffer(commands_[k]));
      const VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO,
                                nullptr,
                                0,
                                nullptr,
                                nullptr,
                                1,
                                &commands_[k],
                                0,
                                nullptr};
      STOKE_VK_CHECK(vkQueueSubmit(logical_.queue(), 1, &submit, fences_[slot]));
    }
    STOKE_VK_CHECK(vkWaitForFences(device_, static_cast<std::uint32_t>(fences_.size()),
                                   fences_.data(), VK_TRUE, UINT64_MAX));
    const double elapsed = seconds(start, Clock::now());
    for (VkCommandBuffer commands : commands_) STOKE_VK_CHECK(vkResetCommandBuffer(commands, 0));
    return elapsed;
  }

 private:
  struct Allocation {
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceMemory memory = VK_NULL_HANDLE;
  };

  Allocation make_buffer(VkMemoryPropertyFlags flags) {
    Allocation out;
    const VkBufferCreateInfo info{
        VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        nullptr,
        0,
        size_,
        VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
        VK_SHARING_MODE_EXCLUSIVE,
        0,
        nullptr};
    STOKE_VK_CHECK(vkCreateBuffer(device_, &info, nullptr, &out.buffer));
    VkMemoryRequirements needs{};
    vkGetBufferMemoryRequirements(device_, out.buffer, &needs);
    const std::uint32_t type = logical_.memory_type(needs.memoryTypeBits, flags, flags);
    const VkMemoryAllocateInfo allocate{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, nullptr, needs.size,
                                        type};
    STOKE_VK_CHECK(vkAllocateMemory(device_, &allocate, nullptr, &out.memory));
    STOKE_VK_CHECK(vkBindBufferMemory(device_, out.buffer, out.memory, 0));
    return out;
  }

  void free(const Allocation& allocation) {
    vkDestroyBuffer(device_, allocation.buffer, nullptr);
    vkFreeMemory(device_, allocation.memory, nullptr);
  }

  /// A `VkDevice` of its own on the physical device that runs `device` (as the registry
  /// maps stoke devices to physical ones).
  static stoke::vulkan::detail::LogicalDevice logical_device_for(
      const stoke::vulkan::Device& device) {
    auto& registry = stoke::vulkan::detail::Registry::get();
    const auto& physicals = registry.physical_devices();
    return {registry.instance(), physicals[device.index % physicals.size()]};
  }

  stoke::vulkan::detail::LogicalDevice logical_;
  VkDevice device_;  ///< `logical_`'s handle
  std::size_t size_ = 0;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  std::vector<VkCommandBuffer> commands_;  ///< one per batch
  std::vector<Allocation> staging_;        ///< one per batch, filled with its bytes
  std::vector<std::size_t> sizes_;         ///< bytes of each batch
  std::vector<Allocation> targets_;        ///< `depth`, used in turn
  std::vector<VkFence> fences_;            ///< the last copy into each target
};

/// The Vulkan backend in this benchmark.
template <>
struct BenchBackend<stoke::vulkan::Backend> {
  using StagingDma = VulkanStagingDma;  ///< what the stager is measured against
  /// How the reference copies.
  static constexpr const char* staging_dma =
      "vkCmdCopyBuffer from filled host-visible buffers to device-local, a submission per "
      "batch, depth in flight";
  /// Why Vulkan cannot run here, or empty.
  static std::string skip_reason() {
    if (!stoke::vulkan::Backend::devices().empty()) return {};
    const std::string why = stoke::vulkan::unavailable_reason();
    return why.empty() ? "no Vulkan device visible (STOKE_VULKAN_DEVICES=0)" : why;
  }
  /// The physical device behind `device`.
  static std::string describe(const stoke::vulkan::Device& device) {
    const auto& physicals = stoke::vulkan::detail::Registry::get().physical_devices();
    return physicals[device.index % physicals.size()].properties.deviceName;
  }
};

#endif  // STOKE_BENCH_VULKAN

#if defined(STOKE_BENCH_CUDA)

/// The CUDA device copy alone: cudaMemcpyAsync from pinned host memory (filled beforehand)
/// on one stream.
class CudaStagingDma {
 public:
  /// Copies of `host` in pinned memory, and `depth` device buffers to copy them into in turn
  /// (all allocated and filled here, before any timing).
  CudaStagingDma(const stoke::cuda::Device& device,
                 const std::vector<std::vector<std::uint8_t>>& host, std::size_t depth)
      : device_(device) {
    const stoke::cuda::DeviceGuard guard(device_);
    STOKE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    std::size_t largest = 0;
    for (const auto& batch : host) {
      void* pinned = nullptr;
      STOKE_CUDA_CHECK(cudaMallocHost(&pinned, batch.size()));
      std::memcpy(pinned, batch.data(), batch.size());
      pinned_.emplace_back(pinned, batch.size());
      largest = std::max(largest, batch.size());
    }
    for (std::size_t i = 0; i < std::max<std::size_t>(depth, 1); ++i) {
      void* target = nullptr;
      STOKE_CUDA_CHECK(cudaMalloc(&target, largest));
      targets_.push_back(target);
    }
    run();  // warms the copy engine and the mappings
  }
  CudaStagingDma(const CudaStagingDma&) = delete;
  CudaStagingDma& operator=(const CudaStagingDma&) = delete;
  ~CudaStagingDma() {
    const stoke::cuda::DeviceGuard guard(device_);
    STOKE_CUDA_LOG(cudaStreamSynchronize(stream_));
    for (void* target : targets_) STOKE_CUDA_LOG(cudaFree(target));
    for (const auto& [pinned, size] : pinned_) STOKE_CUDA_LOG(cudaFreeHost(pinned));
    STOKE_CUDA_LOG(cudaStreamDestroy(stream_));
  }

  /// Copies every batch; returns the seconds it took.
  double run() {
    const stoke::cuda::DeviceGuard guard(device_);
    const auto start = Clock::now();
    for (std::size_t k = 0; k < pinned_.size(); ++k) {
      STOKE_CUDA_CHECK(cudaMemcpyAsync(targets_[k % targets_.size()], pinned_[k].first,
                                       pinned_[k].second, cudaMemcpyHostToDevice, stream_));
    }
    STOKE_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return seconds(start, Clock::now());
  }

 private:
  stoke::cuda::Device device_;
  cudaStream_t stream_ = nullptr;
  std::vector<std::pair<void*, std::size_t>> pinned_;
  std::vector<void*> targets_;
};

/// The CUDA backend in this benchmark.
template <>
struct BenchBackend<stoke::cuda::Backend> {
  using StagingDma = CudaStagingDma;  ///< what the stager is measured against
  /// How the reference copies.
  static constexpr const char* staging_dma =
      "cudaMemcpyAsync from pinned host memory on one stream, one synchronize at the end";
  /// Why CUDA cannot run here, or empty.
  static std::string skip_reason() { return stoke::cuda::unavailable_reason(); }
  /// The GPU's name.
  static std::string describe(const stoke::cuda::Device& device) {
    cudaDeviceProp properties{};
    STOKE_CUDA_CHECK(cudaGetDeviceProperties(&properties, device.ordinal));
    return properties.name;
  }
};

#endif  // STOKE_BENCH_CUDA

/// A median and the range it came from, in milliseconds.
std::string ms(const std::vector<double>& secs) {
  const auto [low, high] = std::minmax_element(secs.begin(), secs.end());
  char text[96];
  std::snprintf(text, sizeof text, "%.3f ms (%.3f .. %.3f)", median(secs) * 1e3, *low * 1e3,
                *high * 1e3);
  return text;
}

/// Bytes per second as GB/s, with the range (the slowest run gives the low end).
std::string rate(double bytes, const std::vector<double>& secs) {
  const auto [low, high] = std::minmax_element(secs.begin(), secs.end());
  char text[96];
  std::snprintf(text, sizeof text, "%.2f GB/s (%.2f .. %.2f)", bytes / median(secs) / 1e9,
                bytes / *high / 1e9, bytes / *low / 1e9);
  return text;
}

/// The load average over 1, 5 and 15 minutes as /proc/loadavg says, or "unknown".
std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  if (!(in >> one >> five >> fifteen)) return "unknown";
  return one + " " + five + " " + fifteen;
}

/// Writes the timelines of every backend as JSON, one step per line.
void write_timelines(std::ostream& out, const nlohmann::ordered_json& timelines) {
  out << "{\"program\": \"bench/prefetch_overlap --timeline-json\",\n \"load_average_at_end\": "
      << nlohmann::json(load_average()).dump() << ",\n \"backends\": [";
  for (std::size_t b = 0; b < timelines.size(); ++b) {
    out << (b == 0 ? "\n  {" : ",\n  {");
    bool first = true;
    for (const auto& [key, value] : timelines[b].items()) {
      out << (first ? "\n   " : ",\n   ") << nlohmann::json(key).dump() << ": ";
      first = false;
      if (!value.is_array()) {
        out << value.dump();
        continue;
      }
      out << '[';
      for (std::size_t i = 0; i < value.size(); ++i) {
        out << (i == 0 ? "\n    " : ",\n    ") << value[i].dump();
      }
      out << "\n   ]";
    }
    out << "\n  }";
  }
  out << "\n ]\n}\n";
}

/// Measures backend `B` on its first device and prints its figures and ratios; with a
/// timeline wanted, adds the backend's timelines to `timelines`.
template <class B>
void run_backend(const Options& options, const ImageDataset& data,
                 nlohmann::ordered_json& timelines) {
  using Bench = BenchBackend<B>;
  const std::string name(B::name());
  if (const std::string why = Bench::skip_reason(); !why.empty()) {
    std::printf("prefetch_overlap: %s skipped: %s\n", name.c_str(), why.c_str());
    return;
  }
  const auto device = B::devices().front();
  const auto duration = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double, std::milli>(options.step_ms));

  std::vector<std::vector<std::uint8_t>> host;  // one epoch of host batches: the upload's bytes
  {
    auto loader = make_loader<B>(options, data, device);
    for (auto& batch : loader.iter()) {
      const auto values = batch.data.values();
      host.emplace_back(values.begin(), values.end());
    }
  }
  double bytes = 0;
  for (const auto& batch : host) bytes += static_cast<double>(batch.size());
  typename Bench::StagingDma dma(device, host, options.depth);

  (void)step_without_prefetch<B>(options, data, device, duration);  // warm-up, not counted
  (void)step_with_prefetch<B>(options, data, device, duration);
  std::vector<double> host_only, without, with, road, copied, reference;
  for (std::size_t r = 0; r < options.repetitions; ++r) {
    host_only.push_back(host_batches_only<B>(options, data, device));
    without.push_back(step_without_prefetch<B>(options, data, device, duration));
    with.push_back(step_with_prefetch<B>(options, data, device, duration));
    road.push_back(stager_seconds<B>(device, host, options.depth, true));
    copied.push_back(stager_seconds<B>(device, host, options.depth, false));
    reference.push_back(dma.run());
  }

  const double batch_mib = static_cast<double>(host.front().size()) / (1 << 20);
  std::printf("=== %s: %s (%s)\n", name.c_str(), stoke::device_name(device).c_str(),
              Bench::describe(device).c_str());
  std::printf(
      "batches of %zu x 3x64x64 uint8 (%.2f MiB), %zu per epoch, %zu loader worker(s), prefetch "
      "depth %zu, synthetic step %.3f ms (busy-wait), median of %zu (range)\n",
      options.batch_size, batch_mib, host.size(), options.workers, options.depth, options.step_ms,
      options.repetitions);
  std::printf("host batches alone (no upload, no step):    %s per batch\n", ms(host_only).c_str());
  std::printf("step without prefetch (upload, wait, step): %s\n", ms(without).c_str());
  std::printf("step with prefetch_to_device:               %s\n", ms(with).c_str());
  std::printf("upload from lent staging (the road): %s, %.3f ms per batch (%.2f of the step)\n",
              rate(bytes, road).c_str(), median(road) / static_cast<double>(host.size()) * 1e3,
              median(road) / static_cast<double>(host.size()) / (options.step_ms * 1e-3));
  std::printf("upload copied from host memory:     %s\n", rate(bytes, copied).c_str());
  std::printf("device copy alone, from staging:    %s (%s)\n", rate(bytes, reference).c_str(),
              Bench::staging_dma);
  std::printf("ratio prefetch_overlap_%s: %.3f\n", name.c_str(), median(without) / median(with));
  std::printf("ratio prefetch_overhead_%s: %.3f\n", name.c_str(),
              median(with) / (options.step_ms * 1e-3));
  std::printf("ratio upload_vs_staging_dma_%s: %.3f\n", name.c_str(),
              median(reference) / median(road));
  std::printf("ratio copied_upload_vs_staging_dma_%s: %.3f\n", name.c_str(),
              median(reference) / median(copied));

  if (!options.timeline_json.empty()) {
    Timeline without_timeline;  // each starts right before its run
    (void)step_without_prefetch<B>(options, data, device, duration, &without_timeline);
    Timeline with_timeline;
    (void)step_with_prefetch<B>(options, data, device, duration, &with_timeline);
    timelines.push_back(
        {{"backend", name},
         {"device", stoke::device_name(device) + " (" + Bench::describe(device) + ")"},
         {"batch_size", options.batch_size},
         {"batch_mib", batch_mib},
         {"batches", host.size()},
         {"workers", options.workers},
         {"depth", options.depth},
         {"step_ms", options.step_ms},
         {"median_step_ms_without_prefetch", median(without) * 1e3},
         {"median_step_ms_with_prefetch", median(with) * 1e3},
         {"steps_without_prefetch", without_timeline.json()},
         {"steps_with_prefetch", with_timeline.json()}});
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "stoke: step time with and without prefetch_to_device, and upload throughput "
      "against the device copy alone, on the Vulkan and CUDA backends"};
  Options options;
  app.add_option("--backend", options.backend, "which backends to run")
      ->check(CLI::IsMember({"all", "vulkan", "cuda"}))
      ->capture_default_str();
  app.add_option("--step-ms", options.step_ms, "duration of the synthetic step (busy-wait)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--batch-size", options.batch_size, "images per batch")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--batches", options.batches, "batches per epoch (at least 2)")
      ->check(CLI::Range(std::size_t{2}, std::size_t{1} << 20))
      ->capture_default_str();
  app.add_option("--depth", options.depth, "prefetch depth, staging buffers of every stager")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--workers", options.workers, "host loader threads")->capture_default_str();
  app.add_option("--repetitions", options.repetitions, "runs of each measurement; medians")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--timeline-json", options.timeline_json,
                 "also write the step times of one run with and one without prefetch as JSON");
  CLI11_PARSE(app, argc, argv);

  try {
#if defined(STOKE_BENCH_VULKAN)
    stoke::vulkan::configure_instance({.validation = false});  // timings without the layer
#endif
    const ImageDataset data(options.batches * options.batch_size);
    nlohmann::ordered_json timelines = nlohmann::ordered_json::array();
    const auto wants = [&](const char* backend) {
      return options.backend == "all" || options.backend == backend;
    };
    if (wants("vulkan")) {
#if defined(STOKE_BENCH_VULKAN)
      run_backend<stoke::vulkan::Backend>(options, data, timelines);
#else
      std::printf("prefetch_overlap: vulkan skipped: stoke was built without the Vulkan backend\n");
#endif
    }
    if (wants("cuda")) {
#if defined(STOKE_BENCH_CUDA)
      run_backend<stoke::cuda::Backend>(options, data, timelines);
#else
      std::printf("prefetch_overlap: cuda skipped: stoke was built without the CUDA backend\n");
#endif
    }
    if (!options.timeline_json.empty()) {
      std::ofstream out(options.timeline_json);
      write_timelines(out, timelines);
      if (!out.flush()) throw std::runtime_error("cannot write " + options.timeline_json);
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "prefetch_overlap: %s\n", error.what());
    return 1;
  }
  return 0;
}
