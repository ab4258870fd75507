#pragma once
/// @file
/// `HostMemory`: where a pool of host batch storage gets its bytes. By default ordinary
/// (pageable) memory; a device backend lends memory its DMA engine reads (pinned memory on
/// CUDA, host-visible mapped memory on Vulkan), so that a batcher writes its rows straight
/// into the bytes the upload copies, and the upload is the DMA alone.

#include <cstddef>
#include <memory>
#include <new>
#include <string_view>

namespace stoke {

/// A source of host memory blocks for batch storage, shared by the pools that use it.
///
/// Requirements on an implementation:
/// 1. `allocate(bytes)` (bytes > 0) returns `bytes` writable bytes aligned to at least 64,
///    or throws and holds nothing; it may be called from several threads at once;
/// 2. `free(data, bytes)` gives back a block `allocate(bytes)` returned; it may be called
///    while device work still reads the block (the implementation defers the release);
/// 3. `wait_idle(data)` blocks until no device work submitted before the call reads or
///    writes the block at `data`, so the host may write it again; `idle(data)` says so
///    without blocking. Both are thread-safe;
/// 4. `name()` says what kind of memory it is, for messages and benchmarks.
class HostMemory {
 public:
  HostMemory() = default;
  HostMemory(const HostMemory&) = delete;
  HostMemory& operator=(const HostMemory&) = delete;
  virtual ~HostMemory() = default;

  /// A new block of `bytes` (> 0) bytes, aligned to 64.
  [[nodiscard]] virtual std::byte* allocate(std::size_t bytes) = 0;
  /// Gives back a block of `bytes` that `allocate` returned.
  virtual void free(std::byte* data, std::size_t bytes) noexcept = 0;
  /// Whether no device work reads or writes the block at `data` now.
  [[nodiscard]] virtual bool idle(const std::byte* data) const = 0;
  /// Waits until no device work reads or writes the block at `data`.
  virtual void wait_idle(const std::byte* data) const = 0;
  /// What kind of memory this is ("pageable", "pinned", "host-visible").
  [[nodiscard]] virtual std::string_view name() const noexcept = 0;
};

/// Ordinary host memory from the C++ allocator, aligned to 64 bytes; no device ever reads it
/// directly, so every block is always idle.
class PageableMemory final : public HostMemory {
 public:
  /// Alignment of every block: a cache line, enough for any SIMD load.
  static constexpr std::size_t alignment = 64;

  [[nodiscard]] std::byte* allocate(std::size_t bytes) override {
    return static_cast<std::byte*>(::operator new(bytes, std::align_val_t{alignment}));
  }
  void free(std::byte* data, std::size_t bytes) noexcept override {
    ::operator delete(data, bytes, std::align_val_t{alignment});
  }
  [[nodiscard]] bool idle(const std::byte* /*data*/) const override { return true; }
  void wait_idle(const std::byte* /*data*/) const override {}
  [[nodiscard]] std::string_view name() const noexcept override { return "pageable"; }
};

/// The process's pageable memory source, shared by every pool that was lent nothing else.
[[nodiscard]] inline const std::shared_ptr<HostMemory>& pageable_memory() {
  static const std::shared_ptr<HostMemory> memory = std::make_shared<PageableMemory>();
  return memory;
}

}  // namespace stoke
