// A loader's life around its process: a consumer's wait interrupted (and resumed without a
// lost batch), waits with a deadline, close(), a fork with workers alive, and churn.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <fstream>
#include <functional>
#include <future>
#include <iostream>
#include <memory>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include <stoke/stoke.hpp>

#include "sanitizers.hpp"
#include "stoke_test_support.hpp"
#include "test_sync.hpp"

namespace {

using stoke::testing::baseline_thread_count;
using stoke::testing::epoch_items;
using stoke::testing::GatedDataset;
using stoke::testing::IotaDataset;
using stoke::testing::items_builder;
using stoke::testing::patience;
using stoke::testing::thread_count;
using Clock = std::chrono::steady_clock;

std::vector<std::size_t> iota(std::size_t count) {
  std::vector<std::size_t> out(count);
  for (std::size_t i = 0; i < count; ++i) out[i] = i;
  return out;
}

/// The samples of the batches `range` hands out from its current wait on.
template <class Range>
std::vector<std::size_t> rest_of(Range& range) {
  std::vector<std::size_t> out;
  for (auto& batch : range) out.insert(out.end(), batch.data.items.begin(), batch.data.items.end());
  return out;
}

/// Milliseconds from `start` to now.
double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

TEST(LoaderInterrupt, EndsAWaitPromptlyAndTheNextWaitTakesTheSameBatch) {
  const GatedDataset dataset{.count = 40, .gated_from = 8};  // step 2 of batches of 4 waits
  auto loader = items_builder().batch_size(4).num_workers(2).build(dataset);
  auto range = loader.iter();
  std::vector<std::size_t> seen;
  auto it = range.begin();
  for (; it != range.end() && it->step < 1; ++it) {
    seen.insert(seen.end(), it->data.items.begin(), it->data.items.end());
  }
  seen.insert(seen.end(), it->data.items.begin(), it->data.items.end());  // step 1
  Clock::time_point interrupted_at;
  std::thread interrupter([&] {
    ASSERT_TRUE(dataset.reached->set_within(patience));  // step 2 waits at the gate
    interrupted_at = Clock::now();
    range.interrupt();
  });
  EXPECT_THROW(++it, stoke::InterruptedError);
  interrupter.join();
  EXPECT_LT(ms_since(interrupted_at), 100.0) << "the wait did not end promptly";
  dataset.gate->open();
  const std::vector<std::size_t> rest = rest_of(range);  // begin() waits for step 2 again
  seen.insert(seen.end(), rest.begin(), rest.end());     // nothing was lost
  EXPECT_EQ(seen, iota(40));
  EXPECT_EQ(epoch_items(loader), iota(40));  // and the loader serves the next epoch
}

TEST(LoaderInterrupt, AnInterruptBeforeTheWaitEndsTheNextWait) {
  const GatedDataset dataset{.count = 8, .gated_from = 0};
  auto loader = items_builder().batch_size(4).num_workers(1).build(dataset);
  auto range = loader.iter();
  range.interrupt();
  EXPECT_THROW(range.begin(), stoke::InterruptedError);
  dataset.gate->open();
  const std::vector<std::size_t> seen = rest_of(range);
  EXPECT_EQ(seen, iota(8));
}

TEST(LoaderWaitUntil, ReturnsAtTheDeadlineWithoutTakingABatch) {
  const GatedDataset dataset{.count = 12, .gated_from = 0};
  auto loader = items_builder().batch_size(4).num_workers(2).build(dataset);
  auto range = loader.iter();
  const auto start = Clock::now();
  EXPECT_FALSE(range.wait_until(start + std::chrono::milliseconds(30)));
  EXPECT_GE(ms_since(start), 29.0);
  dataset.gate->open();
  EXPECT_TRUE(range.wait_until(Clock::now() + patience));
  const std::vector<std::size_t> seen = rest_of(range);
  EXPECT_EQ(seen, iota(12));
}

TEST(LoaderWaitUntil, TheBatchTimeoutCountsFromTheFirstWaitOfASlicedWait) {
  const GatedDataset dataset{.count = 8, .gated_from = 0};
  auto loader = items_builder()
                    .batch_size(4)
                    .num_workers(1)
                    .batch_timeout(std::chrono::milliseconds(100))
                    .build(dataset);
  auto range = loader.iter();
  const auto start = Clock::now();
  const auto wait_in_slices = [&] {
    while (!range.wait_until(Clock::now() + std::chrono::milliseconds(20))) {
      if (Clock::now() - start > patience) return;
    }
  };
  EXPECT_THROW(wait_in_slices(), stoke::TimeoutError);
  EXPECT_LT(ms_since(start), 1000.0);
  dataset.gate->open();
}

TEST(LoaderClose, JoinsTheWorkersEndsTheOpenRangeAndLetsTheLoaderStartAgain) {
  const std::size_t before = baseline_thread_count();
  auto loader = items_builder().batch_size(4).num_workers(3).build(IotaDataset{40});
  auto range = loader.iter();
  auto it = range.begin();
  ASSERT_EQ(thread_count(), before + 3);
  loader.close();
  EXPECT_EQ(thread_count(), before);
  EXPECT_FALSE(loader.workers_started());
  // Batches made before the close may still be taken; then the range says it was closed.
  const auto drain = [&] {
    for (++it; it != range.end(); ++it) {
    }
  };
  EXPECT_THROW(drain(), stoke::StateError);
  EXPECT_EQ(epoch_items(loader).size(), 40u);  // new workers
  EXPECT_EQ(thread_count(), before + 3);
}

TEST(LoaderDrop, AnotherThreadDropsALoaderMidEpochAndItsWorkersAreJoined) {
  const std::size_t before = baseline_thread_count();
  const GatedDataset dataset{.count = 4000, .gated_from = 8};  // the workers wait from step 2
  auto loader = items_builder().batch_size(4).num_workers(3).queue_depth(4).build(dataset);
  std::thread owner([moved = std::move(loader)]() mutable {
    auto range = moved.iter();
    auto it = range.begin();
    ++it;  // mid-epoch, the workers busy reading ahead; the range and the loader go here
  });
  ASSERT_TRUE(dataset.reached->set_within(patience));
  const auto start = Clock::now();
  dataset.gate->open();  // the batches in flight end; the drop waits for them only
  owner.join();
  EXPECT_EQ(thread_count(), before);
  EXPECT_LT(ms_since(start), 1000.0) << "a drop waits for the batches in flight only";
}

/// Runs `child` in a forked child process and returns its exit code: 0 when it returned true,
/// 1 false, 2 an exception, -1 when it did not end within `patience` (then it is killed).
int in_forked_child(const std::function<bool()>& child) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    int code = 2;
    try {
      code = child() ? 0 : 1;
    } catch (...) {
    }
    ::_exit(code);  // no atexit handlers, no test framework teardown in the child
  }
  auto ended = std::async(std::launch::async, [pid] {
    int status = 0;
    ::waitpid(pid, &status, 0);
    return status;
  });
  if (ended.wait_for(patience) != std::future_status::ready) {
    ::kill(pid, SIGKILL);
    ended.wait();
    return -1;
  }
  const int status = ended.get();
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(LoaderFork, AChildStartsNewWorkersAndRefusesTheEpochBegunBeforeTheFork) {
  // The gcc, default and asan runs test this; in a CI run under ThreadSanitizer the child hung
  // in TSan's own runtime (it documents that threads started after a multithreaded fork are
  // not supported).
  if (stoke::testing::under_thread_sanitizer) {
    GTEST_SKIP() << "ThreadSanitizer's runtime may deadlock a child forked while threads run";
  }
  const GatedDataset dataset{.count = 400, .gated_from = 8};  // the workers wait from step 2
  auto loader = items_builder().batch_size(4).num_workers(2).queue_depth(4).build(dataset);
  auto range = loader.iter();
  auto it = range.begin();
  ASSERT_TRUE(dataset.reached->set_within(patience));  // busy reading ahead at the fork
  const int child = in_forked_child([&] {
    dataset.gate->open();  // for the child's own workers
    bool ok = false;
    try {
      ++it;  // the epoch begun in the parent: its workers are not here
    } catch (const stoke::StateError& error) {
      ok = std::string(error.what()).find("fork") != std::string::npos;
    }
    ok = ok && epoch_items(loader) == iota(400);  // new workers, a whole epoch
    auto copy = loader;                           // and a copy of it
    ok = ok && epoch_items(copy) == iota(400);
    return ok;  // the inherited range and pool are dropped here without a hang
  });
  EXPECT_EQ(child, 0) << "-1: the child hung; 1: wrong batches or no clear error";
  dataset.gate->open();
  std::vector<std::size_t> seen(it->data.items);
  for (++it; it != range.end(); ++it)
    seen.insert(seen.end(), it->data.items.begin(), it->data.items.end());
  EXPECT_EQ(seen, iota(400)) << "the parent's epoch goes on untouched";
}

