#pragma once
// What the storage servers' fixture (storage_servers.py) wrote: its addresses, key pair and files.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <stoke/core/read_file.hpp>
#include <stoke/storage.hpp>
#include <stoke/storage/remote/remote_stores.hpp>

namespace stoke_storage_test {

/// The servers of this ctest run; `skip` says why there are none.
struct Servers {
  nlohmann::json json;
  std::string skip;

  [[nodiscard]] std::string operator[](const char* name) const {
    return json.at(name).get<std::string>();
  }

  /// The key pair of the test server.
  [[nodiscard]] stoke::storage::AwsSettings settings(const char* endpoint = "s3") const {
    stoke::storage::AwsSettings settings;
    settings.access_key_id = (*this)["access_key"];
    settings.secret_access_key = (*this)["secret_key"];
    settings.endpoint = (*this)[endpoint];
    return settings;
  }

  /// The bytes of the local copy of `key`.
  [[nodiscard]] std::vector<std::byte> local(const std::string& key) const {
    return stoke::read_whole_file<std::byte>(std::filesystem::path((*this)["data"]) / key, "test");
  }
};

/// The fixture's servers.json (read once).
inline const Servers& servers() {
  static const Servers found = [] {
    const std::filesystem::path root = STOKE_STORAGE_SERVERS;
    Servers s;
    if (std::ifstream skip(root / "skip.txt"); skip) {
      std::getline(skip, s.skip);
    } else if (std::ifstream in(root / "servers.json"); in) {
      s.json = nlohmann::json::parse(in);
    } else {
      s.skip = "no storage servers at " + root.string() +
               " (the CTest fixture stoke_storage_servers starts them)";
    }
    return s;
  }();
  return found;
}

}  // namespace stoke_storage_test

/// Skips the test, saying why, where the fixture started no servers.
#define STOKE_REQUIRE_SERVERS()                           \
  do {                                                    \
    if (!stoke_storage_test::servers().skip.empty()) {    \
      GTEST_SKIP() << stoke_storage_test::servers().skip; \
    }                                                     \
  } while (false)
