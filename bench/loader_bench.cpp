// What a stoke loader costs, on the workloads that bench/peers/ runs in PyTorch and libtorch:
//
//   overhead:    10^6 in-memory items (an int and a float), batch 64, copied into a
//                contiguous batch; one epoch per iteration, caller thread and 1 or 2 workers.
//   image:       100,000 records of 3x64x64 uint8 in a memory-mapped file, shuffled, batch 256,
//                stacked into normalised float32 by cpu::StackBatcher; one epoch per iteration,
//                over 0, 1 or 2 workers and 1 or 2 CPU devices (split, one consumer thread each).
//   stream_copy: the same bytes read and written by a plain sequential loop, no loader: the
//                memory-bandwidth limit of the image workload on this machine; on 1 thread
//                (stream_copy) and split between 2 (stream_copy_threads), in file order and
//                gathered in a shuffled order.
//   first_batch: a new multithread loader's first batch (with a pool of its own, and with a
//   pool shared by the loaders), and the first batch of a later epoch; the mean, and the
//   median and 90th percentile of single runs (counters median_s, p90_s). first_batch_copy:
//   the plain copy of one batch on 1 or 2 threads started for it, into fresh or reused memory.
//
// `loader_bench --peak-memory` runs none of them: it runs one image epoch and prints the peak
// growth of anonymous resident memory against the bound `queue depth x batch bytes`
// (a separate process, so no earlier benchmark's memory counts). With
// `--peak-memory --memory-json PATH` it also writes the growth over time as JSON
// (book/results/memory_timeline.json, drawn by scripts/figures).
// The image file is made on first use at $STOKE_BENCH_IMAGES (default /tmp/stoke-bench-images.u8).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <stoke/stoke.hpp>

#include "proc_status.hpp"

