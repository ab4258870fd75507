#pragma once
/// @file
/// `stoke::StagingSlots`: the bounded, recycled pool of staging memory behind every device
/// backend's stager. A slot is handed out again only once the fence of the last copy that
/// read or wrote its memory has signalled.

#include <concepts>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/core/staging.hpp>

namespace stoke {

/// How a pool of staging slots makes and measures its memory (pinned host memory for CUDA,
/// a host-visible buffer for Vulkan).
///
/// Requirements:
/// 1. `Memory` is default-constructible (no memory) and move-assignable; assigning over
///    memory frees what it held;
/// 2. `a.allocate(n)` returns new memory of at least `n` bytes, or throws and holds nothing;
///    it may be called from several threads at once;
/// 3. `a.size(m)` is the number of bytes of `m` a copy may use.
template <class A, class Memory>
concept StagingAllocator =
    std::default_initializable<Memory> && std::is_move_assignable_v<Memory> &&
    requires(const A& allocator, const Memory& memory, std::size_t bytes) {
      { allocator.allocate(bytes) } -> std::same_as<Memory>;
      { allocator.size(memory) } -> std::convertible_to<std::size_t>;
    };

/// At most `capacity()` slots of staging memory, each either free or claimed by one thread
/// at a time. `claim(size)` hands out a slot whose last copy has completed: a ready one
/// (preferring one big enough), else a fresh one while fewer than `capacity()` hold memory,
/// else the one handed back longest ago, after waiting for its fence; it blocks while every
/// slot is claimed by another thread. Thread-safe; a claim that throws leaves the pool as it
/// was. `F` is a `stoke::Fence` whose default value has already signalled.
template <class Memory, Fence F, StagingAllocator<Memory> Allocator>
  requires std::default_initializable<F>
class StagingSlots {
  struct Slot;

 public:
  /// A claimed slot: its memory belongs to the claimer alone until the claim ends, which
  /// hands the slot back busy until the fence given to `busy_until` (without one, busy until
  /// the fence it had when claimed, as nothing new uses it).
  class Claim {
   public:
    Claim(const Claim&) = delete;
    Claim& operator=(const Claim&) = delete;
    /// Hands the slot back to its pool.
    ~Claim() { pool_->unclaim(index_, std::move(busy_)); }

    /// The slot's memory, of at least the claimed size.
    [[nodiscard]] Memory& memory() const noexcept { return pool_->slots_[index_].memory; }
    /// Records that work submitted on the memory completes at `fence`: the slot is handed
    /// out again only after `fence` has signalled.
    void busy_until(F fence) { busy_ = std::move(fence); }

   private:
    friend StagingSlots;
    Claim(StagingSlots& pool, std::size_t index) noexcept : pool_(&pool), index_(index) {}

    StagingSlots* pool_;
    std::size_t index_;
    std::optional<F> busy_;  ///< the fence to hand the slot back with, if it changed
  };

  /// A pool of at most `capacity` (at least 1) slots whose memory `allocator` makes.
  StagingSlots(std::size_t capacity, Allocator allocator)
      : allocator_(std::move(allocator)), slots_(capacity) {
    if (capacity == 0) throw UsageError("stoke: a stager needs a staging slot");
  }
  StagingSlots(const StagingSlots&) = delete;
  StagingSlots& operator=(const StagingSlots&) = delete;

  /// The most slots that hold memory at once.
  [[nodiscard]] std::size_t capacity() const noexcept { return slots_.size(); }
  /// The slots that hold memory now (at most `capacity()`).
  [[nodiscard]] std::size_t allocated() const {
    std::lock_guard lock(mutex_);
    return allocated_;
  }

  /// Gives every slot at least `size` bytes now, so that later claims of up to `size` bytes
  /// allocate nothing (making pinned memory synchronises a CUDA device: do it before
  /// training, not while collectives run). Waits for slots still in use.
  void reserve(std::size_t size) { reserve_slots(size, capacity()); }

