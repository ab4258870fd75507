// Data in big shards, measured: (1) peak memory against the cache's bound, (2) the time a
// device waits for data per step with and without reading the next shards ahead, on a file
// system throttled to a given bandwidth and latency, and (3) the bytes all ranks read per epoch
// over the data set's bytes with the shard rank split, the interleaved split, and one cache per
// worker (what PyTorch's worker processes do). Prints its figures and `ratio <name>: <x>` lines.
//
// With --throughput it measures instead, in a process of its own, the workload of the PyTorch
// peer bench/peers/pytorch_shards.py: one rank's loader alone (2 workers, batches of 64 rows
// stacked into one float32 tensor, as PyTorch's collate does), files in the page cache, no
// throttling and no work per step; samples/s, the first batch, peak RSS, bytes read per epoch
// and whether every row came exactly once (the first value of every row is its index).
#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include <stoke/stoke.hpp>

#include "stack_rows.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Flags {
  std::filesystem::path dir = "build/shard-bench";
  std::size_t shards = 12;
  std::size_t rows = 720;         // hours per month
  std::size_t row_floats = 8192;  // 4 variables x 32 x 64
  std::size_t batch = 64;
  std::size_t ranks = 2;
  std::size_t devices = 2;
  std::size_t workers = 2;
  std::size_t resident = 3;
  double mb_per_second = 200.0;  // the throttled file system
  double latency_ms = 5.0;
  double compute_ms = 40.0;  // per step, per device
  bool throughput = false;   // the PyTorch peer's workload instead
  std::size_t epochs = 10;   // of the throughput workload
};

/// Sums the first value of every row: the batch's work stays small.
struct SumBatcher {
  double batch(std::vector<stoke::ArrayRow<float>> rows, const stoke::cpu::Device&) const {
    double sum = 0;
    for (const auto& row : rows) sum += row.values.front();
    return sum;
  }
};

/// Reads a whole file into memory (read, not mapped: one copy), throttled like a network file
/// system.
stoke::ArrayFileFormat throttled(const Flags& flags) {
  stoke::ArrayFileFormat format = stoke::npy_format();
  format.load = [flags](const std::filesystem::path& path) {
    const auto start = Clock::now();
    const stoke::ArrayInfo info = stoke::read_npy_info(path);
    auto file = std::make_shared<std::vector<std::byte>>(std::filesystem::file_size(path));
    std::ifstream in(path, std::ios::binary);
    in.read(reinterpret_cast<char*>(file->data()), static_cast<std::streamsize>(file->size()));
    const double seconds =
        flags.latency_ms / 1e3 + static_cast<double>(file->size()) / (flags.mb_per_second * 1e6);
    std::this_thread::sleep_until(start + std::chrono::duration<double>(seconds));
    const std::size_t data = info.rows() * info.row_bytes();  // the data ends the file
    return stoke::ArrayShard(path, info, std::span(*file).last(data), file);
  };
  return format;
}

/// The first value of the last row of a file (the data ends the file).
float last_row_first_value(const std::filesystem::path& path, std::size_t row_floats) {
  std::ifstream in(path, std::ios::binary);
  in.seekg(-static_cast<std::streamoff>(row_floats * sizeof(float)), std::ios::end);
  float value = -1;
  in.read(reinterpret_cast<char*>(&value), sizeof value);
  return value;
}

/// Shard s holds rows of value s, but for the first value of every row: the row's index in the
/// data set, so that a reader can check that every row came exactly once.
std::vector<std::filesystem::path> write_files(const Flags& flags) {
  std::filesystem::create_directories(flags.dir);
  std::vector<std::filesystem::path> files;
  for (std::size_t s = 0; s < flags.shards; ++s) {
    const auto path = flags.dir / ("shard_" + std::to_string(s) + ".npy");
    const stoke::ArrayInfo info{stoke::DType::f32, {flags.rows, flags.row_floats}};
    const auto last = static_cast<float>((s + 1) * flags.rows - 1);
    if (!std::filesystem::exists(path) || stoke::read_npy_info(path) != info ||
        last_row_first_value(path, flags.row_floats) != last) {
      std::vector<float> values(flags.rows * flags.row_floats, static_cast<float>(s));
      for (std::size_t r = 0; r < flags.rows; ++r) {
        values[r * flags.row_floats] = static_cast<float>(s * flags.rows + r);
      }
      stoke::save_npy(path, info, std::as_bytes(std::span(values)));
    }
    files.push_back(path);
  }
  return files;
}

