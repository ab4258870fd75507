#pragma once
/// @file
/// `stoke::LentStaging`: the staging memory a device backend lends to host batch storage.
/// Every backend's stager holds one; it hands out blocks of the backend's staging memory as
/// a `HostMemory`, finds the block a batch's bytes lie in (so the upload copies from there
/// by DMA alone), and remembers each block's last copy, so that a block is written again
/// only after that copy's fence.

#include <concepts>
#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include <stoke/core/error.hpp>
#include <stoke/core/host_memory.hpp>
#include <stoke/core/staging.hpp>
#include <stoke/core/staging_slots.hpp>

namespace stoke {

/// A staging allocator whose memory the host can write directly.
///
/// Requirements:
/// 1. `A` is a `StagingAllocator` of `Memory`;
/// 2. `a.mapped(m)` is the host view of all of `m`'s bytes (a `std::span<std::byte>`),
///    stable while `m` lives, and aligned to at least 64 bytes.
template <class A, class Memory>
concept MappedStagingAllocator =
    StagingAllocator<A, Memory> && requires(const A& allocator, const Memory& memory) {
      { allocator.mapped(memory) } -> std::same_as<std::span<std::byte>>;
    };

/// Staging memory lent to host batch storage (see `HostMemory`): blocks of `Memory` made by
/// `Allocator`, each with the fence of the last copy that reads it. Thread-safe.
template <class Memory, Fence F, MappedStagingAllocator<Memory> Allocator>
  requires std::default_initializable<F> && std::copyable<F>
class LentStaging final : public HostMemory {
 public:
  /// Where a span of host bytes lies in lent memory.
  struct Location {
    const Memory* memory;  ///< the block's staging memory (stable while the block lives)
    std::size_t offset;    ///< where the span starts in it
    const std::byte* key;  ///< the block's first byte, for `record_use`
  };

  /// Lends memory made by `allocator`, named `kind` ("pinned", "host-visible").
  LentStaging(Allocator allocator, std::string kind)
      : allocator_(std::move(allocator)), kind_(std::move(kind)) {}
  /// Waits for the copies that still read blocks that were not given back.
  ~LentStaging() override {
    for (auto& [key, block] : blocks_) wait_for(block.last_use);
  }

  [[nodiscard]] std::byte* allocate(std::size_t bytes) override {
    Memory memory = allocator_.allocate(bytes);
    std::byte* data = allocator_.mapped(memory).data();
    const std::lock_guard lock(mutex_);
    blocks_.emplace(data, Block{std::move(memory), F{}});
    ++allocations_;
    return data;
  }

  /// Waits for the block's last copy, then frees it.
  void free(std::byte* data, std::size_t /*bytes*/) noexcept override {
    Block doomed;
    {
      const std::lock_guard lock(mutex_);
      const auto it = blocks_.find(data);
      if (it == blocks_.end()) return;
      doomed = std::move(it->second);
      blocks_.erase(it);
    }
    wait_for(doomed.last_use);
  }

  [[nodiscard]] bool idle(const std::byte* data) const override {
    try {
      return last_use(data).ready();
    } catch (const Error&) {
      return true;  // a failed copy no longer reads the block
    }
  }
  void wait_idle(const std::byte* data) const override { wait_for(last_use(data)); }
  [[nodiscard]] std::string_view name() const noexcept override { return kind_; }

  /// Where `bytes` lie in a lent block, or nothing when they are not all inside one.
  [[nodiscard]] std::optional<Location> find(std::span<const std::byte> bytes) const {
    if (bytes.empty()) return std::nullopt;
    const std::lock_guard lock(mutex_);
    auto it = blocks_.upper_bound(bytes.data());
    if (it == blocks_.begin()) return std::nullopt;
    --it;
    const std::span<std::byte> block = allocator_.mapped(it->second.memory);
    const auto offset = static_cast<std::size_t>(bytes.data() - block.data());
    if (offset + bytes.size() > block.size()) return std::nullopt;
    return Location{&it->second.memory, offset, it->first};
  }

  /// Records that a copy which completes at `fence` reads the block of `where`: the pool
  /// hands the block out again only after `fence` signalled.
  void record_use(const Location& where, const F& fence) {
    const std::lock_guard lock(mutex_);
    const auto it = blocks_.find(where.key);
    if (it == blocks_.end())
      throw UsageError("stoke: a lent staging block was freed during its copy");
    it->second.last_use = fence;
  }

  /// Blocks made so far (an allocation counter for tests and benchmarks).
  [[nodiscard]] std::size_t allocations() const {
    const std::lock_guard lock(mutex_);
    return allocations_;
  }

 private:
  struct Block {
    Memory memory;
    F last_use;  ///< the fence of the last copy that reads the block
  };

  /// The fence of the last copy of the block at `data` (signalled for an unknown block).
  [[nodiscard]] F last_use(const std::byte* data) const {
    const std::lock_guard lock(mutex_);
    const auto it = blocks_.find(data);
    return it == blocks_.end() ? F{} : it->second.last_use;
  }

  /// Waits for `fence`; a failed copy counts as done (it no longer reads the block).
  static void wait_for(const F& fence) noexcept {
    try {
      fence.wait();
    } catch (...) {
    }
  }

  Allocator allocator_;
  std::string kind_;
  mutable std::mutex mutex_;
  std::map<const std::byte*, Block, std::less<>> blocks_;
  std::size_t allocations_ = 0;
};

}  // namespace stoke
