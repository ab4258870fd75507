// Data in object storage, measured (issue #38): `.npy` shards of decoded images read by a
// stoke loader from S3 (SeaweedFS on 127.0.0.1, started by tests/storage/storage_servers.py
// with bench/storage_workload.py; scripts/storage-bench runs both), against the same shards
// read locally, through a proxy that limits the bandwidth to a link's, through one that fails
// 5% of the requests, and through a node cache; the same images as WebDataset tar shards
// (`StoredTarShards`), and token stores of about the same bytes (`StoredTokenStore`), from S3
// and through a node cache. Prints its figures, then one `target`
// line per target of the issue, met or missed and by how much.
//
// The first value of every image is its index in the data set: every run checks that each
// epoch brought every sample once, and the run with faults that it brought the samples of the
// fault-free run in the same order.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <stoke/data/sources/stored_arrays.hpp>
#include <stoke/images/stored_tar_shards.hpp>
#include <stoke/sequences/sharded_token_store.hpp>
#include <stoke/sequences/stored_token_store.hpp>
#include <stoke/stoke.hpp>
#include <stoke/storage.hpp>
#include <stoke/storage/cached_store.hpp>
#include <stoke/storage/remote/remote_stores.hpp>

#include "npy_members.hpp"
#include "pad_tokens.hpp"
#include "stack_rows.hpp"
#include "timed_store.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Flags {
  std::filesystem::path servers;  // servers.json of storage_servers.py
  std::filesystem::path cache = "build/storage-bench-cache";
  std::size_t epochs = 3;
  std::size_t batch = 64;
  std::size_t workers = 2;
  std::size_t resident = 4;
  std::size_t io_threads = 2;
  std::filesystem::path timeline_json;  // where to write the read-ahead's timeline (if set)
  double step_ms = 40;                  // the timeline's stand-in training step per batch
};

/// What one run of a loader over the shards gave.
struct Run {
  std::vector<double> rates;       // samples/s of each epoch
  double first_batch_s = 0;        // from opening the dataset to the first batch
  std::vector<std::size_t> order;  // the sample indices of every epoch, in the order they came
  bool exact = true;               // every epoch brought every sample once

  [[nodiscard]] double mean_rate(std::size_t from) const {
    double sum = 0;
    for (std::size_t e = from; e < rates.size(); ++e) sum += rates[e];
    return sum / static_cast<double>(rates.size() - from);
  }
};

/// The batcher of the benchmark's loader over `Data`: rows stacked (`.npy` shards).
template <class Data>
struct BatcherOf {
  using type = stoke_bench::StackRows;
};
/// Tar shards: their `.npy` members stacked.
template <>
struct BatcherOf<stoke::images::StoredTarShards> {
  using type = stoke_bench::StackNpyMembers;
};
/// Token stores in a store: sequences padded.
template <>
struct BatcherOf<stoke::StoredTokenStore<std::int32_t>> {
  using type = stoke_bench::PadTokens;
};
/// Token stores in files: sequences padded.
template <>
struct BatcherOf<stoke::ShardedTokenStore<std::int32_t>> {
  using type = stoke_bench::PadTokens;
};

/// Runs `epochs` epochs of a loader over `data` as fast as they go; `opened` is when the
/// dataset was opened.
template <class Data>
Run run_epochs(const Flags& flags, const Data& data, std::size_t samples, Clock::time_point opened,
               std::size_t epochs) {
  auto loader =
      stoke_bench::stacked_loader<typename BatcherOf<Data>::type>(data, flags.batch, flags.workers);
  Run run;
  for (std::size_t epoch = 0; epoch < epochs; ++epoch) {
    std::vector<std::size_t> seen(samples);
    std::size_t rows = 0;
    const auto began = Clock::now();
    for (const auto& batch : loader.iter()) {
      if (rows == 0 && epoch == 0) {
        run.first_batch_s = std::chrono::duration<double>(Clock::now() - opened).count();
      }
      for (std::size_t i = 0; i < batch.real_size(); ++i) {
        const auto index = static_cast<std::size_t>(batch.data.row(i)[0]);
        ++seen.at(index);
        run.order.push_back(index);
      }
      rows += batch.real_size();
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - began).count();
    run.rates.push_back(static_cast<double>(rows) / seconds);
    run.exact = run.exact &&
                std::ranges::count(seen, std::size_t{1}) == static_cast<std::ptrdiff_t>(samples);
  }
  return run;
}

