// The generic pool of staging slots behind the CUDA and Vulkan stagers
// (stoke::StagingSlots), with fake memory and fences signalled by hand. Labelled
// `loader`, so it also runs under TSan (slots claimed and handed back from several threads)
// and ASan.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/core/staging.hpp>
#include <stoke/core/staging_slots.hpp>

#include "manual_fence.hpp"
#include "test_sync.hpp"

namespace {

using stoke::testing::Flag;

using namespace std::chrono_literals;

/// How long the test waits for another thread before it gives up (the test then fails).
constexpr auto patience = 5s;

/// A `ManualFence` the test can also wait on until threads wait on it.
class TestFence {
 public:
  /// A fence that has already signalled.
  TestFence() = default;
  /// A fence that signals when `signal` is called.
  static TestFence pending() {
    TestFence fence;
    fence.fence_ = stoke::testing::ManualFence::pending();
    fence.waits_ = std::make_shared<Waits>();
    return fence;
  }
  /// Whether it has signalled.
  [[nodiscard]] bool ready() const { return fence_.ready(); }
  /// Blocks until it has signalled, counted by `waited_on_by`.
  void wait() const {
    if (waits_) {
      {
        const std::lock_guard lock(waits_->mutex);
        ++waits_->begun;
      }
      waits_->changed.notify_all();
    }
    fence_.wait();
  }
  /// Signals it; with an `error`, as a failed copy.
  void signal(std::string error = {}) const { fence_.signal(std::move(error)); }
  /// The threads blocked in `wait()` now.
  [[nodiscard]] std::size_t waiters() const { return fence_.waiters(); }
  /// Whether `count` waits on it have begun within `patience`.
  [[nodiscard]] bool waited_on_by(std::size_t count) const {
    std::unique_lock lock(waits_->mutex);
    return waits_->changed.wait_for(lock, patience, [&] { return waits_->begun >= count; });
  }

 private:
  struct Waits {
    std::mutex mutex;
    std::condition_variable changed;
    std::size_t begun = 0;
  };
  stoke::testing::ManualFence fence_;
  std::shared_ptr<Waits> waits_;
};
static_assert(stoke::Fence<TestFence>);

/// What one allocation made: its number and, for the stress test, who uses it.
struct Cell {
  int id = 0;                       ///< the allocation's number, from 1
  std::atomic<bool> in_use{false};  ///< set while a claim holds the memory
  TestFence last_copy;              ///< the fence of the last "copy" that used it
};

/// Fake staging memory: a size and the cell of its allocation (null for no memory).
struct TestMemory {
  std::size_t bytes = 0;       ///< its size
  std::shared_ptr<Cell> cell;  ///< its allocation
  /// The allocation's number (0 for no memory).
  [[nodiscard]] int id() const { return cell ? cell->id : 0; }
};

/// Counts allocations and fails them on demand.
struct Counters {
  std::atomic<int> allocations{0};  ///< made so far
  std::atomic<int> live{0};         ///< not yet freed
  std::atomic<bool> fail{false};    ///< whether `allocate` throws
};

/// Makes `TestMemory`, counting in `counters`.
struct TestAllocator {
  std::shared_ptr<Counters> counters;
  /// Memory of `size` bytes, or `std::bad_alloc` while `counters->fail` is set.
  [[nodiscard]] TestMemory allocate(std::size_t size) const {
    if (counters->fail) throw std::bad_alloc();
    auto cell = std::shared_ptr<Cell>(new Cell, [c = counters](Cell* freed) {
      --c->live;
      delete freed;
    });
    cell->id = ++counters->allocations;
    ++counters->live;
    return TestMemory{size, std::move(cell)};
  }
  /// The bytes of `memory`.
  [[nodiscard]] static std::size_t size(const TestMemory& memory) noexcept { return memory.bytes; }
};

using Slots = stoke::StagingSlots<TestMemory, TestFence, TestAllocator>;

/// A pool of `capacity` slots and its allocation counters.
struct Pool {
  explicit Pool(std::size_t capacity) : slots(capacity, TestAllocator{counters}) {}
  std::shared_ptr<Counters> counters = std::make_shared<Counters>();
  Slots slots;
};

/// Claims a slot of `size` bytes and hands it back busy until `fence`; returns its memory id.
int use(Slots& slots, std::size_t size, const TestFence& fence) {
  auto slot = slots.claim(size);
  slot.busy_until(fence);
  return slot.memory().id();
}

TEST(StagingSlots, RejectsAPoolWithoutSlots) {
  EXPECT_THROW(Slots(0, TestAllocator{std::make_shared<Counters>()}), stoke::UsageError);
}

TEST(StagingSlots, ReserveAllocatesEverySlotSoLaterClaimsAllocateNothing) {
  Pool pool(3);
  pool.slots.reserve(64);
  EXPECT_EQ(pool.slots.allocated(), 3u);
  EXPECT_EQ(pool.counters->allocations, 3);
  // Three copies in flight at once, each of at most the reserved size: no new allocation.
  std::vector<TestFence> fences;
  std::vector<int> ids;
  for (int i = 0; i < 3; ++i) {
    fences.push_back(TestFence::pending());
    ids.push_back(use(pool.slots, 64, fences.back()));
  }
  EXPECT_EQ(pool.counters->allocations, 3);
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<int>{1, 2, 3}));
  for (auto& fence : fences) fence.signal();
}

