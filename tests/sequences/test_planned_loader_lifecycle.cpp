// A planned loader's life around its process, as any loader's: a child forked while its workers
// plan and pack starts workers of its own and loads whole epochs (the plan's caches are free in
// the child), and the epoch begun before the fork is refused there.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include <stoke/stoke.hpp>

#include "planned_loader.hpp"
#include "sanitizers.hpp"
#include "token_corpus.hpp"

namespace {

/// The planned batches of one whole epoch of `loader`, in order.
std::vector<std::size_t> planned_epoch(stoke::testing::PlannedLoader& loader) {
  std::vector<std::size_t> planned;
  for (auto& batch : loader.iter()) planned.push_back(batch.indices.at(0));
  return planned;
}

/// A first-fit plan of 3000 documents in windows of 16: many windows to plan and pack.
stoke::testing::PlanShape busy_shape() {
  stoke::testing::PlanShape shape;
  shape.lengths = stoke::testing::random_lengths(3000, 60, 21);
  for (auto& length : shape.lengths) length = std::max<std::int32_t>(length, 1);
  shape.kind = stoke::testing::PlanKind::first_fit;
  shape.sequence_length = 64;
  shape.rows = 2;
  shape.window = 16;
  return shape;
}

TEST(PlannedLoaderFork, AChildForkedWhileWorkersPlanLoadsWholeEpochsOfItsOwn) {
  if (stoke::testing::under_thread_sanitizer) {
    GTEST_SKIP() << "ThreadSanitizer's runtime may deadlock a child forked while threads run";
  }
  const auto shape = busy_shape();
  const stoke::testing::TokenCorpus corpus(shape.lengths);
  auto loader = stoke::testing::planned_loader(shape, corpus, 2);
  std::vector<std::size_t> expected(loader.batcher().epoch_batches(0));
  std::iota(expected.begin(), expected.end(), 0);
  for (int fork = 0; fork < 5; ++fork) {
    loader.set_epoch(0);
    auto range = loader.iter();
    auto it = range.begin();  // the workers plan and pack ahead while the process forks
    const pid_t pid = ::fork();
    if (pid == 0) {
      bool ok = false;
      try {
        ++it;  // the epoch begun in the parent: its workers are not here
      } catch (const stoke::StateError& error) {
        ok = std::string(error.what()).find("fork") != std::string::npos;
      }
      loader.set_epoch(0);
      ok = ok && planned_epoch(loader) == expected;  // new workers, the same plan
      ::_exit(ok ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "fork " << fork;
    std::vector<std::size_t> seen{it->indices.at(0)};
    for (++it; it != range.end(); ++it) seen.push_back(it->indices.at(0));
    EXPECT_EQ(seen, expected) << "the parent's epoch goes on untouched";
  }
}

}  // namespace