  /// Claims a slot of at least `size` bytes whose last copy has completed: a ready one, else
  /// a fresh one while fewer than `capacity()` hold memory, else the one handed back longest
  /// ago (waiting for its fence). Blocks while every slot is claimed by another thread.
  /// If waiting or allocating throws, the slot is handed back as it was.
  [[nodiscard]] Claim claim(std::size_t size) {
    std::unique_lock lock(mutex_);
    for (;;) {
      std::optional<std::size_t> ready, fresh, oldest;
      for (std::size_t i = 0; i < slots_.size(); ++i) {
        const Slot& slot = slots_[i];
        if (slot.claimed) continue;
        if (!slot.allocated) {
          if (!fresh) fresh = i;
        } else if (slot.busy.ready()) {
          if (!ready || (fits(slot, size) && !fits(slots_[*ready], size))) ready = i;
        } else if (!oldest || slot.last_use < slots_[*oldest].last_use) {
          oldest = i;
        }
      }
      const std::optional<std::size_t> pick = ready ? ready : fresh ? fresh : oldest;
      if (!pick) {
        released_.wait(lock);
        continue;
      }
      Slot& slot = slots_[*pick];
      slot.claimed = true;
      const bool make = !slot.allocated;
      if (make) {
        slot.allocated = true;
        ++allocated_;
      }
      lock.unlock();
      prepare(slot, size, make);
      return Claim(*this, *pick);
    }
  }

  /// Waits until no copy uses any slot's memory, so it can be freed. Call it with no claim
  /// in progress. A fence that throws `stoke::Error` counts as signalled: a failed copy no
  /// longer uses the memory.
  void wait_idle() const {
    for (const Slot& slot : slots_) {
      try {
        slot.busy.wait();
      } catch (const Error&) {
      }
    }
  }

 private:
  /// Holds one claim of `size` bytes while claiming `count - 1` more, so each is its own slot.
  void reserve_slots(std::size_t size, std::size_t count) {
    if (count == 0) return;
    const Claim held = claim(size);
    reserve_slots(size, count - 1);
  }

  /// One staging buffer and its state; guarded by `mutex_`, except the memory and fence of
  /// a claimed slot, which belong to its claimer.
  struct Slot {
    Memory memory;
    F busy;                    ///< signals when the last copy that reads or writes it is done
    std::size_t last_use = 0;  ///< when it was last handed back with a new fence
    bool allocated = false;    ///< whether it counts towards `allocated()`
    bool claimed = false;      ///< whether a `Claim` holds it
  };

  /// Whether `slot`'s memory holds `size` bytes.
  [[nodiscard]] bool fits(const Slot& slot, std::size_t size) const {
    return allocator_.size(slot.memory) >= size;
  }

  /// Waits for the last copy of the claimed `slot`, then (re)allocates its memory if it is
  /// new (`make`) or smaller than `size`. On an exception, hands the slot back as it was.
  void prepare(Slot& slot, std::size_t size, bool make) {
    bool freed = false;
    try {
      slot.busy.wait();
      if (make || allocator_.size(slot.memory) < size) {
        slot.memory = Memory();  // its copies have completed: freed at once
        freed = true;
        slot.memory = allocator_.allocate(size);
      }
    } catch (...) {
      {
        std::lock_guard lock(mutex_);
        if (make || freed) {
          slot.allocated = false;
          --allocated_;
        }
        slot.claimed = false;
      }
      released_.notify_all();
      throw;
    }
  }

  /// Hands slot `index` back, busy until `busy` signals (or its old fence, without one).
  void unclaim(std::size_t index, std::optional<F> busy) {
    {
      std::lock_guard lock(mutex_);
      Slot& slot = slots_[index];
      if (busy) {
        slot.busy = std::move(*busy);
        slot.last_use = ++uses_;
      }
      slot.claimed = false;
    }
    released_.notify_all();
  }

  Allocator allocator_;
  mutable std::mutex mutex_;
  std::condition_variable released_;  ///< notified whenever a slot is handed back
  std::vector<Slot> slots_;           ///< fixed size: `capacity()`
  std::size_t allocated_ = 0;
  std::size_t uses_ = 0;  ///< slots handed back with a new fence so far
};

}  // namespace stoke