/// The benchmark's servers, shards and their manifest.
struct Bench {
  Flags flags;
  nlohmann::json servers;
  stoke::ArrayManifest manifest;
  std::vector<stoke::StoredShard> tar_manifest;  // the same images as tar shards
  std::uint64_t tar_bytes = 0;
  std::vector<std::string> token_prefixes;  // token stores of about the same bytes
  std::uint64_t token_bytes = 0;            // of their `.bin` and `.idx` objects
  std::size_t samples = 0;
  std::uint64_t shard_bytes = 0;
  double sample_bytes = 0;

  [[nodiscard]] stoke::storage::AwsSettings settings(const std::string& endpoint) const {
    stoke::storage::AwsSettings settings;
    settings.access_key_id = servers.at("access_key").get<std::string>();
    settings.secret_access_key = servers.at("secret_key").get<std::string>();
    settings.endpoint = servers.at(endpoint).get<std::string>();
    return settings;
  }

  [[nodiscard]] std::shared_ptr<stoke::storage::S3Store> s3(const std::string& endpoint) const {
    return std::make_shared<stoke::storage::S3Store>(servers.at("bucket").get<std::string>(),
                                                     settings(endpoint));
  }

  /// A loader's run over the shards read from `store`.
  [[nodiscard]] Run remote(std::shared_ptr<const stoke::storage::ByteStore> store,
                           std::size_t epochs) const {
    const auto opened = Clock::now();
    const stoke::ShardedArrays<float> data(
        manifest.keys(), stoke::stored_npy_format(std::move(store), manifest),
        {.resident = flags.resident, .io_threads = flags.io_threads});
    return run_epochs(flags, data, samples, opened, epochs);
  }

  /// A loader's run over the tar shards read from `store`.
  [[nodiscard]] Run remote_tar(std::shared_ptr<const stoke::storage::ByteStore> store,
                               std::size_t epochs) const {
    const auto opened = Clock::now();
    const stoke::images::StoredTarShards data(
        std::move(store), tar_manifest, tar_options(),
        {.resident = flags.resident, .io_threads = flags.io_threads});
    return run_epochs(flags, data, samples, opened, epochs);
  }

  /// A loader's run over the token stores read from `store`.
  [[nodiscard]] Run remote_tokens(std::shared_ptr<const stoke::storage::ByteStore> store,
                                  std::size_t epochs) const {
    const auto opened = Clock::now();
    const stoke::StoredTokenStore<std::int32_t> data(
        std::move(store), token_prefixes,
        {.resident = flags.resident, .io_threads = flags.io_threads});
    return run_epochs(flags, data, samples, opened, epochs);
  }

  /// A loader's run over the token stores' files, mapped.
  [[nodiscard]] Run local_tokens(std::size_t epochs) const {
    std::vector<std::filesystem::path> files;
    for (const auto& prefix : token_prefixes) {
      files.push_back(std::filesystem::path(servers.at("data").get<std::string>()) / prefix);
    }
    const auto opened = Clock::now();
    const stoke::ShardedTokenStore<std::int32_t> data(
        files, {.resident = flags.resident, .io_threads = flags.io_threads});
    return run_epochs(flags, data, samples, opened, epochs);
  }

  /// The samples of the tar shards: one `.npy` member and one `.cls` member (the index).
  [[nodiscard]] static stoke::images::TarShardsOptions tar_options() {
    return {.image_extensions = {"npy"}};
  }
};