TEST(LoaderFork, ManyForksWhileWorkersDrawFromASharedBufferPoolNeverDeadlockAChild) {
  // Workers of the parent take and give buffers of one pool all the time; a child makes a new
  // loader over the same pool. A pool mutex inherited locked would hang the child.
  if (stoke::testing::under_thread_sanitizer) {
    GTEST_SKIP() << "ThreadSanitizer's runtime may deadlock a child forked while threads run";
  }
  using Batcher = stoke::cpu::StackBatcher<float>;
  const stoke::cpu::BufferPool pool{};
  std::vector<std::vector<float>> rows(256, std::vector<float>(64, 1.0f));
  const stoke::InMemoryDataset dataset(rows);
  const auto make = [&] {
    return stoke::DataLoaderBuilder<stoke::cpu::Backend, Batcher>(Batcher{.pool = pool})
        .batch_size(2)
        .num_workers(2)
        .build(dataset);
  };
  auto busy = make();
  std::atomic<bool> stop{false};
  std::thread consumer([&] {
    while (!stop) {
      for (auto& batch : busy.iter()) (void)batch;
    }
  });
  for (int fork = 0; fork < 20; ++fork) {
    const int child = in_forked_child([&] {
      auto fresh = make();
      std::size_t batches = 0;
      for (auto& batch : fresh.iter()) batches += batch.data.rows() > 0 ? 1 : 0;
      return batches == 128;
    });
    EXPECT_EQ(child, 0) << "fork " << fork << " (-1: the child hung)";
    if (child != 0) break;
  }
  stop = true;
  consumer.join();
}