auto builder(const Flags& flags, std::size_t workers) {
  return stoke::DataLoaderBuilder<stoke::cpu::Backend, SumBatcher>({})
      .batch_size(flags.batch)
      .shuffle_shards(3)
      .num_workers(workers)
      .pad();
}

/// One epoch of one rank of `flags.devices` devices, each in its own thread "computing" for
/// `compute_ms` per step; returns the mean time a step waited for its batch.
double rank_epoch_wait(const Flags& flags, const stoke::ShardedArrays<float>& data) {
  auto loader = builder(flags, flags.workers).build(data).share_by_shards(1, 0);
  auto parts = stoke::split(loader, stoke::cpu::Backend::devices(flags.devices));
  std::vector<double> waits(parts.size());
  std::vector<std::size_t> steps(parts.size());
  std::vector<std::thread> threads;
  for (std::size_t d = 0; d < parts.size(); ++d) {
    threads.emplace_back([&, d] {
      auto range = parts[d].iter();
      auto before = Clock::now();
      for (auto it = range.begin(); it != range.end(); ++it) {
        waits[d] += std::chrono::duration<double>(Clock::now() - before).count();
        ++steps[d];
        std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(flags.compute_ms));
        before = Clock::now();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  double total = 0;
  std::size_t count = 0;
  for (std::size_t d = 0; d < parts.size(); ++d) {
    total += waits[d];
    count += steps[d];
  }
  std::printf("  %zu steps per device, %.0f ms of waiting in all\n", count / parts.size(),
              total * 1e3);
  return total / static_cast<double>(count);
}

/// Bytes every rank read in one epoch, over the data set's bytes.
template <class MakeParts>
double bytes_per_epoch(const Flags& flags, const std::vector<std::filesystem::path>& files,
                       std::size_t caches_per_rank, std::size_t resident,
                       const MakeParts& make_parts) {
  double bytes = 0;
  for (std::size_t r = 0; r < flags.ranks; ++r) {
    std::vector<stoke::ShardedArrays<float>> caches;
    for (std::size_t c = 0; c < caches_per_rank; ++c) {
      caches.emplace_back(files, stoke::npy_format(),
                          stoke::ShardCacheOptions{.resident = resident, .io_threads = 0});
    }
    // The rank's shares (devices, or workers) step in lockstep, as in training.
    auto parts = make_parts(caches, r);
    using Range = decltype(parts.front().iter());
    std::vector<Range> ranges;
    std::vector<typename Range::iterator> its;
    for (auto& part : parts) ranges.push_back(part.iter());
    for (auto& range : ranges) its.push_back(range.begin());
    while (std::any_of(its.begin(), its.end(),
                       [](const auto& it) { return it != std::default_sentinel; })) {
      for (auto& it : its) {
        if (it != std::default_sentinel) ++it;
      }
    }
    for (const auto& cache : caches) bytes += static_cast<double>(cache.cache_stats().loaded_bytes);
  }
  const double data_bytes =
      static_cast<double>(flags.shards * flags.rows * flags.row_floats * sizeof(float));
  return bytes / data_bytes;
}

double peak_rss_mib() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // KiB on Linux
}

/// The resident set now (VmRSS of /proc/self/status).
double rss_now_mib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.starts_with("VmRSS:")) return std::stod(line.substr(6)) / 1024.0;  // KiB
  }
  return 0;
}