namespace {

constexpr std::size_t overhead_items = 1'000'000;
constexpr std::size_t overhead_batch = 64;
constexpr std::size_t image_records = 100'000;
constexpr std::size_t image_bytes = 3 * 64 * 64;
constexpr std::size_t image_batch = 256;
constexpr std::size_t image_queue_depth = 4;
constexpr float image_scale = 1.0f / 255.0f;

// ---------------------------------------------------------------------------------------------
// Workload 1: small items.

/// One small sample: a label and a value.
struct Small {
  std::int32_t label = 0;
  float value = 0.0f;
};

/// A batch of small samples as two contiguous arrays (what a collate function makes).
struct SmallBatch {
  std::vector<std::int32_t> labels;
  std::vector<float> values;
};

/// Copies the items of a batch into a `SmallBatch`.
struct ContiguousBatcher {
  SmallBatch batch(std::vector<Small> items, const stoke::cpu::Device&) const {
    SmallBatch out;
    out.labels.resize(items.size());
    out.values.resize(items.size());
    for (std::size_t i = 0; i < items.size(); ++i) {
      out.labels[i] = items[i].label;
      out.values[i] = items[i].value;
    }
    return out;
  }
};

const stoke::InMemoryDataset<Small>& small_dataset() {
  static const stoke::InMemoryDataset<Small> data = [] {
    std::vector<Small> items(overhead_items);
    for (std::size_t i = 0; i < items.size(); ++i) {
      items[i] = {static_cast<std::int32_t>(i % 10), static_cast<float>(i) * 0.5f};
    }
    return stoke::InMemoryDataset<Small>(std::move(items));
  }();
  return data;
}

/// One epoch of the small-item loader; range(0) is the number of workers, -1 the caller thread.
void overhead(benchmark::State& state) {
  const auto workers = state.range(0);
  auto builder = stoke::DataLoaderBuilder<stoke::cpu::Backend, ContiguousBatcher>({})
                     .batch_size(overhead_batch)
                     .shuffle(42)
                     .num_workers(workers < 0 ? 0 : static_cast<std::size_t>(workers))
                     .queue_depth(image_queue_depth);
  const auto run = [&](auto& loader) {
    for (auto _ : state) {
      std::size_t seen = 0;
      for (const auto& batch : loader.iter()) seen += batch.data.labels.size();
      benchmark::DoNotOptimize(seen);
    }
  };
  if (workers < 0) {
    auto loader = builder.build_batch_loader(small_dataset());
    run(loader);
  } else {
    auto loader = builder.build(small_dataset());
    run(loader);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(overhead_items));
}
BENCHMARK(overhead)->ArgName("workers")->Arg(-1)->Arg(1)->Arg(2)->UseRealTime()->Unit(
    benchmark::kMillisecond);

// ---------------------------------------------------------------------------------------------
// Workload 2: image-like records in a memory-mapped file.

std::filesystem::path image_path() {
  const char* path = std::getenv("STOKE_BENCH_IMAGES");
  return path != nullptr ? path : "/tmp/stoke-bench-images.u8";
}

/// The image file, written once (deterministic pseudo-random bytes).
const stoke::MmapRecordDataset& image_dataset() {
  static const stoke::MmapRecordDataset data = [] {
    const auto path = image_path();
    const std::uintmax_t size = image_records * image_bytes;
    std::error_code error;
    if (std::filesystem::file_size(path, error) != size) {
      std::filesystem::create_directories(std::filesystem::absolute(path).parent_path());
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      std::vector<std::uint8_t> record(image_bytes);
      std::uint64_t x = 0x9e3779b97f4a7c15ULL;
      for (std::size_t r = 0; r < image_records; ++r) {
        for (auto& byte : record) {
          x ^= x << 13;
          x ^= x >> 7;
          x ^= x << 17;
          byte = static_cast<std::uint8_t>(x);
        }
        out.write(reinterpret_cast<const char*>(record.data()),
                  static_cast<std::streamsize>(record.size()));
      }
    }
    return stoke::MmapRecordDataset(path, image_bytes);
  }();
  return data;
}

auto image_builder(std::size_t workers, stoke::cpu::BufferPool pool = {}) {
  return stoke::DataLoaderBuilder<stoke::cpu::Backend, stoke::cpu::StackBatcher<float>>(
             {.scale = image_scale, .pool = std::move(pool)})
      .batch_size(image_batch)
      .shuffle(7)
      .num_workers(workers)
      .queue_depth(image_queue_depth)
      .drop_last();
}

/// Samples of one epoch of `loader`, reading one value of every batch.
template <class L>
std::size_t consume(L& loader) {
  std::size_t seen = 0;
  float sum = 0.0f;
  for (const auto& batch : loader.iter()) {
    seen += batch.real_size();
    sum += batch.data.values()[0];
  }
  benchmark::DoNotOptimize(sum);
  return seen;
}

/// One image epoch; range(0) workers per device (0: the caller thread), range(1) CPU devices.
void image(benchmark::State& state) {
  const auto workers = static_cast<std::size_t>(state.range(0));
  const auto devices = static_cast<std::size_t>(state.range(1));
  auto loader = image_builder(workers).build(image_dataset());
  auto parts = stoke::split(loader, stoke::cpu::Backend::devices(devices));
  std::size_t samples = 0;
  for (auto _ : state) {
    if (devices == 1) {
      samples += consume(parts.front());
    } else {
      std::vector<std::size_t> seen(devices);
      std::vector<std::thread> threads;
      for (std::size_t d = 0; d < devices; ++d) {
        threads.emplace_back([&, d] { seen[d] = consume(parts[d]); });
      }
      for (auto& thread : threads) thread.join();
      for (const auto s : seen) samples += s;
    }
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(samples));
  state.SetBytesProcessed(static_cast<std::int64_t>(samples * image_bytes * (1 + sizeof(float))));
}
BENCHMARK(image)
    ->ArgNames({"workers", "devices"})
    ->Args({0, 1})
    ->Args({1, 1})
    ->Args({2, 1})
    ->Args({0, 2})
    ->Args({1, 2})
    ->Args({2, 2})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

/// The memory-bandwidth limit: the bytes of one image epoch read in file order and written as
/// normalised float32 by a plain loop into a batch-sized buffer, in this thread, no loader.
void stream_copy(benchmark::State& state) {
  const auto bytes = image_dataset().bytes();
  const auto* source = reinterpret_cast<const std::uint8_t*>(bytes.data());
  const std::size_t batches = image_records / image_batch;
  std::vector<float> out(image_batch * image_bytes);
  benchmark::DoNotOptimize(out.data());
  for (auto _ : state) {
    for (std::size_t b = 0; b < batches; ++b) {
      const std::uint8_t* from = source + b * image_batch * image_bytes;
      float* to = out.data();
      for (std::size_t k = 0; k < image_batch * image_bytes; ++k) {
        to[k] = static_cast<float>(from[k]) * image_scale + 0.0f;
      }
      benchmark::ClobberMemory();
    }
  }
  const std::size_t samples = state.iterations() * batches * image_batch;
  state.SetItemsProcessed(static_cast<std::int64_t>(samples));
  state.SetBytesProcessed(static_cast<std::int64_t>(samples * image_bytes * (1 + sizeof(float))));
}
BENCHMARK(stream_copy)->UseRealTime()->Unit(benchmark::kMillisecond);

/// The same copy on range(0) threads started per epoch, each converting a contiguous share of
/// the batches into a batch-sized buffer of its own: the bound for a loader on that many cores.
/// With range(1) = 1 each batch gathers its records in a shuffled order (one permutation of
/// the file, as a loader's epoch), so the difference to range(1) = 0 is what gathering costs.
void stream_copy_threads(benchmark::State& state) {
  const auto bytes = image_dataset().bytes();
  const auto* source = reinterpret_cast<const std::uint8_t*>(bytes.data());
  const std::size_t batches = image_records / image_batch;
  const auto threads = static_cast<std::size_t>(state.range(0));
  std::vector<std::size_t> order(image_records);
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (state.range(1) != 0) {
    std::uint64_t x = 0x2545f4914f6cdd1dULL;
    for (std::size_t i = order.size() - 1; i > 0; --i) {  // Fisher-Yates, xorshift
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      std::swap(order[i], order[x % (i + 1)]);
    }
  }
  std::vector<std::vector<float>> out(threads, std::vector<float>(image_batch * image_bytes));
  const auto copy = [&](std::size_t t) {
    for (std::size_t b = batches * t / threads; b < batches * (t + 1) / threads; ++b) {
      for (std::size_t r = 0; r < image_batch; ++r) {
        const std::uint8_t* from = source + order[b * image_batch + r] * image_bytes;
        float* to = out[t].data() + r * image_bytes;
        for (std::size_t k = 0; k < image_bytes; ++k) {
          to[k] = static_cast<float>(from[k]) * image_scale + 0.0f;
        }
      }
      benchmark::ClobberMemory();
    }
  };
  for (auto _ : state) {
    std::vector<std::thread> pool;
    for (std::size_t t = 0; t < threads; ++t) pool.emplace_back(copy, t);
    for (auto& thread : pool) thread.join();
  }
  const std::size_t samples = state.iterations() * batches * image_batch;
  state.SetItemsProcessed(static_cast<std::int64_t>(samples));
  state.SetBytesProcessed(static_cast<std::int64_t>(samples * image_bytes * (1 + sizeof(float))));
}
BENCHMARK(stream_copy_threads)
    ->ArgNames({"threads", "shuffled"})
    ->Args({2, 0})
    ->Args({2, 1})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// ---------------------------------------------------------------------------------------------
// Workload 4: time to the first batch.

using Clock = std::chrono::steady_clock;

/// The first-batch times of one repetition: each iteration's time is the manual time (so
/// Google Benchmark's figure is their mean), and the counters `median_s` and `p90_s` say
/// how they spread. The peers print the median of single runs, so the comparison uses
/// `median_s`; the mean also holds the rare run that a descheduled thread made slow.
class FirstBatchTimes {
 public:
  explicit FirstBatchTimes(benchmark::State& state) : state_(state) {}
  FirstBatchTimes(const FirstBatchTimes&) = delete;
  FirstBatchTimes& operator=(const FirstBatchTimes&) = delete;
  ~FirstBatchTimes() {
    if (seconds_.empty()) return;
    std::sort(seconds_.begin(), seconds_.end());
    state_.counters["median_s"] = seconds_[seconds_.size() / 2];
    state_.counters["p90_s"] = seconds_[seconds_.size() * 9 / 10];
  }
  /// Records one iteration that started at `start` and ends now.
  void record(Clock::time_point start) {
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    state_.SetIterationTime(seconds);
    seconds_.push_back(seconds);
  }