/// This process's resident memory, in bytes (/proc/self/statm).
std::size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t pages = 0;
  std::size_t resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

/// Makes and drops a loader the way `kind` says: never iterated, dropped mid-epoch, dropped with
/// a batch kept beyond it (in `held`), split into shares that are iterated in part.
void churn_one(std::size_t kind, std::vector<std::vector<std::size_t>>& held) {
  auto loader =
      items_builder().batch_size(8).num_workers(2).shuffle(kind).pad().build(IotaDataset{64});
  switch (kind % 4) {
    case 0:
      break;
    case 1: {
      auto range = loader.iter();
      auto it = range.begin();
      ++it;
      break;
    }
    case 2: {
      for (auto& batch : loader.iter()) {
        held[kind % held.size()] = std::move(batch.data.items);
        break;
      }
      break;
    }
    default: {
      auto shares = stoke::split(loader, stoke::cpu::Backend::devices(2));
      auto first = shares[0].iter();
      (void)first.begin();
      auto second = shares[1].iter();
      break;
    }
  }
}

TEST(LoaderChurn, TenThousandLoadersMadeAndDroppedLeaveNoThreadAndBoundedMemory) {
  const std::size_t threads = baseline_thread_count();
  std::vector<std::vector<std::size_t>> held(4);
  for (std::size_t i = 0; i < 200; ++i) churn_one(i, held);  // the allocator's steady state
  const std::size_t resident = resident_bytes();
  for (std::size_t i = 0; i < 10000; ++i) churn_one(i, held);
  EXPECT_EQ(thread_count(), threads);
  const double grown_mib =
      (static_cast<double>(resident_bytes()) - static_cast<double>(resident)) / (1024.0 * 1024.0);
  if (!stoke::testing::under_sanitizer) {  // a sanitizer keeps memory of its own
    EXPECT_LT(grown_mib, 8.0) << "resident memory grew by " << grown_mib << " MiB";
  }
  std::cout << "10000 loaders made and dropped: threads " << thread_count() << " (before "
            << threads << "), resident memory grew by " << grown_mib << " MiB\n";
}

}  // namespace
