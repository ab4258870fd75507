// Several ranks of one node reading `.npy` shards through one node cache
// (stoke_mpi_node_cache --dir DIR [--shards N]): the manifest is fetched once for the node,
// each rank fetches only shards its share reads (RankSplit::by_shards), the node fetches at most
// 1.05x the shards its ranks read in an epoch, and nothing on an epoch the cache holds. The
// "remote" store is a folder seen through a store that is not a LocalStore (so it is cached as
// S3 is), which records what this rank asked of it.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <stoke/data/sources/stored_arrays.hpp>
#include <stoke/dist/mpi_group.hpp>
#include <stoke/dist/run_rank.hpp>
#include <stoke/stoke.hpp>
#include <stoke/storage/cached_store.hpp>

#include "args.hpp"
#include "npy_files.hpp"
#include "stoke_test_support.hpp"

namespace {

constexpr std::size_t kRowValues = 4, kBatch = 8;

/// Throws unless `condition`: `run_rank` ends the job with `what`.
void check(bool condition, const std::string& what) {
  if (!condition) throw std::runtime_error("check failed: " + what);
}

/// A folder as a store that is not a `LocalStore`, recording the objects read whole.
class RecordingFolder final : public stoke::storage::ByteStore {
 public:
  explicit RecordingFolder(std::filesystem::path root) : files_(std::move(root)) {}
  std::vector<stoke::storage::ObjectInfo> list(std::string_view prefix) const override {
    return files_.list(prefix);
  }
  stoke::storage::ObjectInfo stat(std::string_view key) const override { return files_.stat(key); }
  std::string describe(std::string_view key) const override {
    return "node-test://" + std::string(key);
  }
  /// The keys read whole so far.
  [[nodiscard]] std::set<std::string> read_keys() const {
    const std::lock_guard lock(mutex_);
    return keys_;
  }

 protected:
  std::vector<std::byte> read_object(std::string_view key,
                                     const stoke::storage::FetchContext& context) const override {
    {
      const std::lock_guard lock(mutex_);
      keys_.insert(std::string(key));
    }
    return files_.read(key, context);
  }
  std::vector<std::byte> read_object_range(
      std::string_view key, std::uint64_t offset, std::uint64_t length,
      const stoke::storage::FetchContext& context) const override {
    return files_.read_range(key, offset, length, context);
  }

 private:
  stoke::storage::LocalStore files_;
  mutable std::mutex mutex_;
  mutable std::set<std::string> keys_;
};

/// Each row's first value, as a row index (the shards count rows up from 0 across them).
struct RowIndices {
  template <class Device>
  stoke::testing::ItemsBatch<Device> batch(std::vector<stoke::ArrayRow<float>> rows,
                                           const Device& device) const {
    std::vector<std::size_t> out;
    for (const auto& row : rows) out.push_back(static_cast<std::size_t>(row.values[0]));
    return {std::move(out), device};
  }
};

/// Writes `shards` shards of 20 to 31 rows under `source/npy/`, and their manifest.
void write_dataset(const std::filesystem::path& source, std::size_t shards) {
  std::filesystem::create_directories(source / "npy");
  std::vector<std::string> keys;
  std::size_t row = 0;
  for (std::size_t k = 0; k < shards; ++k) {
    const std::size_t rows = 20 + (k * 7) % 12;
    std::vector<float> values;
    for (std::size_t r = 0; r < rows; ++r, ++row)
      values.insert(values.end(), kRowValues, float(row));
    const auto* first = reinterpret_cast<const std::uint8_t*>(values.data());
    const stoke::testing::FileBytes data(first, first + values.size() * sizeof(float));
    char name[32];
    std::snprintf(name, sizeof name, "npy/part-%02zu.npy", k);
    keys.push_back(name);
    const auto bytes =
        stoke::testing::npy_file(stoke::testing::npy_header("<f4", {rows, kRowValues}), data);
    stoke::write_file_atomically(source / name, stoke::testing::file_bytes(bytes));
  }
  const stoke::storage::LocalStore local(source);
  stoke::write_file_atomically(source / "manifest.json",
                               stoke::make_npy_manifest(local, keys).to_json().dump());
}

/// The shards of the rows of one epoch of `share`, and checks that `store` fetched only those.
template <class Loader>
std::set<std::size_t> read_epoch(Loader& share, const std::vector<std::size_t>& begins) {
  std::set<std::size_t> shards;
  for (auto& batch : share.iter()) {
    for (const std::size_t row : batch.data.items) {
      shards.insert(static_cast<std::size_t>(std::upper_bound(begins.begin(), begins.end(), row) -
                                             begins.begin()) -
                    1);
    }
  }
  return shards;
}

}  // namespace