 private:
  benchmark::State& state_;
  std::vector<double> seconds_;
};

/// A new multithread image loader (2 workers): build, `iter()`, first batch (which the
/// workers and the waiting consumer fill together: `StackBatcher` is a `ChunkedBatcher`). Its
/// threads are joined outside the timed part. With `shared_pool:0` every loader's batcher has a
/// pool of its own, so its first batch is written to fresh memory (which the kernel zero-fills on
/// first touch); with `shared_pool:1` the loaders' batchers share one pool that outlives them
/// (as a framework making a loader per epoch or per trial would), so it is memory an earlier
/// loader used.
void first_batch_new_loader(benchmark::State& state) {
  const auto& data = image_dataset();
  const stoke::cpu::BufferPool shared;
  const bool share = state.range(1) != 0;
  FirstBatchTimes times(state);
  for (auto _ : state) {
    const auto start = Clock::now();
    {
      auto loader = image_builder(static_cast<std::size_t>(state.range(0)),
                                  share ? shared : stoke::cpu::BufferPool())
                        .build(data);
      auto range = loader.iter();
      benchmark::DoNotOptimize(range.begin()->data.values().data());
      times.record(start);
    }
  }
}
BENCHMARK(first_batch_new_loader)
    ->ArgNames({"workers", "shared_pool"})
    ->Args({2, 0})
    ->Args({2, 1})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

/// The same for the small-item loader (batch 64): what starting the loader itself costs.
void first_batch_new_loader_small(benchmark::State& state) {
  const auto& data = small_dataset();
  FirstBatchTimes times(state);
  for (auto _ : state) {
    const auto start = Clock::now();
    {
      auto loader = stoke::DataLoaderBuilder<stoke::cpu::Backend, ContiguousBatcher>({})
                        .batch_size(overhead_batch)
                        .shuffle(42)
                        .num_workers(static_cast<std::size_t>(state.range(0)))
                        .queue_depth(image_queue_depth)
                        .build(data);
      auto range = loader.iter();
      benchmark::DoNotOptimize(range.begin()->data.labels.data());
      times.record(start);
    }
  }
}
BENCHMARK(first_batch_new_loader_small)
    ->ArgName("workers")
    ->Arg(2)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

/// The first batch of a later epoch of a running loader (2 workers) whose previous epoch was
/// consumed to its end (epochs of 4 batches, so the untimed part stays short).
void first_batch_later_epoch(benchmark::State& state) {
  auto loader = image_builder(static_cast<std::size_t>(state.range(0)))
                    .build(stoke::PartialDataset(image_dataset(), 0, 4 * image_batch));
  for (const auto& batch : loader.iter()) benchmark::DoNotOptimize(batch.data.values().data());
  FirstBatchTimes times(state);
  for (auto _ : state) {
    const auto start = Clock::now();
    auto range = loader.iter();
    auto it = range.begin();
    benchmark::DoNotOptimize(it->data.values().data());
    times.record(start);
    for (++it; it != range.end(); ++it) benchmark::DoNotOptimize(it->data.values().data());
  }
}
BENCHMARK(first_batch_later_epoch)
    ->ArgName("workers")
    ->Arg(2)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

/// The plain copy of one image batch (the first 256 records, in file order) on range(0)
/// threads started for it: what a new loader's first batch is measured against. With
/// range(1) = 0 into freshly allocated memory, as a new loader's own pool gives it (the kernel
/// faults in and zero-fills each page on first touch); with range(1) = 1 into one buffer that
/// every iteration reuses, as a pool the loaders share gives it.
void first_batch_copy(benchmark::State& state) {
  const auto bytes = image_dataset().bytes();
  const auto* source = reinterpret_cast<const std::uint8_t*>(bytes.data());
  const auto threads = static_cast<std::size_t>(state.range(0));
  const bool warm = state.range(1) != 0;
  constexpr std::size_t values = image_batch * image_bytes;
  std::unique_ptr<float[]> reused(new float[values]);
  std::fill_n(reused.get(), values, 0.0f);
  FirstBatchTimes times(state);
  for (auto _ : state) {
    const auto start = Clock::now();
    std::unique_ptr<float[]> fresh(warm ? nullptr : new float[values]);  // not zero-filled
    float* out = warm ? reused.get() : fresh.get();
    const auto copy = [&](std::size_t t) {
      for (std::size_t k = values * t / threads; k < values * (t + 1) / threads; ++k) {
        out[k] = static_cast<float>(source[k]) * image_scale + 0.0f;
      }
    };
    std::vector<std::thread> pool;
    for (std::size_t t = 0; t < threads; ++t) pool.emplace_back(copy, t);
    for (auto& thread : pool) thread.join();
    benchmark::DoNotOptimize(out);
    benchmark::ClobberMemory();
    times.record(start);
  }
}
BENCHMARK(first_batch_copy)
    ->ArgNames({"threads", "warm"})
    ->Args({1, 0})
    ->Args({2, 0})
    ->Args({2, 1})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

// ---------------------------------------------------------------------------------------------
// Workload 5: peak resident memory (run as `loader_bench --peak-memory`).

/// One sample of the memory trace: milliseconds since the loader was built, RssAnon bytes.
struct MemorySample {
  double ms = 0;
  std::size_t anon = 0;
};

/// Writes the memory trace of `peak_memory` as JSON to `path`: the growth of RssAnon over
/// `before` in MiB, a sample wherever it changed (and at least every 5 ms), one per line.
void write_memory_json(const std::string& path, const std::vector<MemorySample>& trace,
                       std::size_t before, const std::vector<double>& epoch_starts, double end_ms,
                       const nlohmann::ordered_json& header) {
  const double mib = 1 << 20;
  const auto round2 = [](double x) { return std::round(x * 100) / 100; };
  std::ofstream out(path);
  out << "{\n";
  for (const auto& [key, value] : header.items()) {
    out << " " << nlohmann::json(key).dump() << ": " << value.dump() << ",\n";
  }
  out << " \"epoch_starts_ms\": " << nlohmann::json(epoch_starts).dump() << ",\n";
  out << " \"end_ms\": " << round2(end_ms) << ",\n";
  out << " \"samples_ms_mib\": [";
  const MemorySample* kept = nullptr;
  bool first = true;
  for (const MemorySample& sample : trace) {
    if (kept != nullptr && sample.anon == kept->anon && sample.ms - kept->ms < 5 &&
        &sample != &trace.back()) {
      continue;
    }
    const double growth = (static_cast<double>(sample.anon) - static_cast<double>(before)) / mib;
    out << (first ? "\n  " : ",\n  ") << nlohmann::json({round2(sample.ms), round2(growth)}).dump();
    first = false;
    kept = &sample;
  }
  out << "\n ]\n}\n";
  if (!out.flush()) throw std::runtime_error("loader_bench: cannot write " + path);
}

int peak_memory(const std::string& memory_json) {
  const auto& data = image_dataset();
  const std::size_t workers = 2;
  const std::size_t batch_bytes = image_batch * image_bytes * sizeof(float);
  const std::size_t bound = image_queue_depth * batch_bytes;
  const std::size_t slack = std::size_t{64} << 20;
  const std::size_t anon_before = proc_status_bytes("RssAnon");
  const std::size_t hwm_before = proc_status_bytes("VmHWM");
  std::atomic<bool> done = false;
  std::atomic<std::size_t> anon_peak = anon_before;
  const auto start = Clock::now();
  const auto ms_since_start = [&] {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  };
  std::vector<MemorySample> trace;  // only the sampler writes it, read after the join
  trace.reserve(std::size_t{1} << 16);
  std::thread sampler([&] {  // RssAnon has no high-water mark of its own: sample it
    while (!done.load()) {
      const std::size_t now = proc_status_bytes("RssAnon");
      if (now > anon_peak.load()) anon_peak.store(now);
      if (!memory_json.empty()) trace.push_back({ms_since_start(), now});
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  std::size_t samples = 0;
  std::vector<double> epoch_starts;
  {
    auto loader = image_builder(workers).build(data);
    for (int epoch = 0; epoch < 2; ++epoch) {
      epoch_starts.push_back(std::round(ms_since_start() * 100) / 100);
      samples += consume(loader);
    }
  }
  const double end_ms = ms_since_start();  // the loader is dropped
  if (!memory_json.empty()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the trace shows the release
  }
  done = true;
  sampler.join();
  const double mib = 1 << 20;
  const double growth = static_cast<double>(anon_peak.load() - anon_before);
  std::printf(
      "peak memory, image workload: batch %zu x %zu B as float32 (%.1f MiB per batch), queue "
      "depth %zu, %zu workers, 2 epochs, %zu samples\n",
      image_batch, image_bytes, static_cast<double>(batch_bytes) / mib, image_queue_depth, workers,
      samples);
  std::printf("anonymous RSS growth (peak RssAnon - before): %.1f MiB\n", growth / mib);
  std::printf("VmHWM growth, file pages of the mapping included: %.1f MiB\n",
              static_cast<double>(proc_status_bytes("VmHWM") - hwm_before) / mib);
  std::printf("bound depth x batch bytes: %.1f MiB; with 64 MiB of slack: %.1f MiB\n",
              static_cast<double>(bound) / mib, static_cast<double>(bound + slack) / mib);
  std::printf("figure peak_anon_growth_mib: %.3f\nfigure peak_bound_mib: %.3f\n", growth / mib,
              static_cast<double>(bound) / mib);
  std::printf("ratio image_peak_rss_over_bound_plus_64MiB: %.3f\n",
              growth / static_cast<double>(bound + slack));
  if (!memory_json.empty()) {
    const nlohmann::ordered_json header = {
        {"program", "bench/loader_bench --peak-memory --memory-json"},
        {"batch_size", image_batch},
        {"batch_mib", static_cast<double>(batch_bytes) / mib},
        {"queue_depth", image_queue_depth},
        {"workers", workers},
        {"bound_mib", static_cast<double>(bound) / mib},
        {"slack_mib", static_cast<double>(slack) / mib},
        {"peak_growth_mib", std::round(growth / mib * 100) / 100}};
    write_memory_json(memory_json, trace, anon_before, epoch_starts, end_ms, header);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--peak-memory") == 0) {
    if (argc == 4 && std::strcmp(argv[2], "--memory-json") == 0) return peak_memory(argv[3]);
    if (argc != 2) {
      std::fprintf(stderr, "usage: loader_bench --peak-memory [--memory-json PATH]\n");
      return 2;
    }
    return peak_memory({});
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