TEST(StagingSlots, AllocatesOnlyWhenNoSlotIsReadyAndNeverMoreThanCapacity) {
  Pool pool(3);
  EXPECT_EQ(pool.slots.capacity(), 3u);
  EXPECT_EQ(pool.slots.allocated(), 0u);
  // Copies that complete at once: one slot is enough.
  for (int i = 0; i < 5; ++i) EXPECT_EQ(use(pool.slots, 8, TestFence{}), 1);
  EXPECT_EQ(pool.counters->allocations, 1);
  // Copies still in flight: a fresh slot each, up to the capacity.
  std::vector<TestFence> fences;
  for (int i = 0; i < 3; ++i) {
    fences.push_back(TestFence::pending());
    use(pool.slots, 8, fences.back());
  }
  EXPECT_EQ(pool.slots.allocated(), 3u);
  EXPECT_EQ(pool.counters->allocations, 3);
  // All busy: a fourth claim reuses the oldest, once its copy is done.
  Flag claimed;
  std::thread claimer([&] {
    use(pool.slots, 8, TestFence{});
    claimed.set();
  });
  EXPECT_TRUE(fences[0].waited_on_by(1));
  fences[0].signal();
  EXPECT_TRUE(claimed.set_within(patience));
  for (const TestFence& fence : fences) fence.signal();
  claimer.join();
  EXPECT_EQ(pool.slots.allocated(), 3u);
  EXPECT_EQ(pool.counters->allocations, 3);
}

TEST(StagingSlots, DoesNotHandOutASlotBeforeItsCopysFenceSignalled) {
  Pool pool(1);
  const TestFence copy = TestFence::pending();
  const int first = use(pool.slots, 8, copy);
  std::atomic<bool> claimed{false};
  bool copy_done_when_claimed = false;
  int second = 0;
  std::thread claimer([&] {
    auto slot = pool.slots.claim(8);
    copy_done_when_claimed = copy.ready();
    second = slot.memory().id();
    claimed = true;
  });
  // The claimer waits for the copy's fence, which only `signal` ends.
  ASSERT_TRUE(copy.waited_on_by(1));
  EXPECT_FALSE(claimed);
  copy.signal();
  claimer.join();
  EXPECT_TRUE(copy_done_when_claimed);
  EXPECT_EQ(second, first);  // the same staging memory, reused once its copy completed
  EXPECT_EQ(pool.counters->allocations, 1);
}

TEST(StagingSlots, WaitsForTheOldestBusySlotWhenAllAreBusy) {
  Pool pool(2);
  const TestFence older = TestFence::pending();
  const TestFence newer = TestFence::pending();
  const int first = use(pool.slots, 8, older);
  const int second = use(pool.slots, 8, newer);
  ASSERT_NE(first, second);
  std::atomic<int> claimed{0};
  std::thread claimer([&] { claimed = use(pool.slots, 8, TestFence{}); });
  EXPECT_TRUE(older.waited_on_by(1));
  EXPECT_EQ(newer.waiters(), 0u);
  // Too late: the claim already chose the oldest, and waits in its fence, which only
  // `older.signal()` ends.
  newer.signal();
  EXPECT_EQ(claimed, 0);
  older.signal();
  claimer.join();
  EXPECT_EQ(claimed, first);
}

TEST(StagingSlots, PrefersAReadySlotThatIsBigEnough) {
  Pool pool(2);
  {
    auto small = pool.slots.claim(4);
    auto big = pool.slots.claim(16);
    EXPECT_EQ(small.memory().bytes, 4u);
    EXPECT_EQ(big.memory().bytes, 16u);
  }
  {
    auto slot = pool.slots.claim(10);
    EXPECT_EQ(slot.memory().bytes, 16u);
  }
  EXPECT_EQ(pool.counters->allocations, 2);
  // With no ready slot big enough, a ready one grows: its memory is replaced.
  {
    auto slot = pool.slots.claim(32);
    EXPECT_EQ(slot.memory().bytes, 32u);
  }
  EXPECT_EQ(pool.counters->allocations, 3);
  EXPECT_EQ(pool.counters->live, 2);
}