Bench open_bench(const Flags& flags) {
  Bench bench{.flags = flags};
  std::ifstream in(flags.servers);
  if (!in) throw stoke::InputError("storage_bench: cannot read " + flags.servers.string());
  bench.servers = nlohmann::json::parse(in);
  std::vector<std::string> keys;
  std::vector<std::string> tar_keys;
  for (const auto& key : bench.servers.at("keys")) {
    if (key.get<std::string>().starts_with("bench/")) keys.push_back(key.get<std::string>());
    if (key.get<std::string>().starts_with("bench-tar/")) {
      tar_keys.push_back(key.get<std::string>());
    }
    if (key.get<std::string>().starts_with("bench-tokens/")) {
      const std::string name = key.get<std::string>();
      bench.token_bytes += std::filesystem::file_size(
          std::filesystem::path(bench.servers.at("data").get<std::string>()) / name);
      if (name.ends_with(".bin")) bench.token_prefixes.push_back(name.substr(0, name.size() - 4));
    }
  }
  if (keys.empty() || tar_keys.empty() || bench.token_prefixes.empty()) {
    throw stoke::InputError("storage_bench: " + flags.servers.string() +
                            " names no bench/, bench-tar/ or bench-tokens/ shards (start the "
                            "servers with "
                            "bench/storage_workload.py)");
  }
  const stoke::storage::LocalStore local(bench.servers.at("data").get<std::string>());
  bench.manifest = stoke::make_npy_manifest(local, keys);
  for (const auto& shard : bench.manifest.shards) {
    bench.samples += shard.rows;
    bench.shard_bytes += shard.bytes;
  }
  bench.sample_bytes = static_cast<double>(bench.manifest.info(0).row_bytes());
  bench.tar_manifest = stoke::images::make_tar_manifest(local, tar_keys, Bench::tar_options());
  for (const auto& shard : bench.tar_manifest) bench.tar_bytes += shard.bytes;
  return bench;
}

/// Seconds to read one shard whole from `endpoint` with a fresh store (a new connection, as the
/// first batch has): the median of three.
double shard_transfer_s(const Bench& bench, const std::string& endpoint) {
  std::vector<double> times;
  for (int i = 0; i < 3; ++i) {
    const auto store = bench.s3(endpoint);
    const auto start = Clock::now();
    (void)store->read(bench.manifest.shards.front().key);
    times.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::ranges::sort(times);
  return times[1];
}

/// Two epochs through a fresh node cache bounded at `bytes`: the first and one the cache holds,
/// with what each fetched.
struct CachedRuns {
  Run first;                     // the first epoch
  Run held;                      // an epoch the cache holds
  double first_ratio = 0;        // bytes the first fetched over `bytes`
  std::uint64_t held_bytes = 0;  // bytes the second fetched
};

/// `read(store)` (an epoch's run over a store) twice through a fresh node cache of `bytes` in
/// front of SeaweedFS; the cache's folder is removed before and after.
template <class Read>
CachedRuns cached_runs(const Bench& bench, std::uint64_t bytes, Read read) {
  std::filesystem::remove_all(bench.flags.cache);
  auto cache = std::make_shared<stoke::storage::NodeCache>(
      stoke::storage::NodeCacheOptions{bench.flags.cache, bytes});
  const auto store = std::make_shared<stoke::storage::CachedStore>(bench.s3("s3"), cache);
  CachedRuns runs{.first = read(store)};
  const std::uint64_t first_bytes = cache->totals().fetched_bytes;
  runs.held = read(store);
  runs.held_bytes = cache->totals().fetched_bytes - first_bytes;
  runs.first_ratio = static_cast<double>(first_bytes) / static_cast<double>(bytes);
  std::filesystem::remove_all(bench.flags.cache);
  return runs;
}

/// Prints the line of `runs` over the shards `what` names.
void print_cached(const char* what, const CachedRuns& runs) {
  std::printf(
      "%s through a node cache: first epoch %.0f samples/s, fetched %.3fx the shards' bytes; an "
      "epoch the cache holds %.0f samples/s, fetched %llu bytes\n",
      what, runs.first.mean_rate(0), runs.first_ratio, runs.held.mean_rate(0),
      static_cast<unsigned long long>(runs.held_bytes));
}

/// Prints a target line: `value` against `goal` (at least, or at most), met or missed.
void target(const char* what, double value, double goal, bool at_least, const char* unit) {
  const bool met = at_least ? value >= goal : value <= goal;
  std::printf("target %s: %.3g%s (%s %.3g%s): %s", what, value, unit, at_least ? ">=" : "<=", goal,
              unit, met ? "met" : "missed");
  if (!met && goal != 0) std::printf(" by %.0f%%", 100.0 * std::abs(value - goal) / goal);
  std::printf("\n");
}

/// One epoch of the `.npy` shards from `endpoint` through a `TimedStore`, the consumer taking
/// `step_ms` (a sleep, for a training step) with each batch: every read ([shard, begin, end])
/// and every batch ([asked, got]: the consumer asked for it, and got it), in ms from opening
/// the dataset.
nlohmann::json timeline_run(const Bench& bench, const std::string& endpoint, double step_ms) {
  const auto store = std::make_shared<stoke_bench::TimedStore>(bench.s3(endpoint));
  const auto keys = bench.manifest.keys();
  const stoke::ShardedArrays<float> data(
      keys, stoke::stored_npy_format(store, bench.manifest),
      {.resident = bench.flags.resident, .io_threads = bench.flags.io_threads});
  auto loader = stoke_bench::stacked_loader<stoke_bench::StackRows>(data, bench.flags.batch,
                                                                    bench.flags.workers);
  nlohmann::json batches = nlohmann::json::array();
  auto asked = store->start();
  for (const auto& batch : loader.iter()) {
    batches.push_back({store->ms(asked), store->ms(Clock::now())});
    (void)batch;
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(step_ms));
    asked = Clock::now();
  }
  nlohmann::json reads = nlohmann::json::array();
  for (const stoke_bench::TimedRead& read : store->reads()) {
    const auto shard = std::ranges::find(keys, std::filesystem::path(read.key)) - keys.begin();
    reads.push_back({shard, read.begin_ms, read.end_ms});
  }
  return {{"endpoint", endpoint}, {"step_ms", step_ms}, {"reads", reads}, {"batches", batches}};
}

