#pragma once
/// @file
/// A test-only staging backend, written as a user would write their own: its "device" is
/// host memory behind a simulated copy engine, a thread that performs each copy as late as a
/// device may: only once somebody waits for it (its fence or a later copy's: copies finish in
/// submission order), or when the stager stops. So, on every run and with no clock involved,
/// a consumer that skipped a fence sees an unfilled buffer, and a staging buffer (or lent
/// block) written again before its copy's fence hands the copy the new bytes.

#include <condition_variable>
#include <cstddef>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/core/host_memory.hpp>
#include <stoke/core/lent_staging.hpp>
#include <stoke/core/staging.hpp>

#include "manual_fence.hpp"

namespace stoke::testing::delayed {

// --8<-- [start:device]
/// A device of the delayed backend: `delayed:N`.
struct Device {
  std::size_t index = 0;
  friend bool operator==(const Device&, const Device&) = default;
  friend std::ostream& operator<<(std::ostream& out, const Device& device) {
    return out << "delayed:" << device.index;
  }
};

}  // namespace stoke::testing::delayed

template <>
struct std::hash<stoke::testing::delayed::Device> {
  std::size_t operator()(const stoke::testing::delayed::Device& device) const noexcept {
    return device.index;
  }
};
// --8<-- [end:device]

namespace stoke::testing::delayed {

/// How the copy engines of stagers made from now on behave (tests set it).
struct Settings {
  std::optional<std::size_t> fail_copy;  ///< this copy of each stager (from 0) fails
};

inline Settings& settings() {
  static Settings current;
  return current;
}

/// Signalled by the copy engine, with an error message when the copy failed.
using Fence = stoke::testing::ManualFence;

/// "Device memory": bytes the copy engine fills, and the fence of that copy.
class Buffer {
 public:
  /// No memory.
  Buffer() = default;
  /// `size` zero bytes on `device`, filled by the copy that signals `written`.
  Buffer(Device device, std::size_t size, Fence written)
      : device_(device), memory_(std::make_shared<Memory>(size, std::move(written))) {}
  /// Size in bytes.
  [[nodiscard]] std::size_t size() const noexcept { return memory_ ? memory_->bytes.size() : 0; }
  /// The device it lives on.
  [[nodiscard]] const Device& device() const noexcept { return device_; }
  /// The fence of the copy that fills it.
  [[nodiscard]] const Fence& written() const { return memory_->written; }

 private:
  friend class Stager;
  struct Memory {
    Memory(std::size_t size, Fence fence) : bytes(size), written(std::move(fence)) {}
    std::vector<std::byte> bytes;
    Fence written;
  };
  Device device_;
  std::shared_ptr<Memory> memory_;
};

/// Host memory the copy engine reads directly: what a user's backend lends to batch storage.
struct HostBlock {
  std::shared_ptr<std::byte[]> bytes;
  std::size_t size = 0;
};

/// Makes the blocks a stager lends (`stoke::MappedStagingAllocator`).
struct HostBlocks {
  /// `size` bytes aligned to 64.
  [[nodiscard]] static HostBlock allocate(std::size_t size) {
    return {std::shared_ptr<std::byte[]>(
                pageable_memory()->allocate(size),
                [size](std::byte* data) { pageable_memory()->free(data, size); }),
            size};
  }
  /// The bytes of `block`.
  [[nodiscard]] static std::size_t size(const HostBlock& block) noexcept { return block.size; }
  /// The host view of `block`.
  [[nodiscard]] static std::span<std::byte> mapped(const HostBlock& block) noexcept {
    return {block.bytes.get(), block.size};
  }
};

/// Uploads through `slots` staging buffers, used round robin; each copy runs on the engine
/// thread once it is waited for (see the file's comment), in submission order. Bytes that lie in
/// the memory it lends
/// (`lent_memory()`) are copied from there, with no staging buffer.
class Stager {
 public:
  /// A stager for `device` with `slots` staging buffers and a copy engine of `settings`.
  Stager(Device device, std::size_t slots, Settings settings)
      : device_(device), settings_(settings), slots_(slots) {
    if (slots == 0) throw std::invalid_argument("delayed: a stager needs a staging slot");
    engine_ = std::thread([this] { run(); });
  }
  Stager(const Stager&) = delete;
  Stager& operator=(const Stager&) = delete;
  /// Finishes the copies in flight, then stops the engine.
  ~Stager() {
    {
      std::lock_guard lock(jobs_mutex_);
      stop_ = true;
    }
    jobs_changed_.notify_all();
    engine_.join();
  }

  /// The device it uploads to.
  [[nodiscard]] const Device& device() const noexcept { return device_; }
  /// The most staging buffers it holds.
  [[nodiscard]] std::size_t capacity() const noexcept { return slots_.size(); }
  /// Staging buffers allocated so far.
  [[nodiscard]] std::size_t staging_buffers() const {
    std::lock_guard lock(upload_mutex_);
    return allocated_;
  }

