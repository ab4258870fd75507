#pragma once
/// @file
/// `BufferPool`: a bounded, thread-safe pool of recycled host buffers, and `HostBuffer`, the
/// owning handle that gives its memory back to the pool. Backend-neutral host storage: the CPU
/// backend's batches live in it, and device backends lend it their staging memory.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include <stoke/core/fork.hpp>
#include <stoke/core/host_memory.hpp>

namespace stoke {

namespace detail {

/// The size of a transparent huge page (x86-64 and most Linux arm64 kernels).
inline constexpr std::size_t huge_page_size = std::size_t{2} << 20;

/// On Linux, asks for the whole huge pages inside `[data, data + bytes)` to be backed by
/// transparent huge pages: a fresh batch of megabytes then takes a few page faults instead
/// of thousands. A hint: memory the allocator reuses is left as it is.
inline void advise_huge_pages([[maybe_unused]] std::byte* data,
                              [[maybe_unused]] std::size_t bytes) noexcept {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (bytes < 2 * huge_page_size) return;
  const auto address = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t begin = (address + huge_page_size - 1) & ~(huge_page_size - 1);
  const std::uintptr_t end = (address + bytes) & ~(huge_page_size - 1);
  if (end > begin) (void)::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#endif
}

/// A block of host memory and the source it came from.
struct Block {
  std::byte* data = nullptr;
  std::size_t size = 0;
  std::shared_ptr<HostMemory> memory;  ///< where it goes back to when freed
};

/// Gives `block` back to its memory source.
inline void free_block(const Block& block) noexcept {
  if (block.data != nullptr) block.memory->free(block.data, block.size);
}

/// The free list behind `BufferPool` and its copies: at most `capacity` buffers, oldest first,
/// from the memory source lent to the pool (pageable memory unless a backend lent its own).
class BufferPoolState {
 public:
  explicit BufferPoolState(std::size_t capacity) : capacity_(capacity) { free_.reserve(capacity); }
  BufferPoolState(const BufferPoolState&) = delete;
  BufferPoolState& operator=(const BufferPoolState&) = delete;
  ~BufferPoolState() {
    for (const Block& block : free_) free_block(block);
  }

  /// A block of `bytes` (> 0) to `2 * bytes` bytes: the smallest free one of the current
  /// memory source that no device work uses, else the fitting one given back longest ago
  /// (after waiting for its device work), else a new one.
  Block acquire(std::size_t bytes) {
    std::unique_lock lock(mutex_);
    const std::shared_ptr<HostMemory> memory = memory_;
    auto best = free_.end();
    auto oldest_busy = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->memory != memory || it->size < bytes || it->size / 2 > bytes) continue;
      if (!memory->idle(it->data)) {
        if (oldest_busy == free_.end()) oldest_busy = it;
      } else if (best == free_.end() || it->size < best->size) {
        best = it;
      }
    }
    if (best == free_.end()) best = oldest_busy;
    if (best != free_.end()) {
      Block out = std::move(*best);
      free_.erase(best);
      lock.unlock();
      out.memory->wait_idle(out.data);  // at once unless it was the busy one
      return out;
    }
    ++allocations_;
    lock.unlock();
    Block fresh{memory->allocate(bytes), bytes, memory};
    if (memory == pageable_memory()) advise_huge_pages(fresh.data, bytes);
    return fresh;
  }

  /// Keeps `block` for a later `acquire`; when the pool is full, or the block is of a memory
  /// source the pool no longer draws from, frees the oldest (or that) block.
  void give(Block block) noexcept {
    Block evicted;
    {
      const std::lock_guard lock(mutex_);
      if (capacity_ == 0 || block.memory != memory_) {
        evicted = std::move(block);
      } else {
        if (free_.size() == capacity_) {
          evicted = std::move(free_.front());
          free_.erase(free_.begin());
        }
        free_.push_back(std::move(block));  // never reallocates: reserved to capacity_
      }
    }
    free_block(evicted);
  }

  /// Makes later blocks come from `memory`; frees the free blocks of the source before.
  void lend(std::shared_ptr<HostMemory> memory) {
    std::vector<Block> dropped;
    {
      const std::lock_guard lock(mutex_);
      if (memory == memory_) return;
      memory_ = std::move(memory);
      dropped.swap(free_);
      free_.reserve(capacity_);
    }
    for (const Block& block : dropped) free_block(block);
  }

  /// Allocates free blocks of `bytes` until the pool holds `capacity()` of them.
  void reserve(std::size_t bytes) {
    if (bytes == 0) return;
    std::unique_lock lock(mutex_);
    const std::shared_ptr<HostMemory> memory = memory_;
    while (free_.size() < capacity_) {
      lock.unlock();
      Block fresh{memory->allocate(bytes), bytes, memory};
      lock.lock();
      ++allocations_;
      if (free_.size() == capacity_ || memory != memory_) {
        lock.unlock();
        free_block(fresh);
        return;
      }
      free_.push_back(std::move(fresh));
    }
  }

  /// The memory source new blocks come from.
  [[nodiscard]] std::shared_ptr<HostMemory> memory() const {
    const std::lock_guard lock(mutex_);
    return memory_;
  }
  /// Number of free buffers held now.
  [[nodiscard]] std::size_t free_count() const {
    const std::lock_guard lock(mutex_);
    return free_.size();
  }
  /// Blocks allocated from a memory source so far.
  [[nodiscard]] std::size_t allocations() const {
    const std::lock_guard lock(mutex_);
    return allocations_;
  }
  /// The most free buffers ever held.
  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }

 private:
  mutable ForkGuarded mutex_;  ///< free after a fork too: a child's loaders draw from the pool
  std::vector<Block> free_;
  std::shared_ptr<HostMemory> memory_ = pageable_memory();
  std::size_t capacity_;
  std::size_t allocations_ = 0;
};

}  // namespace detail