/// The read-ahead's timeline over the limited link (see `timeline_run`), with a consumer slower
/// than the link (`flags.step_ms` a batch) and with one that takes no time, as JSON at `path`
/// (drawn by book/figures/storage.py).
void write_timeline(const Bench& bench, const std::filesystem::path& path) {
  const double link = bench.servers.at("limited_s3_bytes_per_second").get<double>();
  const nlohmann::json timeline = {
      {"link_gbit", link * 8 / 1e9},
      {"shards", bench.manifest.shards.size()},
      {"shard_mib", static_cast<double>(bench.shard_bytes) / 1048576.0 /
                        static_cast<double>(bench.manifest.shards.size())},
      {"batch", bench.flags.batch},
      {"batches_per_shard", bench.manifest.shards.front().rows / bench.flags.batch},
      {"resident", bench.flags.resident},
      {"io_threads", bench.flags.io_threads},
      {"workers", bench.flags.workers},
      {"runs", nlohmann::json::array({timeline_run(bench, "limited_s3", bench.flags.step_ms),
                                      timeline_run(bench, "limited_s3", 0)})}};
  std::ofstream out(path);
  out << timeline.dump(1) << "\n";
  if (!out) throw stoke::InputError("storage_bench: cannot write " + path.string());
  for (const nlohmann::json& run : timeline.at("runs")) {
    const auto& batches = run.at("batches");
    double waited = 0;
    for (std::size_t b = 1; b < batches.size(); ++b) {
      waited += batches[b][1].get<double>() - batches[b][0].get<double>();
    }
    const double step = run.at("step_ms").get<double>();
    std::printf(
        "timeline over the link, %s: first batch %.1f ms, the epoch's %zu batches in %.0f ms, "
        "waited %.0f ms for the batches after the first\n",
        step > 0 ? ("a " + std::to_string(static_cast<int>(step)) + " ms step a batch").c_str()
                 : "no step",
        batches.front()[1].get<double>(), batches.size(), batches.back()[1].get<double>() + step,
        waited);
  }
}

