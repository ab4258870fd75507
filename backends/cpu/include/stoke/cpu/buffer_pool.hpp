#pragma once
/// @file
/// `cpu::BufferPool`: a bounded, thread-safe pool of recycled host buffers, and
/// `cpu::HostBuffer`, the owning handle that gives its memory back to the pool.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace stoke::cpu {

namespace detail {

/// Alignment of every host buffer: a cache line, enough for any SIMD load.
inline constexpr std::size_t host_buffer_alignment = 64;
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

/// `bytes` (> 0) uninitialised bytes, aligned to `host_buffer_alignment`.
inline std::byte* allocate_host(std::size_t bytes) {
  auto* data =
      static_cast<std::byte*>(::operator new(bytes, std::align_val_t{host_buffer_alignment}));
  advise_huge_pages(data, bytes);
  return data;
}

/// Frees what `allocate_host(bytes)` returned.
inline void free_host(std::byte* data, std::size_t bytes) noexcept {
  ::operator delete(data, bytes, std::align_val_t{host_buffer_alignment});
}

/// A buffer kept by a pool while nobody uses it.
struct FreeBuffer {
  std::byte* data = nullptr;
  std::size_t size = 0;
};

/// The free list behind `BufferPool` and its copies: at most `capacity` buffers, oldest first.
class BufferPoolState {
 public:
  explicit BufferPoolState(std::size_t capacity) : capacity_(capacity) { free_.reserve(capacity); }
  BufferPoolState(const BufferPoolState&) = delete;
  BufferPoolState& operator=(const BufferPoolState&) = delete;
  ~BufferPoolState() {
    for (const FreeBuffer& buffer : free_) free_host(buffer.data, buffer.size);
  }

  /// The smallest free buffer of `bytes` to `2 * bytes` bytes, taken out of the pool; an
  /// empty `FreeBuffer` when there is none.
  FreeBuffer take(std::size_t bytes) noexcept {
    const std::lock_guard lock(mutex_);
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->size >= bytes && it->size / 2 <= bytes &&
          (best == free_.end() || it->size < best->size)) {
        best = it;
      }
    }
    if (best == free_.end()) return {};
    const FreeBuffer out = *best;
    free_.erase(best);
    return out;
  }

  /// Keeps `buffer` for a later `take`; when the pool is full, frees its oldest buffer.
  void give(FreeBuffer buffer) noexcept {
    FreeBuffer evicted;
    {
      const std::lock_guard lock(mutex_);
      if (capacity_ == 0) {
        evicted = buffer;
      } else {
        if (free_.size() == capacity_) {
          evicted = free_.front();
          free_.erase(free_.begin());
        }
        free_.push_back(buffer);  // never reallocates: reserved to capacity_
      }
    }
    if (evicted.data != nullptr) free_host(evicted.data, evicted.size);
  }

  /// Number of free buffers held now.
  [[nodiscard]] std::size_t free_count() const {
    const std::lock_guard lock(mutex_);
    return free_.size();
  }

  /// The most free buffers ever held.
  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }

 private:
  mutable std::mutex mutex_;
  std::vector<FreeBuffer> free_;
  std::size_t capacity_;
};

}  // namespace detail

/// An owned block of uninitialised host memory, aligned to a cache line. Move-only. When
/// it came from a `BufferPool` that still exists, destroying it gives the memory back to
/// that pool; otherwise the memory is freed.
class HostBuffer {
 public:
  /// No memory.
  HostBuffer() = default;
  /// `bytes` freshly allocated bytes, not from any pool.
  explicit HostBuffer(std::size_t bytes)
      : data_(bytes == 0 ? nullptr : detail::allocate_host(bytes)), size_(bytes) {}
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  /// Takes the memory of `other`, which is left empty.
  HostBuffer(HostBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)),
        size_(std::exchange(other.size_, 0)),
        pool_(std::move(other.pool_)) {}
  /// Releases this buffer's memory, then takes that of `other`.
  HostBuffer& operator=(HostBuffer&& other) noexcept {
    if (this != &other) {
      release();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
      pool_ = std::move(other.pool_);
    }
    return *this;
  }
  /// Gives the memory back to its pool, or frees it.
  ~HostBuffer() { release(); }

  /// The first byte (null when empty).
  [[nodiscard]] std::byte* data() const noexcept { return data_; }
  /// Number of bytes (at least what was asked for).
  [[nodiscard]] std::size_t size() const noexcept { return size_; }

 private:
  friend class BufferPool;
  HostBuffer(detail::FreeBuffer buffer, std::weak_ptr<detail::BufferPoolState> pool) noexcept
      : data_(buffer.data), size_(buffer.size), pool_(std::move(pool)) {}

  void release() noexcept {
    if (data_ == nullptr) return;
    if (const auto pool = pool_.lock()) {
      pool->give({data_, size_});
    } else {
      detail::free_host(data_, size_);
    }
    data_ = nullptr;
    size_ = 0;
    pool_.reset();
  }

  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
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
/// - A `BufferPool` is a handle: copies share the same free buffers (so copies of a batcher
///   share one pool). Buffers do not keep the pool alive; when its last handle is destroyed,
///   its free buffers are freed, and buffers still in use are freed when they are destroyed.
class BufferPool {
 public:
  /// Free buffers a default pool keeps: enough for a loader's prefetch window and workers.
  static constexpr std::size_t default_capacity = 8;

  /// A pool keeping at most `default_capacity` free buffers.
  BufferPool() : BufferPool(default_capacity) {}
  /// A pool keeping at most `capacity` free buffers (0: buffers are never kept).
  explicit BufferPool(std::size_t capacity)
      : state_(std::make_shared<detail::BufferPoolState>(capacity)) {}

  /// A buffer of at least `bytes` uninitialised bytes, recycled when possible.
  [[nodiscard]] HostBuffer acquire(std::size_t bytes) const {
    if (bytes == 0) return {};
    detail::FreeBuffer buffer = state_->take(bytes);
    if (buffer.data == nullptr) buffer = {detail::allocate_host(bytes), bytes};
    return HostBuffer(buffer, state_);
  }

  /// Number of free buffers the pool holds now.
  [[nodiscard]] std::size_t free_buffers() const { return state_->free_count(); }
  /// The most free buffers the pool keeps.
  [[nodiscard]] std::size_t capacity() const noexcept { return state_->capacity(); }

 private:
  std::shared_ptr<detail::BufferPoolState> state_;
};

}  // namespace stoke::cpu