/// An owned block of uninitialised host memory, aligned to a cache line. Move-only. When
/// it came from a `BufferPool` that still exists, destroying it gives the memory back to
/// that pool; otherwise the memory goes back to its source (`memory()`).
class HostBuffer {
 public:
  /// No memory.
  HostBuffer() = default;
  /// `bytes` freshly allocated bytes, not from any pool.
  explicit HostBuffer(std::size_t bytes)
      : block_{bytes == 0
                   ? detail::Block{}
                   : detail::Block{pageable_memory()->allocate(bytes), bytes, pageable_memory()}} {}
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  /// Takes the memory of `other`, which is left empty.
  HostBuffer(HostBuffer&& other) noexcept
      : block_(std::exchange(other.block_, {})), pool_(std::move(other.pool_)) {}
  /// Releases this buffer's memory, then takes that of `other`.
  HostBuffer& operator=(HostBuffer&& other) noexcept {
    if (this != &other) {
      release();
      block_ = std::exchange(other.block_, {});
      pool_ = std::move(other.pool_);
    }
    return *this;
  }
  /// Gives the memory back to its pool, or frees it.
  ~HostBuffer() { release(); }

  /// The first byte (null when empty).
  [[nodiscard]] std::byte* data() const noexcept { return block_.data; }
  /// Number of bytes (at least what was asked for).
  [[nodiscard]] std::size_t size() const noexcept { return block_.size; }
  /// The source of its memory (null when empty): pageable memory, or memory a device
  /// backend lent to the pool it came from.
  [[nodiscard]] const std::shared_ptr<HostMemory>& memory() const noexcept { return block_.memory; }

 private:
  friend class BufferPool;
  HostBuffer(detail::Block block, std::weak_ptr<detail::BufferPoolState> pool) noexcept
      : block_(std::move(block)), pool_(std::move(pool)) {}

  void release() noexcept {
    if (block_.data == nullptr) return;
    if (const auto pool = pool_.lock()) {
      pool->give(std::exchange(block_, {}));
    } else {
      detail::free_block(std::exchange(block_, {}));
    }
    pool_.reset();
  }

  detail::Block block_;
  std::weak_ptr<detail::BufferPoolState> pool_;  ///< not owning: the pool may go first
};

/// A bounded, thread-safe pool of host buffers, for batch storage that is recycled instead
/// of allocated (and page-faulted) for every batch.
///
/// - `acquire(bytes)` returns a free buffer of `bytes` to `2 * bytes` bytes if the pool has
///   one, else a new one; its contents are not initialised.
/// - Destroying that `HostBuffer` gives it back. The pool keeps at most `capacity()` free
///   buffers and frees the oldest beyond that, so it holds at most `capacity()` times the
///   largest buffer.
/// - Its memory is pageable unless a device backend lent it staging memory (`lend`, which
///   `prefetch_to_device` does): then batchers write their rows straight into the bytes the
///   DMA reads, and a buffer is handed out again only after the copy that read it completed.
/// - A `BufferPool` is a handle: copies share the same free buffers (so copies of a batcher
///   share one pool). Buffers do not keep the pool alive; when its last handle is destroyed,
///   its free buffers are freed, and buffers still in use are freed when they are destroyed.
class BufferPool {
 public:
  /// Free buffers a default pool keeps: enough for a loader's queue depth and workers.
  static constexpr std::size_t default_capacity = 8;

  /// A pool keeping at most `default_capacity` free buffers.
  BufferPool() : BufferPool(default_capacity) {}
  /// A pool keeping at most `capacity` free buffers (0: buffers are never kept).
  explicit BufferPool(std::size_t capacity)
      : state_(std::make_shared<detail::BufferPoolState>(capacity)) {}

  /// A buffer of at least `bytes` uninitialised bytes, recycled when possible.
  [[nodiscard]] HostBuffer acquire(std::size_t bytes) const {
    if (bytes == 0) return {};
    return HostBuffer(state_->acquire(bytes), state_);
  }

  /// Makes later buffers (of this pool and its copies) come from `memory`, which a device
  /// backend lends so that batches are written where its DMA reads them.
  void lend(std::shared_ptr<HostMemory> memory) const { state_->lend(std::move(memory)); }
  /// The memory source new buffers come from.
  [[nodiscard]] std::shared_ptr<HostMemory> memory() const { return state_->memory(); }
  /// Allocates free buffers of `bytes` until the pool holds `capacity()` of them, so that a
  /// loader whose batches are at most `bytes` allocates nothing once it runs.
  void reserve(std::size_t bytes) const { state_->reserve(bytes); }
  /// Buffers allocated so far (not recycled): constant once a loader is in steady state.
  [[nodiscard]] std::size_t allocations() const { return state_->allocations(); }

  /// Number of free buffers the pool holds now.
  [[nodiscard]] std::size_t free_buffers() const { return state_->free_count(); }
  /// The most free buffers the pool keeps.
  [[nodiscard]] std::size_t capacity() const noexcept { return state_->capacity(); }

 private:
  std::shared_ptr<detail::BufferPoolState> state_;
};

}  // namespace stoke