int run(const Flags& flags) {
  stoke::storage::register_remote_stores();
  const Bench bench = open_bench(flags);
  const double shard_mib = static_cast<double>(bench.shard_bytes) / 1048576.0 /
                           static_cast<double>(bench.manifest.shards.size());
  std::printf(
      "%zu .npy shards of %.1f MiB (%zu images of %.0f KiB, float32), and the same images as %zu "
      "tar shards of %.1f MiB (a .npy and a .cls member each); %zu epochs a run; loader: %zu "
      "workers, batches of %zu stacked, shards shuffled, %zu resident, %zu I/O threads; S3: "
      "SeaweedFS on 127.0.0.1, 8 MiB parts, 8 at a time\n",
      bench.manifest.shards.size(), shard_mib, bench.samples, bench.sample_bytes / 1024,
      bench.tar_manifest.size(),
      static_cast<double>(bench.tar_bytes) / 1048576.0 /
          static_cast<double>(bench.tar_manifest.size()),
      flags.epochs, flags.workers, flags.batch, flags.resident, flags.io_threads);

  // Local: the same files, mapped (in the page cache after the first epoch).
  std::vector<std::filesystem::path> files;
  for (const auto& key : bench.manifest.keys()) {
    files.push_back(std::filesystem::path(bench.servers.at("data").get<std::string>()) / key);
  }
  const auto opened = Clock::now();
  const stoke::ShardedArrays<float> local_data(
      files, stoke::npy_format(), {.resident = flags.resident, .io_threads = flags.io_threads});
  const Run local = run_epochs(flags, local_data, bench.samples, opened, flags.epochs + 1);
  const double local_rate = local.mean_rate(1);
  std::printf(
      "local files:             %8.0f samples/s (epochs after the first), first batch %.1f ms\n",
      local_rate, local.first_batch_s * 1e3);

  const Run s3 = bench.remote(bench.s3("s3"), flags.epochs);
  const double shard_s = shard_transfer_s(bench, "s3");
  std::printf(
      "S3 at loopback:          %8.0f samples/s (%.0f MB/s), first batch %.1f ms, one shard's "
      "transfer %.1f ms\n",
      s3.mean_rate(0), s3.mean_rate(0) * bench.sample_bytes / 1e6, s3.first_batch_s * 1e3,
      shard_s * 1e3);

  const double link = bench.servers.at("limited_s3_bytes_per_second").get<double>();
  const Run limited = bench.remote(bench.s3("limited_s3"), flags.epochs);
  const double limited_share = limited.mean_rate(0) * bench.sample_bytes / link;
  const double limited_shard_s = shard_transfer_s(bench, "limited_s3");
  std::printf(
      "S3 over a %.2g Gbit/s link: %8.0f samples/s (%.0f MB/s, %.2f of the link), first batch "
      "%.1f ms, one shard's transfer %.1f ms\n",
      link * 8 / 1e9, limited.mean_rate(0), limited.mean_rate(0) * bench.sample_bytes / 1e6,
      limited_share, limited.first_batch_s * 1e3, limited_shard_s * 1e3);

  const Run plain = bench.remote(bench.s3("plain_s3"), flags.epochs);
  const Run faults = bench.remote(bench.s3("faults_s3"), flags.epochs);
  const bool same_order = faults.order == plain.order;
  std::printf(
      "S3 through a proxy:      %8.0f samples/s; with 5%% of requests failed or cut: %.0f "
      "samples/s (%.2f), the same samples in the same order: %s\n",
      plain.mean_rate(0), faults.mean_rate(0), faults.mean_rate(0) / plain.mean_rate(0),
      same_order ? "yes" : "NO");

  const CachedRuns cached =
      cached_runs(bench, bench.shard_bytes, [&](auto store) { return bench.remote(store, 1); });
  print_cached("S3", cached);

  const Run tar = bench.remote_tar(bench.s3("s3"), flags.epochs);
  std::printf(
      "S3 tar shards at loopback: %6.0f samples/s (%.2f of the .npy shards'), first batch %.1f "
      "ms\n",
      tar.mean_rate(0), tar.mean_rate(0) / s3.mean_rate(0), tar.first_batch_s * 1e3);
  const CachedRuns tar_cached =
      cached_runs(bench, bench.tar_bytes, [&](auto store) { return bench.remote_tar(store, 1); });
  print_cached("S3 tar shards", tar_cached);

  const Run local_tokens = bench.local_tokens(flags.epochs + 1);
  const Run tokens = bench.remote_tokens(bench.s3("s3"), flags.epochs);
  std::printf(
      "token stores, local files: %6.0f sequences/s (epochs after the first), first batch %.1f "
      "ms\n",
      local_tokens.mean_rate(1), local_tokens.first_batch_s * 1e3);
  std::printf(
      "token stores from S3 at loopback: %6.0f sequences/s (%.2f of local files), first batch "
      "%.1f ms\n",
      tokens.mean_rate(0), tokens.mean_rate(0) / local_tokens.mean_rate(1),
      tokens.first_batch_s * 1e3);
  const CachedRuns tokens_cached = cached_runs(
      bench, bench.token_bytes, [&](auto store) { return bench.remote_tokens(store, 1); });
  print_cached("token stores from S3", tokens_cached);

  const bool exact = local.exact && s3.exact && limited.exact && plain.exact && faults.exact &&
                     cached.first.exact && cached.held.exact && tar.exact &&
                     tar_cached.first.exact && tar_cached.held.exact && local_tokens.exact &&
                     tokens.exact && tokens_cached.first.exact && tokens_cached.held.exact;
  std::printf("every epoch of every run brought every sample once: %s\n", exact ? "yes" : "NO");
  target("S3 over local, loopback", s3.mean_rate(0) / local_rate, 0.9, true, "x");
  target("share of a limited link", limited_share, 0.9, true, "");
  target("first batch over one shard's transfer, loopback", s3.first_batch_s / shard_s, 1.1, false,
         "x");
  target("first batch over one shard's transfer, limited link",
         limited.first_batch_s / limited_shard_s, 1.1, false, "x");
  target("bytes fetched, first epoch, over the shards read", cached.first_ratio, 1.05, false, "x");
  target("bytes fetched, an epoch the cache holds", static_cast<double>(cached.held_bytes), 0,
         false, " B");
  target("with 5% faults over fault-free", faults.mean_rate(0) / plain.mean_rate(0), 0.8, true,
         "x");
  target("with 5% faults, same samples in the same order", same_order ? 1 : 0, 1, true, "");
  target("tar shards: bytes fetched, first epoch, over the shards read", tar_cached.first_ratio,
         1.05, false, "x");
  target("tar shards: bytes fetched, an epoch the cache holds",
         static_cast<double>(tar_cached.held_bytes), 0, false, " B");
  target("token stores from S3 over local, loopback",
         tokens.mean_rate(0) / local_tokens.mean_rate(1), 0.9, true, "x");
  target("token stores: bytes fetched, first epoch, over the stores read",
         tokens_cached.first_ratio, 1.05, false, "x");
  target("token stores: bytes fetched, an epoch the cache holds",
         static_cast<double>(tokens_cached.held_bytes), 0, false, " B");
  if (!flags.timeline_json.empty()) write_timeline(bench, flags.timeline_json);
  return exact && same_order ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"stoke: shards from object storage, against local files, a link and faults"};
  Flags flags;
  app.add_option("--servers", flags.servers, "servers.json of tests/storage/storage_servers.py")
      ->required();
  app.add_option("--cache", flags.cache, "the node cache's folder")->capture_default_str();
  app.add_option("--epochs", flags.epochs, "epochs of each run")->capture_default_str();
  app.add_option("--workers", flags.workers, "loader workers")->capture_default_str();
  app.add_option("--resident", flags.resident, "shards in memory")->capture_default_str();
  app.add_option("--io-threads", flags.io_threads, "shard cache I/O threads")
      ->capture_default_str();
  app.add_option("--timeline-json", flags.timeline_json,
                 "write the read-ahead's timeline over the link here (book/figures/storage.py)");
  app.add_option("--step-ms", flags.step_ms, "the timeline's training step a batch")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    return run(flags);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "storage_bench: %s\n", error.what());
    return 2;
  }
}
