// The node cache: its byte bound and the refusal of one too small, eviction by the plan, two
// processes sharing it, a writer SIGKILLed mid-write, a listing fetched once, a local source
// never deleted, and fork safety.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <stoke/storage.hpp>
#include <stoke/storage/cached_store.hpp>
#include <stoke/storage/node_cache.hpp>

namespace {

using stoke::storage::ByteStore;
using stoke::storage::CachedStore;
using stoke::storage::FetchContext;
using stoke::storage::LocalStore;
using stoke::storage::NodeCache;
using stoke::storage::ObjectInfo;

/// The files of a folder as a store that is not a `LocalStore` (so it is cached, as a remote
/// one is), counting what is asked of it in this process.
class FolderStore final : public ByteStore {
 public:
  explicit FolderStore(std::filesystem::path root) : files_(std::move(root)) {}
  std::vector<ObjectInfo> list(std::string_view prefix) const override {
    ++lists;
    return files_.list(prefix);
  }
  ObjectInfo stat(std::string_view key) const override { return files_.stat(key); }
  std::string describe(std::string_view key) const override { return "test://" + std::string(key); }
  mutable std::atomic<int> lists{0};
  mutable std::atomic<int> reads{0};

 protected:
  std::vector<std::byte> read_object(std::string_view key, const FetchContext& c) const override {
    ++reads;
    return files_.read(key, c);
  }
  std::vector<std::byte> read_object_range(std::string_view key, std::uint64_t offset,
                                           std::uint64_t length,
                                           const FetchContext& c) const override {
    return files_.read_range(key, offset, length, c);
  }

 private:
  LocalStore files_;
};

constexpr std::size_t object_bytes = 100;

/// Six objects `a` to `f` of 100 bytes each (byte i of object k is k + i), a cache folder, and
/// helpers; removed afterwards.
class NodeCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ =
        std::filesystem::temp_directory_path() / ("stoke_node_cache_" + std::to_string(::getpid()));
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_ / "source");
    for (char k = 'a'; k <= 'f'; ++k) {
      std::ofstream file(root_ / "source" / std::string(1, k), std::ios::binary);
      for (std::size_t i = 0; i < object_bytes; ++i) file.put(static_cast<char>(k + i));
    }
    store_ = std::make_shared<FolderStore>(root_ / "source");
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  [[nodiscard]] std::filesystem::path folder() const { return root_ / "cache"; }

  [[nodiscard]] std::shared_ptr<NodeCache> cache(std::uint64_t objects,
                                                 stoke::storage::NodeCacheHooks hooks = {}) const {
    return std::make_shared<NodeCache>(
        stoke::storage::NodeCacheOptions{folder(), objects * object_bytes}, std::move(hooks));
  }

  /// Object `k` through `cache`, checked byte for byte.
  void read(NodeCache& cache, char k) const {
    const std::vector<std::byte> bytes = cache.get(store_->describe(std::string(1, k)),
                                                   [&] { return store_->read(std::string(1, k)); });
    ASSERT_EQ(bytes.size(), object_bytes) << k;
    for (std::size_t i = 0; i < object_bytes; ++i) {
      ASSERT_EQ(bytes[i], static_cast<std::byte>(k + i)) << k << " byte " << i;
    }
  }

  [[nodiscard]] bool holds(const NodeCache& cache, char k) const {
    return cache.holds(store_->describe(std::string(1, k)));
  }

  [[nodiscard]] std::vector<std::string> names(std::string_view keys) const {
    std::vector<std::string> named;
    for (const char k : keys) named.push_back(store_->describe(std::string(1, k)));
    return named;
  }

  /// The files of the folder whose names contain `part`.
  [[nodiscard]] std::size_t files_with(std::string_view part) const {
    std::size_t count = 0;
    for (const auto& file : std::filesystem::recursive_directory_iterator(folder())) {
      if (file.path().filename().string().find(part) != std::string::npos) ++count;
    }
    return count;
  }

  std::filesystem::path root_;
  std::shared_ptr<FolderStore> store_;
};