  /// The memory it lends to batch storage (see `stoke::LendingStager`).
  [[nodiscard]] std::shared_ptr<HostMemory> lent_memory() const noexcept { return lent_; }
  /// Uploads that copied their bytes into a staging buffer first.
  [[nodiscard]] std::size_t host_copies() const {
    std::lock_guard lock(upload_mutex_);
    return host_copies_;
  }

  /// Queues the copy of `bytes` from the lent memory they lie in, or else fills the next
  /// staging buffer (after its last copy) and queues its copy.
  Staged<Buffer, Fence> upload(std::span<const std::byte> bytes) {
    std::lock_guard lock(upload_mutex_);
    if (const auto where = lent_->find(bytes)) {
      Fence fence = Fence::pending(wake_engine());
      Buffer buffer(device_, bytes.size(), fence);
      lent_->record_use(*where, fence);
      queue(Job{bytes, buffer.memory_, fence, copies_++});
      return Staged<Buffer, Fence>{std::move(buffer), std::move(fence)};
    }
    ++host_copies_;
    Slot& slot = slots_[next_slot_++ % slots_.size()];
    try {
      slot.busy.wait();       // the copy that last read this staging buffer
    } catch (const Error&) {  // that copy failed; its staging buffer is free all the same
    }
    if (!slot.allocated) {
      slot.allocated = true;
      ++allocated_;
    }
    slot.bytes.assign(bytes.begin(), bytes.end());
    Fence fence = Fence::pending(wake_engine());
    Buffer buffer(device_, bytes.size(), fence);
    slot.busy = fence;
    queue(Job{slot.bytes, buffer.memory_, fence, copies_++});
    return Staged<Buffer, Fence>{std::move(buffer), std::move(fence)};
  }

  /// The buffer's bytes, once its copy has finished.
  [[nodiscard]] std::vector<std::byte> download(const Buffer& buffer) const {
    buffer.memory_->written.wait();
    return buffer.memory_->bytes;
  }

 private:
  struct Slot {
    std::vector<std::byte> bytes;
    Fence busy;
    bool allocated = false;
  };
  struct Job {
    std::span<const std::byte> staging;
    std::shared_ptr<Buffer::Memory> target;
    Fence fence;
    std::size_t number;
  };

  /// Hands `job` to the copy engine.
  void queue(Job job) {
    {
      std::lock_guard jobs_lock(jobs_mutex_);
      jobs_.push_back(std::move(job));
    }
    jobs_changed_.notify_all();
  }

  /// What a fence of this stager calls when a thread starts waiting for it: wakes the engine.
  std::function<void()> wake_engine() {
    return [this] {
      {
        std::lock_guard lock(jobs_mutex_);
      }  // the engine is waiting or has not checked yet
      jobs_changed_.notify_all();
    };
  }

  /// Whether a queued copy is waited for (`jobs_mutex_` held).
  [[nodiscard]] bool waited_for() const {
    for (const Job& job : jobs_) {
      if (job.fence.waiters() > 0) return true;
    }
    return false;
  }

  void run() {
    for (;;) {
      std::unique_lock lock(jobs_mutex_);
      jobs_changed_.wait(lock, [&] { return stop_ || waited_for(); });
      if (jobs_.empty()) return;
      Job job = std::move(jobs_.front());  // copies finish in submission order
      jobs_.pop_front();
      lock.unlock();
      if (settings_.fail_copy == job.number) {
        job.fence.signal("delayed: the copy engine failed copy " + std::to_string(job.number));
        continue;
      }
      if (!job.staging.empty()) {
        std::memcpy(job.target->bytes.data(), job.staging.data(), job.staging.size());
      }
      job.fence.signal();
    }
  }

  Device device_;
  Settings settings_;
  mutable std::mutex upload_mutex_;
  std::vector<Slot> slots_;
  std::size_t next_slot_ = 0;
  std::size_t allocated_ = 0;
  std::size_t copies_ = 0;
  std::size_t host_copies_ = 0;
  std::shared_ptr<stoke::LentStaging<HostBlock, Fence, HostBlocks>> lent_ =
      std::make_shared<stoke::LentStaging<HostBlock, Fence, HostBlocks>>(HostBlocks{},
                                                                         "delayed host");
  std::mutex jobs_mutex_;
  std::condition_variable jobs_changed_;
  std::deque<Job> jobs_;
  bool stop_ = false;
  std::thread engine_;
};

// --8<-- [start:backend]
/// The delayed backend: three devices, uploads through `Stager`.
struct Backend {
  using Device = delayed::Device;
  using Buffer = delayed::Buffer;
  using Fence = delayed::Fence;
  using Stager = delayed::Stager;

  /// `"delayed"`.
  static constexpr std::string_view name() noexcept { return "delayed"; }
  /// Three devices.
  static std::vector<Device> devices() { return {Device{0}, Device{1}, Device{2}}; }
  /// A stager with a copy engine of the current `settings()`.
  static std::unique_ptr<Stager> make_stager(const Device& device, std::size_t slots) {
    return std::make_unique<Stager>(device, slots, settings());
  }
};
// --8<-- [end:backend]

}  // namespace stoke::testing::delayed