TEST(StagingSlots, BlocksWhileEverySlotIsClaimedByAnotherThread) {
  Pool pool(1);
  Flag claimed;
  std::thread claimer;
  {
    auto held = pool.slots.claim(8);
    claimer = std::thread([&] {
      use(pool.slots, 8, TestFence{});
      claimed.set();
    });
    // The claim waits inside the pool, where nothing outside it shows: it must not end while
    // the slot is held, and is given 50 ms to show otherwise (the wait ends if it does).
    EXPECT_FALSE(claimed.set_within(50ms));
  }
  claimer.join();
  EXPECT_TRUE(claimed.is_set());
  EXPECT_EQ(pool.slots.allocated(), 1u);
}

TEST(StagingSlots, AClaimEndedWithoutAFenceLeavesTheSlotReady) {
  Pool pool(1);
  const TestFence copy = TestFence::pending();
  use(pool.slots, 8, copy);
  copy.signal();
  {
    auto failed = pool.slots.claim(8);
  }  // as when filling throws: nothing new uses it
  EXPECT_EQ(use(pool.slots, 8, TestFence{}), 1);
  EXPECT_EQ(pool.counters->allocations, 1);
}

TEST(StagingSlots, AFailedAllocationLeavesThePoolUsable) {
  Pool pool(1);
  pool.counters->fail = true;
  EXPECT_THROW((void)pool.slots.claim(8), std::bad_alloc);
  EXPECT_EQ(pool.slots.allocated(), 0u);
  pool.counters->fail = false;
  EXPECT_EQ(use(pool.slots, 8, TestFence{}), 1);
  EXPECT_EQ(pool.slots.allocated(), 1u);
  // Growing a slot frees its old memory first; if the new allocation fails, the slot
  // holds none and is free again.
  pool.counters->fail = true;
  EXPECT_THROW((void)pool.slots.claim(64), std::bad_alloc);
  EXPECT_EQ(pool.slots.allocated(), 0u);
  EXPECT_EQ(pool.counters->live, 0);
  pool.counters->fail = false;
  {
    auto slot = pool.slots.claim(64);
    EXPECT_EQ(slot.memory().bytes, 64u);
  }
  EXPECT_EQ(pool.slots.allocated(), 1u);
}

TEST(StagingSlots, AFailedCopyIsRethrownByClaimsAndTheSlotIsHandedBack) {
  Pool pool(1);
  const TestFence copy = TestFence::pending();
  use(pool.slots, 8, copy);
  copy.signal("the copy failed");
  EXPECT_THROW((void)pool.slots.claim(8), stoke::Error);
  // Handed back as it was, not left claimed (which would block this claim for ever).
  EXPECT_THROW((void)pool.slots.claim(8), stoke::Error);
  EXPECT_EQ(pool.slots.allocated(), 1u);
  pool.slots.wait_idle();  // a failed copy no longer uses the memory
}

TEST(StagingSlots, HandsEachSlotToOneThreadAtATimeAndOnlyAfterItsCopy) {
  constexpr int threads = 4;
  constexpr int uploads = 200;
  Pool pool(2);
  // A copy engine: signals the fences handed to it, in order, each once the next copy is
  // queued, so that claims find both slots busy and wait. With one uploader left, whose claim
  // may wait for the one copy queued, it signals each at once.
  std::mutex mutex;
  std::condition_variable queued;
  std::deque<TestFence> copies;
  int uploading = threads;
  bool stop = false;
  std::thread engine([&] {
    for (;;) {
      std::unique_lock lock(mutex);
      queued.wait(lock,
                  [&] { return stop || copies.size() >= 2 || (!copies.empty() && uploading < 2); });
      if (copies.empty()) return;
      const TestFence fence = std::move(copies.front());
      copies.pop_front();
      lock.unlock();
      fence.signal();
    }
  });
  std::atomic<int> violations{0};
  std::vector<std::thread> uploaders;
  for (int t = 0; t < threads; ++t) {
    uploaders.emplace_back([&] {
      for (int i = 0; i < uploads; ++i) {
        auto slot = pool.slots.claim(8);
        Cell& cell = *slot.memory().cell;
        if (cell.in_use.exchange(true) || !cell.last_copy.ready()) ++violations;
        const TestFence copy = TestFence::pending();
        cell.last_copy = copy;
        cell.in_use = false;
        slot.busy_until(copy);
        {
          std::lock_guard lock(mutex);
          copies.push_back(copy);
        }
        queued.notify_one();
      }
      {
        std::lock_guard lock(mutex);
        --uploading;
      }
      queued.notify_one();
    });
  }
  for (std::thread& uploader : uploaders) uploader.join();
  {
    std::lock_guard lock(mutex);
    stop = true;
  }
  queued.notify_one();
  engine.join();
  pool.slots.wait_idle();
  EXPECT_EQ(violations, 0);
  EXPECT_LE(pool.slots.allocated(), 2u);
  EXPECT_LE(pool.counters->allocations, 2);
}

}  // namespace