TEST_F(NodeCacheTest, RefusesABoundBelowWhatTheReadAheadNeedsNamingTheSize) {
  const auto small = cache(3);  // 300 bytes
  const std::vector<std::uint64_t> sizes = {100, 250, 100, 120};
  // A read-ahead depth of 1 keeps 3 objects: the 3 largest are 250 + 120 + 100 = 470 bytes.
  try {
    small->require(sizes, 1, "the tar shards of test://");
    FAIL() << "a bound of 300 bytes was accepted for a read-ahead depth needing 470";
  } catch (const stoke::UsageError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("470"), std::string::npos) << message;
    EXPECT_NE(message.find("300"), std::string::npos) << message;
    EXPECT_NE(message.find(folder().string()), std::string::npos) << message;
  }
  EXPECT_NO_THROW(cache(5)->require(sizes, 1, "the same shards"));
  EXPECT_THROW(NodeCache({folder(), 0}), stoke::UsageError);
}

TEST_F(NodeCacheTest, CachedStoreRefusesAtOpenThroughPrepareReads) {
  const CachedStore cached(store_, cache(2));
  const std::vector<ObjectInfo> objects = store_->list("");
  EXPECT_THROW(cached.prepare_reads(objects, 1, "six objects"), stoke::UsageError);
  EXPECT_NO_THROW(cached.prepare_reads(objects, 0, "six objects"));
}

TEST_F(NodeCacheTest, FetchesEachObjectOnceAndStaysWithinItsBound) {
  const auto node = cache(3);
  for (const char k : std::string_view("abcabc")) read(*node, k);
  EXPECT_EQ(store_->reads, 3);
  EXPECT_EQ(node->stats().hits, 3U);
  EXPECT_EQ(node->totals().fetched_bytes, 3 * object_bytes);
  for (const char k : std::string_view("defabcdef")) {
    read(*node, k);
    EXPECT_LE(node->cached_bytes(), 3 * object_bytes) << "after " << k;
  }
  EXPECT_EQ(files_with(".tmp."), 0U);
}

TEST_F(NodeCacheTest, EvictsTheObjectNeededFurthestInTheFuture) {
  const auto node = cache(3);
  node->plan(names("abcdab"), 0);
  for (const char k : std::string_view("abc")) read(*node, k);
  // Full: reading d evicts b (next read at 5), not a (next read at 4), though a is older.
  read(*node, 'd');
  EXPECT_TRUE(holds(*node, 'a'));
  EXPECT_FALSE(holds(*node, 'b'));
  EXPECT_TRUE(holds(*node, 'd'));
  EXPECT_EQ(node->stats().evictions, 1U);
  const int before = store_->reads;
  read(*node, 'a');
  EXPECT_EQ(store_->reads, before) << "a was evicted";
}

TEST_F(NodeCacheTest, EvictsWhatNoPlanReadsAgainFirst) {
  const auto node = cache(3);
  read(*node, 'e');  // not in the plan
  node->plan(names("abcab"), 0);
  for (const char k : std::string_view("ab")) read(*node, k);
  read(*node, 'c');
  EXPECT_FALSE(holds(*node, 'e'));
  EXPECT_TRUE(holds(*node, 'a'));
  EXPECT_TRUE(holds(*node, 'b'));
}

TEST_F(NodeCacheTest, NeverEvictsWhatAnotherProcessReadsNext) {
  // Two handles on the folder stand for two processes of the node.
  const auto first = cache(3);
  const auto second = cache(3);
  first->plan(names("ab"), 1);
  read(*first, 'a');  // its cursor is at a, and it reads b next: both are kept
  read(*first, 'b');
  second->plan(names("cde"), 0);
  read(*second, 'c');
  // Full: a and b are the first's, c is the one before the second's cursor; d is not kept.
  read(*second, 'd');
  EXPECT_TRUE(holds(*second, 'a'));
  EXPECT_TRUE(holds(*second, 'b'));
  EXPECT_TRUE(holds(*second, 'c'));
  EXPECT_FALSE(holds(*second, 'd'));
  EXPECT_EQ(second->stats().not_kept, 1U);
  read(*second, 'e');  // now c may go
  EXPECT_TRUE(holds(*second, 'a'));
  EXPECT_TRUE(holds(*second, 'b'));
  EXPECT_FALSE(holds(*second, 'c'));
  EXPECT_TRUE(holds(*second, 'e'));
  EXPECT_LE(second->cached_bytes(), 3 * object_bytes);
}

