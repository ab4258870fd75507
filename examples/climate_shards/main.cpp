// Trains a small forecaster on hourly climate-like fields stored one file per month, on several
// ranks (mpirun -np N) of several CPU devices each. With --rank-split shards every rank reads
// whole months, dealt anew every epoch, so no two ranks read the same file; each rank keeps at
// most --resident months in memory, shared by its workers and devices, and reads the next ones
// ahead in the order the epoch visits them. Windows of hours that run over a month's end are
// kept: they read the head of the next month. Prints, per rank, the months it read, the bytes,
// the cache's hits and the time each device waited for data.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <stoke/dist/group_collective.hpp>
#include <stoke/dist/mpi_group.hpp>
#include <stoke/dist/run_rank.hpp>
#include <stoke/learner.hpp>
#include <stoke/stoke.hpp>

#include "climate.hpp"
#ifdef STOKE_EXAMPLE_HDF5
#include <stoke/data/sources/hdf5.hpp>

#include "write_hdf5.hpp"
#endif

namespace {

/// The command line.
struct Flags {
  std::filesystem::path dir = "build/climate-shards";
  climate::Grid grid;
  std::size_t valid_months = 2;
  std::size_t window = 24;
  std::size_t devices = 2;
  std::size_t epochs = 3;
  std::size_t batch_size = 32;
  std::size_t workers = 1;
  std::size_t resident = 3;
  std::string rank_split = "shards";
  std::string format = "npy";
  float learning_rate = 3e-3F;
  std::uint64_t seed = 11;
};

/// How the monthly files of `format` are read, and their extension.
std::pair<stoke::ArrayFileFormat, const char*> file_format(const std::string& format) {
#ifdef STOKE_EXAMPLE_HDF5
  if (format == "hdf5") return {stoke::hdf5_format(climate::hdf5_variable), "h5"};
#endif
  (void)format;
  return {stoke::npy_format(), "npy"};
}

/// Writes the months that are missing (rank 0 only), in `flags.format`.
void write_data_set(const Flags& flags) {
  std::filesystem::create_directories(flags.dir);
  const auto [format, extension] = file_format(flags.format);
  for (std::size_t month = 0; month < flags.grid.months; ++month) {
    const auto path = climate::month_file(flags.dir, month, extension);
    const stoke::ArrayInfo info = climate::month_info(month, flags.grid);
    if (std::filesystem::exists(path) && format.info(path) == info) continue;
    const std::vector<float> values = climate::month_fields(month, flags.grid);
#ifdef STOKE_EXAMPLE_HDF5
    if (flags.format == "hdf5") {
      climate::write_hdf5(path, info, values);
      continue;
    }
#endif
    stoke::save_npy(path, info, std::as_bytes(std::span(values)));
  }
}

/// Every rank's `line`, printed by rank 0 in rank order (each rank's output would otherwise
/// reach the terminal in whatever order mpirun forwards it).
void print_in_rank_order(stoke::dist::MpiGroup& group, const std::string& line) {
  for (std::size_t r = 0; r < group.size(); ++r) {
    std::uint64_t length = group.rank() == r ? line.size() : 0;
    stoke::dist::broadcast_value(group, length, r);
    std::string text = group.rank() == r ? line : std::string(length, ' ');
    group.broadcast(std::as_writable_bytes(std::span(text.data(), text.size())), r);
    if (group.rank() == 0) std::printf("%s\n", text.c_str());
  }
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  stoke::dist::MpiEnvironment environment(argc, argv);
  stoke::dist::MpiGroup group(environment);

  CLI::App app{"stoke: a forecaster on monthly files of hourly fields, on ranks x devices"};
  Flags flags;
  app.add_option("--dir", flags.dir, "where the monthly files are (written if missing)")
      ->capture_default_str();
  app.add_option("--months", flags.grid.months, "months of data, one file each")
      ->capture_default_str();
  app.add_option("--lat", flags.grid.lat, "grid rows")->capture_default_str();
  app.add_option("--lon", flags.grid.lon, "grid columns")->capture_default_str();
  app.add_option("--valid-months", flags.valid_months, "the last months, held out")
      ->capture_default_str();
  app.add_option("--window", flags.window, "hours the forecaster sees")->capture_default_str();
  app.add_option("--devices", flags.devices, "CPU devices per rank")->capture_default_str();
  app.add_option("--epochs", flags.epochs, "epochs to train")->capture_default_str();
  app.add_option("--batch-size", flags.batch_size, "windows per batch per device")
      ->capture_default_str();
  app.add_option("--workers", flags.workers, "loader threads per device")->capture_default_str();
  app.add_option("--resident", flags.resident, "months in memory per rank at most")
      ->capture_default_str();
  app.add_option("--rank-split", flags.rank_split, "shards: whole months per rank; interleaved")
      ->check(CLI::IsMember({"shards", "interleaved"}))
      ->capture_default_str();
  app.add_option("--format", flags.format, "npy, or hdf5 (when built with stoke::hdf5)")
#ifdef STOKE_EXAMPLE_HDF5
      ->check(CLI::IsMember({"npy", "hdf5"}))
#else
      ->check(CLI::IsMember({"npy"}))
#endif
      ->capture_default_str();
  app.add_option("--seed", flags.seed, "seed of the order and the weights")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (flags.valid_months >= flags.grid.months) {
    std::cerr << "climate_shards: --valid-months must be below --months\n";
    return 2;
  }

  return stoke::dist::run_rank(group, [&] {
    const bool leader = group.rank() == 0;
    if (leader) write_data_set(flags);
    group.barrier();

    // --8<-- [start:dataset]
    // One shard per month; windows of `window + 1` consecutive hours, also across month ends.
    const auto [format, extension] = file_format(flags.format);  // npy_format() or hdf5_format()
    std::vector<std::filesystem::path> files;
    for (std::size_t m = 0; m < flags.grid.months; ++m) {
      files.push_back(climate::month_file(flags.dir, m, extension));
    }
    const auto split_at = files.end() - static_cast<std::ptrdiff_t>(flags.valid_months);
    const stoke::ShardedArrays<float> train_months({files.begin(), split_at}, format,
                                                   {.resident = flags.resident});
    const stoke::ShardedArrays<float> valid_months({split_at, files.end()}, format);
    const auto train_windows = train_months | stoke::windows(flags.window + 1, 1);
    const auto valid_windows = valid_months | stoke::windows(flags.window + 1, 1);
    // --8<-- [end:dataset]

    // --8<-- [start:loaders]
    const climate::ForecastBatcher batcher{.hours = flags.window,
                                           .variables = flags.grid.variables,
                                           .cells = flags.grid.lat * flags.grid.lon};
    using Builder = stoke::DataLoaderBuilder<stoke::cpu::Backend, climate::ForecastBatcher>;
    auto train = Builder(batcher)
                     .batch_size(flags.batch_size)
                     .shuffle_shards(flags.seed)  // month after month, in a new order each epoch
                     .num_workers(flags.workers)
                     .pad()
                     .build(train_windows);
    auto valid =
        Builder(batcher).batch_size(256).num_workers(flags.workers).pad().build(valid_windows);
    // Each rank takes whole months (or every N-th batch); the learner splits it over devices.
    const auto how =
        flags.rank_split == "shards" ? stoke::RankSplit::by_shards : stoke::RankSplit::interleaved;
    auto my_train = stoke::rank_share(train, group.rank(), group.size(), how);
    auto my_valid = stoke::rank_share(valid, group.rank(), group.size());
    // --8<-- [end:loaders]

    const std::size_t steps = my_train.num_batches() / flags.devices;
    stoke::LearnerOptions options{
        .epochs = flags.epochs,
        .log = leader ? &std::cout : nullptr,
        .make_collective = stoke::dist::make_group_collective_factory(group)};
    stoke::Learner<stoke::cpu::Backend, stoke::Mlp, stoke::Adam, stoke::CosineLr> learner(
        stoke::Mlp({batcher.features(), 64, climate::classes}, flags.seed), stoke::Adam{},
        stoke::CosineLr{.base = flags.learning_rate,
                        .minimum = flags.learning_rate / 10,
                        .total_steps = flags.epochs * steps,
                        .warmup_steps = steps / 4},
        stoke::cpu::Backend::devices(flags.devices), options);
    const stoke::FitResult result = learner.fit(my_train, my_valid);

    // --8<-- [start:report]
    const stoke::ShardCacheStats stats = train_months.cache_stats();
    std::vector<std::size_t> read;
    for (std::size_t m = 0; m < stats.shard_loads.size(); ++m) {
      if (stats.shard_loads[m] > 0) read.push_back(m);
    }
    std::vector<double> waits(flags.devices, 0.0);
    for (const auto& epoch : result.epochs) {
      for (std::size_t d = 0; d < waits.size(); ++d) waits[d] += epoch.wait_seconds.at(d);
    }
    const auto [head_rows, head_bytes] = train_months.partial_reads();
    print_in_rank_order(
        group,
        fmt::format("rank {}: read {} of {} months ({}), {:.1f} MiB in {} reads, {} rows of "
                    "window heads; cache: {} hits, {} waits, {} misses, at most {} resident; "
                    "data wait per device: {:.2f} s",
                    group.rank(), read.size(), stats.shard_loads.size(), fmt::join(read, " "),
                    static_cast<double>(stats.loaded_bytes + head_bytes) / (1 << 20), stats.loads,
                    head_rows, stats.hits, stats.waits, stats.misses, stats.max_resident,
                    fmt::join(waits, "/")));
    // Bytes all ranks read per epoch, over the training set's bytes (1: each month once).
    std::vector<double> bytes{static_cast<double>(stats.loaded_bytes + head_bytes)};
    group.all_reduce_sum(std::span(bytes));
    const double month_bytes = static_cast<double>(train_months.info().row_bytes()) *
                               static_cast<double>(train_months.size());
    // --8<-- [end:report]
    if (leader) {
      std::printf("all ranks read %.2f x the training set's bytes per epoch (%s rank split)\n",
                  bytes[0] / month_bytes / static_cast<double>(flags.epochs),
                  flags.rank_split.c_str());
      if (!result.epochs.empty()) {
        std::printf("valid accuracy: %.4f\n", result.epochs.back().valid_accuracy);
      }
    }
    return 0;
  });
}