/// The PyTorch peer's workload (bench/peers/pytorch_shards.py): one rank's loader with
/// `flags.workers` workers over the mapped files, read as fast as it goes for `flags.epochs`
/// epochs; prints a summary line, which the peer's script reads (samples/s: the mean over the
/// epochs after the first), and a line for any epoch that did not bring every row once.
int throughput(const Flags& flags, const std::vector<std::filesystem::path>& files) {
  const double rss_before = rss_now_mib();
  const auto start = Clock::now();
  const stoke::ShardedArrays<float> data(files, stoke::npy_format(),
                                         {.resident = flags.resident, .io_threads = 1});
  auto loader = stoke_bench::stacked_loader(data, flags.batch, flags.workers);
  const std::size_t samples = flags.shards * flags.rows;
  double first_batch = 0;
  std::size_t batches = 0;
  std::vector<double> rates;
  bool exact = true;
  for (std::size_t epoch = 0; epoch < flags.epochs; ++epoch) {
    std::vector<std::size_t> seen(samples);
    batches = 0;
    std::size_t rows = 0;
    const auto began = Clock::now();
    for (const auto& batch : loader.iter()) {
      if (batches++ == 0 && epoch == 0) {
        first_batch = std::chrono::duration<double>(Clock::now() - start).count();
      }
      for (std::size_t i = 0; i < batch.real_size(); ++i) {
        ++seen[static_cast<std::size_t>(batch.data.row(i)[0])];
      }
      rows += batch.real_size();
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - began).count();
    const auto once = static_cast<std::size_t>(std::ranges::count(seen, std::size_t{1}));
    const auto missed = static_cast<std::size_t>(std::ranges::count(seen, std::size_t{0}));
    exact = exact && once == samples;
    rates.push_back(static_cast<double>(rows) / seconds);
    if (once != samples) {
      std::printf("  epoch %zu: rows seen once %zu, never %zu, more than once %zu\n", epoch + 1,
                  once, missed, samples - once - missed);
    }
  }
  double rate = 0;
  for (std::size_t e = rates.size() > 1 ? 1 : 0; e < rates.size(); ++e) rate += rates[e];
  rate /= static_cast<double>(rates.size() > 1 ? rates.size() - 1 : 1);
  const double data_bytes = static_cast<double>(samples * flags.row_floats * sizeof(float));
  const double bytes = static_cast<double>(data.cache_stats().loaded_bytes) /
                       static_cast<double>(flags.epochs) / data_bytes;
  std::printf(
      "stoke throughput: %.0f samples/s, first batch %.1f ms, peak RSS %.0f MiB (%.0f MiB "
      "before the loader), bytes read per epoch %.2f, exactly once %s, %zu batches an epoch\n",
      rate, first_batch * 1e3, peak_rss_mib(), rss_before, bytes, exact ? "yes" : "no", batches);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"stoke: shards read once per rank, read ahead, within a memory bound"};
  Flags flags;
  app.add_option("--dir", flags.dir, "where the shard files go")->capture_default_str();
  app.add_option("--shards", flags.shards, "files")->capture_default_str();
  app.add_option("--rows", flags.rows, "rows per file")->capture_default_str();
  app.add_option("--mbps", flags.mb_per_second, "throttled read bandwidth, MB/s")
      ->capture_default_str();
  app.add_option("--latency-ms", flags.latency_ms, "throttled read latency")->capture_default_str();
  app.add_option("--compute-ms", flags.compute_ms, "work per step per device")
      ->capture_default_str();
  app.add_flag("--throughput", flags.throughput,
               "only the PyTorch peer's workload: one rank's loader alone, unthrottled");
  app.add_option("--epochs", flags.epochs, "epochs of --throughput")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  // Shard buffers go straight to the kernel and back: glibc otherwise raises its mmap threshold
  // after the first freed shard, and keeps later freed shards in its heaps (without this the
  // peak RSS of 12 shards of 22.5 MiB at K = 3 was 229 MiB).
  mallopt(M_MMAP_THRESHOLD, 4 << 20);

  const auto files = write_files(flags);
  if (flags.throughput) {
    std::printf(
        "stoke loader alone: %zu shards of %zu rows x %zu float32, mapped (npy_format), %zu "
        "resident, 1 I/O thread; %zu workers, batches of %zu rows stacked into one tensor, "
        "shard-aware shuffle, %zu epochs\n",
        flags.shards, flags.rows, flags.row_floats, flags.resident, flags.workers, flags.batch,
        flags.epochs);
    return throughput(flags, files);
  }
  const double shard_mib =
      static_cast<double>(flags.rows * flags.row_floats * sizeof(float)) / (1 << 20);
  const double read_ms = flags.latency_ms + shard_mib * 1.048576 / flags.mb_per_second * 1e3;
  const double shard_compute_ms = static_cast<double>(flags.rows) /
                                  static_cast<double>(flags.batch * flags.devices) *
                                  flags.compute_ms;
  std::printf(
      "%zu shards of %.1f MiB; reads throttled to %.0f MB/s + %.0f ms (%.0f ms a shard); "
      "%zu devices x %zu workers, %.0f ms of work per step (%.0f ms a shard)\n",
      flags.shards, shard_mib, flags.mb_per_second, flags.latency_ms, read_ms, flags.devices,
      flags.workers, flags.compute_ms, shard_compute_ms);

  // (1) and (2): one rank; memory first, while nothing else was allocated.
  const double rss_before = peak_rss_mib();
  double wait_ahead = 0;
  {
    const stoke::ShardedArrays<float> data(files, throttled(flags),
                                           {.resident = flags.resident, .io_threads = 1});
    wait_ahead = rank_epoch_wait(flags, data);
  }
  const double rss_peak = peak_rss_mib();
  double wait_on_demand = 0;
  {
    const stoke::ShardedArrays<float> data(files, throttled(flags),
                                           {.resident = flags.resident, .io_threads = 0});
    wait_on_demand = rank_epoch_wait(flags, data);
  }
  const double bound = static_cast<double>(flags.resident) * shard_mib + 64.0;
  std::printf(
      "peak RSS %.0f MiB (%.0f MiB before the epoch); bound %zu x %.1f MiB + 64 MiB = "
      "%.0f MiB\n",
      rss_peak, rss_before, flags.resident, shard_mib, bound);
  std::printf("data wait per step: %.2f ms reading ahead, %.2f ms reading on demand\n",
              wait_ahead * 1e3, wait_on_demand * 1e3);

  // (3): bytes per epoch, all ranks together, no throttling.
  const double by_shards = bytes_per_epoch(flags, files, 1, flags.resident, [&](auto& c, auto r) {
    return stoke::split(builder(flags, 0).build(c[0]).share_by_shards(flags.ranks, r),
                        stoke::cpu::Backend::devices(flags.devices));
  });
  const double interleaved = bytes_per_epoch(flags, files, 1, flags.resident, [&](auto& c, auto r) {
    return stoke::split(builder(flags, 0).build(c[0]).share(flags.ranks, r),
                        stoke::cpu::Backend::devices(flags.devices));
  });
  // A PyTorch worker process holds its own dataset: each of a rank's workers loads the shard
  // of the batches it makes (every W-th batch of the rank), into a cache of its own.
  const double per_worker = bytes_per_epoch(flags, files, flags.workers, 1, [&](auto& c, auto r) {
    std::vector<decltype(builder(flags, 0).build(c[0]).share(flags.ranks, r))> parts;
    for (std::size_t w = 0; w < c.size(); ++w) {
      parts.push_back(builder(flags, 0).build(c[w]).share(flags.ranks, r).share(c.size(), w));
    }
    return parts;
  });
  std::printf(
      "bytes read per epoch over the data set's, %zu ranks together: shard split %.2f, "
      "interleaved split %.2f, a cache per worker (%zu workers) %.2f\n",
      flags.ranks, by_shards, interleaved, flags.workers, per_worker);

  std::printf("ratio shard_split_bytes_per_epoch: %.3f\n", by_shards);
  std::printf("ratio interleaved_split_bytes_per_epoch: %.3f\n", interleaved);
  std::printf("ratio per_worker_cache_bytes_per_epoch: %.3f\n", per_worker);
  std::printf("ratio shard_wait_ahead_over_on_demand: %.3f\n", wait_ahead / wait_on_demand);
  std::printf("ratio shard_peak_rss_over_bound: %.3f\n", rss_peak / bound);
  return 0;
}
