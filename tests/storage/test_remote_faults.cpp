// Faults between the S3 store and the server: a seeded proxy injects 503 SlowDown, stalls, cut
// bodies and resets; the same bytes come back, and exhausted retries name URL, shard, epoch, step.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <string>

#include "remote_fixture.hpp"

namespace {

using stoke::storage::S3Store;
using stoke::storage::TransferOptions;
using stoke_storage_test::servers;

/// Options that retry fast: the proxy's stalls (1.5 s) are cut off after 300 ms.
TransferOptions fast_retries() {
  TransferOptions options;
  options.part_size = 64 * 1024;
  options.concurrency = 4;
  options.stall_timeout = std::chrono::milliseconds(300);
  options.retry.attempts = 10;
  options.retry.base_delay = std::chrono::milliseconds(5);
  options.retry.max_delay = std::chrono::milliseconds(50);
  return options;
}

std::size_t injected_faults() {
  std::ifstream log(servers()["faults"]);
  std::size_t lines = 0;
  for (std::string line; std::getline(log, line);) ++lines;
  return lines;
}

TEST(RemoteFaults, TheSameBytesComeBackThroughInjectedFaults) {
  STOKE_REQUIRE_SERVERS();
  const S3Store store(servers()["bucket"], servers().settings("faulty_s3"), fast_retries(), 4);
  const std::size_t faults_before = injected_faults();
  EXPECT_EQ(store.read("big/object.bin"), servers().local("big/object.bin"));  // 32 parts
  EXPECT_EQ(store.list("shards/").size(), 12u);                                // 3 pages
  EXPECT_EQ(store.read("shards/shard-005.bin"), servers().local("shards/shard-005.bin"));
  EXPECT_GT(injected_faults(), faults_before + 3) << "the proxy injected (almost) no faults";
}

TEST(RemoteFaults, TheHttpStoreResumesThroughInjectedFaultsToo) {
  STOKE_REQUIRE_SERVERS();
  const stoke::storage::HttpStore store(servers()["faulty_http"], fast_retries());
  const std::size_t faults_before = injected_faults();
  EXPECT_EQ(store.read("big/object.bin"), servers().local("big/object.bin"));
  EXPECT_EQ(store.read("shards/shard-011.bin"), servers().local("shards/shard-011.bin"));
  EXPECT_GT(injected_faults(), faults_before + 3) << "the proxy injected (almost) no faults";
}

TEST(RemoteFaults, ExhaustedRetriesRaiseADataErrorNamingUrlShardEpochAndStep) {
  STOKE_REQUIRE_SERVERS();
  TransferOptions options = fast_retries();
  options.retry.attempts = 3;
  const S3Store store(servers()["bucket"], servers().settings("failing_s3"), options);
  const stoke::storage::FetchContext context{.shard = 7, .epoch = 2, .step = 5};
  // A range (GETs), and a whole object (whose HEAD fails first).
  for (const auto& read : {+[](const S3Store& s, const stoke::storage::FetchContext& c) {
                             (void)s.read_range("shards/shard-007.bin", 0, 1000, c);
                           },
                           +[](const S3Store& s, const stoke::storage::FetchContext& c) {
                             (void)s.read("shards/shard-007.bin", c);
                           }}) {
    try {
      read(store, context);
      FAIL() << "a transfer through a proxy that always fails succeeded";
    } catch (const stoke::DataError& error) {
      const std::string message = error.what();
      EXPECT_EQ(error.context().index, 7u);
      EXPECT_EQ(error.context().epoch, 2u);
      EXPECT_EQ(error.context().step, 5u);
      EXPECT_EQ(error.context().activity, "fetch");
      EXPECT_NE(error.context().url.find("s3://stoke/shards/shard-007.bin"), std::string::npos);
      EXPECT_NE(message.find("shard 7"), std::string::npos) << message;
      EXPECT_NE(message.find("epoch 2, step 5"), std::string::npos) << message;
      EXPECT_NE(message.find("3 times in a row"), std::string::npos) << message;
      EXPECT_EQ(message.find(servers()["secret_key"]), std::string::npos) << message;
    }
  }
}

TEST(RemoteFaults, AStalledServerTimesOutInsteadOfHanging) {
  STOKE_REQUIRE_SERVERS();
  TransferOptions options = fast_retries();
  options.retry.attempts = 2;
  const S3Store store(servers()["bucket"], servers().settings("stalling_s3"), options);
  const auto start = std::chrono::steady_clock::now();
  try {
    (void)store.read_range("shards/shard-001.bin", 0, 100, {.shard = 1});
    FAIL() << "a stalled transfer succeeded";
  } catch (const stoke::DataError& error) {
    EXPECT_NE(std::string(error.what()).find("no byte received for 300 ms"), std::string::npos)
        << error.what();
  }
  // Two stalls of 300 ms, each noticed within a second after (a loaded machine: some slack).
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(HttpStore, ReadsObjectsAndRangesFromARealHttpServer) {
  STOKE_REQUIRE_SERVERS();
  TransferOptions options;
  options.part_size = 300'000;
  options.concurrency = 3;
  const stoke::storage::HttpStore store(servers()["http"], options);
  const auto local = servers().local("big/object.bin");
  EXPECT_EQ(store.stat("big/object.bin").size, local.size());
  EXPECT_EQ(store.read("big/object.bin"), local);
  EXPECT_EQ(store.read_range("big/object.bin", 1'000'001, 99),
            std::vector<std::byte>(local.begin() + 1'000'001, local.begin() + 1'000'100));
  EXPECT_EQ(store.read("odd keys/a+b=c,d.bin"), servers().local("odd keys/a+b=c,d.bin"));
  EXPECT_THROW((void)store.list("shards/"), stoke::UsageError);
  EXPECT_THROW((void)store.read("absent.bin"), stoke::InputError);
  EXPECT_THROW(stoke::storage::HttpStore("http://user:pw@host/x"), stoke::UsageError);
}

TEST(RetryPolicy, DelaysGrowExponentiallyWithinTheirCap) {
  stoke::storage::RetryPolicy policy{.attempts = 5,
                                     .base_delay = std::chrono::milliseconds(10),
                                     .max_delay = std::chrono::milliseconds(100)};
  std::mt19937_64 random(1);
  std::chrono::milliseconds longest{0};
  for (int i = 0; i < 200; ++i) {
    EXPECT_LE(policy.delay(0, random).count(), 10);
    EXPECT_LE(policy.delay(2, random).count(), 40);
    longest = std::max(longest, policy.delay(20, random));
  }
  EXPECT_LE(longest.count(), 100);
  EXPECT_GT(longest.count(), 50);  // jitter spreads the delays up to the cap
}

}  // namespace