int main(int argc, char** argv) {
  stoke::dist::MpiEnvironment environment(argc, argv);
  stoke::dist::MpiGroup group(environment);
  return stoke::dist::run_rank(group, [&] {
    const std::filesystem::path dir = stoke::testing::option(argc, argv, "--dir", "");
    const std::size_t shard_count = stoke::testing::number_option(argc, argv, "--shards", 12);
    check(!dir.empty(), "usage: --dir DIR [--shards N]");
    if (group.rank() == 0) {
      std::filesystem::remove_all(dir);
      write_dataset(dir / "source", shard_count);
    }
    group.barrier();

    auto folder = std::make_shared<RecordingFolder>(dir / "source");
    auto cache = std::make_shared<stoke::storage::NodeCache>(
        stoke::storage::NodeCacheOptions{dir / "cache", std::uint64_t{1} << 30});
    auto store = std::make_shared<stoke::storage::CachedStore>(folder, cache);
    const std::vector<std::byte> manifest_bytes = store->read("manifest.json");
    const auto manifest = stoke::ArrayManifest::from_json(
        nlohmann::json::parse(std::string(reinterpret_cast<const char*>(manifest_bytes.data()),
                                          manifest_bytes.size())),
        store->describe("manifest.json"));
    const stoke::ShardedArrays<float> arrays(manifest.keys(),
                                             stoke::stored_npy_format(store, manifest),
                                             {.resident = 3, .io_threads = 1});
    auto loader = stoke::DataLoaderBuilder<stoke::cpu::Backend, RowIndices>({})
                      .batch_size(kBatch)
                      .shuffle_shards(11)
                      .remainder(stoke::Remainder::pad)
                      .num_workers(2)
                      .build(arrays);
    auto share = stoke::rank_share(loader, group.rank(), group.size(), stoke::RankSplit::by_shards);

    // Epoch 0: this rank fetches only shards its share reads (and, once per node, the manifest).
    const std::set<std::size_t> read = read_epoch(share, arrays.shard_begins());
    for (const std::string& key : folder->read_keys()) {
      const auto k = static_cast<std::size_t>(
          std::ranges::find(manifest.shards, key, &stoke::StoredShard::key) -
          manifest.shards.begin());
      check(key == "manifest.json" || read.contains(k), "rank " + std::to_string(group.rank()) +
                                                            " fetched " + key +
                                                            ", which its share does not read");
    }
    std::vector<std::uint64_t> read_by_node(shard_count + 1, 0);
    for (const std::size_t k : read) read_by_node[k] = 1;
    read_by_node[shard_count] = cache->stats().fetches;
    group.all_reduce_sum(std::span(read_by_node));
    group.barrier();
    std::uint64_t shard_bytes = 0;
    for (std::size_t k = 0; k < shard_count; ++k) {
      if (read_by_node[k] > 0) shard_bytes += manifest.shards[k].bytes;
    }
    const stoke::storage::NodeCacheTotals first = cache->totals();
    const std::uint64_t manifest_size = manifest_bytes.size();
    check(first.fetched_bytes <= manifest_size + shard_bytes * 105 / 100,
          "the node fetched " + std::to_string(first.fetched_bytes) + " bytes for " +
              std::to_string(shard_bytes) + " bytes of shards its ranks read and a manifest of " +
              std::to_string(manifest_size));
    check(first.fetches == read_by_node[shard_count] && first.fetches <= shard_count + 1,
          "the node's fetches (" + std::to_string(first.fetches) + ") are not its ranks' (" +
              std::to_string(read_by_node[shard_count]) + ")");

    // Epoch 1: the shards are dealt anew, and every one is in the cache: nothing is fetched.
    (void)read_epoch(share, arrays.shard_begins());
    group.barrier();
    const stoke::storage::NodeCacheTotals second = cache->totals();
    check(second.fetched_bytes == first.fetched_bytes,
          "epoch 1, which the cache holds, fetched " +
              std::to_string(second.fetched_bytes - first.fetched_bytes) + " bytes");
    if (group.rank() == 0) {
      std::printf(
          "stoke_mpi_node_cache: %zu ranks: epoch 0 fetched %llu bytes in %zu objects for "
          "%llu bytes of shards read and a %llu-byte manifest; epoch 1 fetched 0\n",
          group.size(), static_cast<unsigned long long>(first.fetched_bytes), first.fetches,
          static_cast<unsigned long long>(shard_bytes),
          static_cast<unsigned long long>(manifest_size));
    }
  });
}