TEST_F(NodeCacheTest, ForgetsTheNeedsOfAHandleClosed) {
  const auto second = cache(3);
  {
    const auto first = cache(3);
    first->plan(names("ab"), 1);
    read(*first, 'a');
    read(*first, 'b');
  }
  second->plan(names("cde"), 0);
  for (const char k : std::string_view("cde")) read(*second, k);
  EXPECT_FALSE(holds(*second, 'a'));
  EXPECT_EQ(second->stats().not_kept, 0U);
}

/// Runs `child` in a forked process; its exit status (0 when `child` returns true).
template <class Child>
int in_child(Child child) {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(child() ? 0 : 1);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

TEST_F(NodeCacheTest, TwoProcessesShareItAndFetchEachObjectOnce) {
  const auto node = cache(6);  // made before the fork: each child registers itself
  std::vector<pid_t> children;
  for (int c = 0; c < 2; ++c) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      bool right = true;
      for (const char k : std::string_view("abcdefabcdef")) {
        const auto bytes = node->get(store_->describe(std::string(1, k)),
                                     [&] { return store_->read(std::string(1, k)); });
        right = right && bytes.size() == object_bytes && bytes[1] == static_cast<std::byte>(k + 1);
      }
      ::_exit(right ? 0 : 1);
    }
    children.push_back(pid);
  }
  for (const pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
  EXPECT_EQ(node->totals().fetches, 6U);
  EXPECT_EQ(node->totals().fetched_bytes, 6 * object_bytes);
  EXPECT_EQ(files_with(".tmp."), 0U);
}

TEST_F(NodeCacheTest, RecoversFromAWriterKilledMidWrite) {
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t writer = ::fork();
  if (writer == 0) {
    const auto node = cache(3, {.mid_write = [&] {
                              (void)::write(ready[1], "x", 1);
                              for (;;) ::pause();  // killed here
                            }});
    node->plan(names("ab"), 0);
    read(*node, 'a');
    ::_exit(1);
  }
  char signal = 0;
  ASSERT_EQ(::read(ready[0], &signal, 1), 1);
  ::close(ready[0]);
  ::close(ready[1]);
  ASSERT_EQ(files_with(".tmp."), 1U) << "the writer is not mid-write";
  ::kill(writer, SIGKILL);
  int status = 0;
  ::waitpid(writer, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));

  const auto node = cache(3);  // opening recovers: the dead writer's files go
  EXPECT_EQ(files_with(".tmp."), 0U);
  EXPECT_EQ(files_with(".plan"), 0U);
  EXPECT_EQ(files_with(".alive"), 1U);  // this handle's
  EXPECT_FALSE(holds(*node, 'a'));
  read(*node, 'a');  // not blocked by the dead writer's lock, and whole
  EXPECT_EQ(node->cached_bytes(), object_bytes);
}

TEST_F(NodeCacheTest, AListingIsFetchedOncePerNode) {
  const CachedStore first(store_, cache(6));
  const CachedStore second(store_, cache(6));
  const std::vector<ObjectInfo> listed = first.list("");
  EXPECT_EQ(second.list(""), listed);
  EXPECT_EQ(listed.size(), 6U);
  EXPECT_EQ(store_->lists, 1);
}

TEST_F(NodeCacheTest, NeverCopiesOrDeletesALocalSource) {
  const CachedStore cached(std::make_shared<LocalStore>(root_ / "source"), cache(1));
  cached.plan_reads(std::vector<std::string>{"a", "b", "c"});
  for (const char k : std::string_view("abcdef")) {
    EXPECT_EQ(cached.read(std::string(1, k)).size(), object_bytes);
  }
  for (const char k : std::string_view("abcdef")) {
    EXPECT_TRUE(std::filesystem::exists(root_ / "source" / std::string(1, k))) << k;
  }
  EXPECT_EQ(cached.cache().cached_bytes(), 0U);
}

TEST_F(NodeCacheTest, ReadsThroughACachedStoreAreTheSourcesBytes) {
  const CachedStore cached(store_, cache(2));
  cached.prepare_reads(store_->list(""), 0, "six objects");
  cached.plan_reads(std::vector<std::string>{"a", "b", "c", "d", "e", "f"});
  for (const char k : std::string_view("abcdef")) {
    EXPECT_EQ(cached.read(std::string(1, k)), store_->read(std::string(1, k))) << k;
  }
  EXPECT_EQ(cached.cache().stats().fetches, 6U);
  EXPECT_LE(cached.cache().cached_bytes(), 2 * object_bytes);
}

}  // namespace
