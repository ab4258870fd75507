// The ways stoke batches sequences (#37), measured on token stores of 32-bit tokens (Megatron's
// .bin + .idx): pad (PadBatcher), concatenate-then-split (ConcatPlanner), first-fit and best-fit
// (FitPlanner), and buckets under a token budget (BucketPlanner). For each way it prints:
//
// - the time to the first batch, from opening the store (its index checked whole) through the
//   plan (bucket boundaries estimated from the data) to the batch's tensors (make_packed_batch);
// - real tokens per second on two threads (each a PlanShare of the plan, making every batch's
//   tensors) against a plain two-thread copy of the same number of tokens from the mapped .bin
//   into a batch-sized buffer, and the ratio;
//   and the same with the plan and a copy of the tokens only (no segment ids, positions, mask):
//   what the tensors cost beyond the plan;
// - the padding fraction over an epoch (padding slots over all slots);
// - on larger stores (--large, one or more), in a process of its own per store and way: the
//   first batch, and the peak resident anonymous memory (RssAnon: beyond the mapped files)
//   while the first --memory-batches batches are planned and made. Each store's .bin mapping is
//   advised MADV_RANDOM (documents are read in a shuffled order; without it the kernel reads
//   read_ahead_kb, 8 MB on the machine of the book, around every fault);
// - a mixture of the stores (weights 5:3:2 by samples, then by tokens): the largest deviation
//   of any source from its weight's share at every 1% of the epoch, and at every pick.
//
// It ends with one `target ...: met|missed ...` line per target of the issue. Not a test:
// scripts/sequence-bench runs it on a quiet machine and writes book/results/sequence_bench.txt.
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include <CLI/CLI.hpp>

#include <stoke/sequences.hpp>

#include "proc_status.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using Store = stoke::TokenStore<std::int32_t>;
using Planner = std::variant<stoke::ConcatPlanner, stoke::FitPlanner, stoke::BucketPlanner>;

struct Flags {
  std::filesystem::path real;                // the real corpus (prefix of an int32 store)
  std::vector<std::filesystem::path> large;  // larger stores (prefixes), for memory
  std::size_t sequence_length = 2048;        // S of the packing ways
  std::size_t rows = 8;                      // rows of a packed batch, documents of a padded one
  std::size_t budget = 65536;                // T of the bucket way (at least the longest document)
  std::size_t buckets = 8;                   // buckets estimated from the lengths
  std::size_t threads = 2;                   // threads of the throughput runs
  std::size_t tokens = 200'000'000;          // real tokens per throughput run
  std::size_t repeats = 5;                   // first-batch timings per way on the real corpus
  std::size_t memory_batches = 4096;         // batches planned and made per memory run
  std::size_t mixture_picks = 100'000;       // picks of the mixture's epoch
  std::uint64_t seed = 1;
};

enum class Way { pad, concat, first_fit, best_fit, bucket };
constexpr std::array kWays = {Way::pad, Way::concat, Way::first_fit, Way::best_fit, Way::bucket};

const char* name(Way way) {
  switch (way) {
    case Way::pad:
      return "pad";
    case Way::concat:
      return "concat";
    case Way::first_fit:
      return "first-fit";
    case Way::best_fit:
      return "best-fit";
    case Way::bucket:
      return "bucket";
  }
  return "?";
}

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

/// Where values read only to keep a copy from being optimised away go.
volatile std::int64_t sink = 0;

double mib(std::size_t bytes) {
  return static_cast<double>(bytes) / (1024.0 * 1024.0);
}

/// The total tokens of `store` (a pass over its index).
std::size_t total_tokens(const Store& store) {
  std::size_t total = 0;
  for (const std::int32_t length : store.lengths()) total += static_cast<std::size_t>(length);
  return total;
}

/// Opens the store at `prefix` and advises its .bin mapping MADV_RANDOM (see the file's comment).
Store open_store(const std::filesystem::path& prefix) {
  Store store(prefix);
  if (store.size() > 0) {
    const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
    const auto begin = reinterpret_cast<std::uintptr_t>(store.get(0).data()) / page * page;
    const std::size_t bytes = std::filesystem::file_size(stoke::token_store_paths(prefix).bin);
    (void)::madvise(reinterpret_cast<void*>(begin), bytes, MADV_RANDOM);
  }
  return store;
}

/// The store's sequence lengths, read from its mapped index on demand (nothing copied).
stoke::DocumentLengths lengths_of(const Store& store) {
  return {store.size(), [lengths = store.lengths()](std::size_t i) {
            return static_cast<std::size_t>(lengths[i]);
          }};
}

/// The planner of `way` (not pad) over `store`, as the flags say.
Planner make_planner(Way way, const Store& store, const Flags& flags) {
  const stoke::DocumentLengths lengths = lengths_of(store);
  switch (way) {
    case Way::concat:
      return stoke::ConcatPlanner(lengths, {.sequence_length = flags.sequence_length,
                                            .rows_per_batch = flags.rows,
                                            .seed = flags.seed});
    case Way::first_fit:
    case Way::best_fit:
      return stoke::FitPlanner(
          lengths, {.sequence_length = flags.sequence_length,
                    .rows_per_batch = flags.rows,
                    .seed = flags.seed,
                    .fit = way == Way::first_fit ? stoke::PackFit::first : stoke::PackFit::best});
    default:
      return stoke::BucketPlanner(
          lengths, {.budget = flags.budget,
                    .boundaries = stoke::estimate_bucket_boundaries(lengths, flags.buckets),
                    .seed = flags.seed});
  }
}

/// The padded batch `batch` of `epoch`: `rows` documents of the epoch's order, padded to the
/// longest (PadBatcher). Returns its real tokens and slots.
std::pair<std::size_t, std::size_t> pad_batch(const Store& store, const stoke::EpochOrder& order,
                                              std::size_t batch, std::size_t rows) {
  std::vector<std::span<const std::int32_t>> items;
  std::size_t tokens = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    items.push_back(store.get(order(batch * rows + r)));
    tokens += items.back().size();
  }
  const stoke::PaddedBatch padded = stoke::PadBatcher{}.batch(std::move(items), 0);
  return {tokens, padded.tokens.size()};
}

/// Counts of one run: real tokens, slots (padding included), batches.
struct Counts {
  std::size_t tokens = 0;
  std::size_t slots = 0;
  std::size_t batches = 0;
  Counts& operator+=(const Counts& other) {
    tokens += other.tokens;
    slots += other.slots;
    batches += other.batches;
    return *this;
  }
};

/// Copies the tokens of `plan`'s pieces back to back into `buffer` (the plan and the tokens
/// only, none of the other tensors).
void copy_pieces(const stoke::PlannedBatch& plan, const Store& store,
                 std::vector<std::int32_t>& buffer) {
  buffer.resize(plan.slots());
  std::size_t at = 0;
  for (const auto& row : plan.rows) {
    for (const auto& piece : row.pieces) {
      const auto tokens = store.get(piece.document).subspan(piece.begin, piece.size());
      std::memcpy(buffer.data() + at, tokens.data(), tokens.size_bytes());
      at += tokens.size();
    }
  }
}

/// Share `share` of `shares` of epoch `epoch` of `way`: every batch made into tensors
/// (`tensors`), or its tokens copied (`copy_pieces`).
Counts run_share(Way way, const Store& store, const Planner* planner, const Flags& flags,
                 std::size_t epoch, std::size_t shares, std::size_t share, bool tensors = true) {
  Counts counts;
  if (way == Way::pad) {
    const auto order = stoke::document_order(store.size(), true, flags.seed, epoch);
    for (std::size_t b = share; b < store.size() / flags.rows; b += shares) {
      const auto [tokens, slots] = pad_batch(store, order, b, flags.rows);
      counts += {tokens, slots, 1};
    }
    return counts;
  }
  std::visit(
      [&](const auto& p) {
        stoke::PlanShare plan(p, shares, share, stoke::Remainder::drop, epoch);
        std::vector<std::int32_t> buffer;
        const stoke::BufferPool pool;  // as a PlannedBatcher's: a batch's block is recycled
        while (auto next = plan.next()) {
          if (tensors) {
            const stoke::PackedBatch batch = stoke::make_packed_batch(next->batch, store, 0, pool);
            counts += {next->batch.tokens(), batch.tokens.size(), 1};
          } else {
            copy_pieces(next->batch, store, buffer);
            counts += {next->batch.tokens(), buffer.size(), 1};
          }
        }
      },
      *planner);
  return counts;
}

/// Runs `work(thread)` on `threads` threads; returns the seconds until all ended.
double on_threads(std::size_t threads, const std::function<void(std::size_t)>& work) {
  const auto start = Clock::now();
  std::vector<std::jthread> pool;
  for (std::size_t t = 0; t < threads; ++t) pool.emplace_back(work, t);
  pool.clear();
  return ms_since(start) / 1000.0;
}

/// The padding fraction of epoch 0 of `way`: padding slots over all slots.
double padding_fraction(Way way, const Store& store, const Flags& flags) {
  std::optional<Planner> planner;
  if (way != Way::pad) planner = make_planner(way, store, flags);
  const Counts epoch0 = run_share(way, store, planner ? &*planner : nullptr, flags, 0, 1, 0);
  return 1.0 - static_cast<double>(epoch0.tokens) / static_cast<double>(epoch0.slots);
}

/// Real tokens per second of `way` on `flags.threads` threads (each runs its share of epochs
/// 0, 1, ... until it made `flags.tokens / threads` tokens), making tensors or (not `tensors`)
/// copying the planned tokens only.
double throughput(Way way, const Store& store, const Flags& flags, bool tensors) {
  std::optional<Planner> planner;
  if (way != Way::pad) planner = make_planner(way, store, flags);
  std::vector<Counts> made(flags.threads);
  const double seconds = on_threads(flags.threads, [&](std::size_t t) {
    for (std::size_t epoch = 0; made[t].tokens < flags.tokens / flags.threads; ++epoch) {
      made[t] += run_share(way, store, planner ? &*planner : nullptr, flags, epoch, flags.threads,
                           t, tensors);
    }
  });
  Counts all;
  for (const Counts& c : made) all += c;
  return static_cast<double>(all.tokens) / seconds;
}

/// Tokens per second of a plain copy on `flags.threads` threads: the store's tokens, in chunks
/// of a batch's slots (rows x S), from the mapped .bin into a buffer per thread, chunk `c` on
/// thread `c mod threads`, passes over the store until `flags.tokens` tokens were copied.
double copy_throughput(const Store& store, const Flags& flags) {
  std::size_t total = 0;
  for (const std::int32_t length : store.lengths()) total += static_cast<std::size_t>(length);
  const std::span<const std::int32_t> all(store.get(0).data(), total);
  const std::size_t chunk = flags.rows * flags.sequence_length;
  const std::size_t chunks = (total + chunk - 1) / chunk;
  std::int64_t warm = 0;  // one untimed pass first: the mapping's pages faulted in, as for stoke's
  for (std::size_t t = 0; t < total; t += 1024) warm += all[t];
  std::vector<std::size_t> copied(flags.threads, 0);
  std::vector<std::int64_t> sums(flags.threads, 0);  // read from the buffer: the copy is used
  const double seconds = on_threads(flags.threads, [&](std::size_t t) {
    std::vector<std::int32_t> buffer(chunk);
    while (copied[t] < flags.tokens / flags.threads) {
      for (std::size_t c = t; c < chunks; c += flags.threads) {
        const auto piece = all.subspan(c * chunk, std::min(chunk, total - c * chunk));
        std::memcpy(buffer.data(), piece.data(), piece.size_bytes());
        sums[t] += buffer[piece.size() / 2];
        copied[t] += piece.size();
      }
    }
  });
  std::size_t tokens = 0;
  for (std::size_t t = 0; t < flags.threads; ++t) {
    tokens += copied[t];
    warm += sums[t];
  }
  sink = warm;
  return static_cast<double>(tokens) / seconds;
}

/// The time to the first batch: of opening the store (mapping it, checking its index whole), and
/// from that start to the first batch's tensors (the plan included).
struct FirstBatch {
  double open_ms = 0;
  double first_ms = 0;
};

/// Times the first batch of `way` on the store at `prefix` (see `FirstBatch`).
FirstBatch first_batch(Way way, const std::filesystem::path& prefix, const Flags& flags) {
  const auto start = Clock::now();
  const Store store = open_store(prefix);
  FirstBatch out{.open_ms = ms_since(start)};
  if (way == Way::pad) {
    const auto order = stoke::document_order(store.size(), true, flags.seed, 0);
    (void)pad_batch(store, order, 0, flags.rows);
    out.first_ms = ms_since(start);
    return out;
  }
  const Planner planner = make_planner(way, store, flags);
  std::visit(
      [&](const auto& p) {
        stoke::PlannedEpoch walk(p, 0);
        (void)stoke::make_packed_batch(*walk.find(0), store);
      },
      planner);
  out.first_ms = ms_since(start);
  return out;
}

/// The store's documents and tokens.
std::pair<std::size_t, std::size_t> store_size(const std::filesystem::path& prefix) {
  const Store store(prefix);
  return {store.size(), total_tokens(store)};
}

/// What a memory run found: the first batch (the first time, and again), the baseline and the
/// peak RssAnon.
struct MemoryRun {
  FirstBatch first{};
  FirstBatch again{};
  std::size_t before = 0;  // RssAnon before the store was opened
  std::size_t peak = 0;    // the largest RssAnon seen while planning and making batches
};

/// In this process: opens `prefix`, makes the first batch of `way`, then plans and makes the
/// first `flags.memory_batches` batches, sampling RssAnon every 64 batches.
MemoryRun memory_run(Way way, const std::filesystem::path& prefix, const Flags& flags) {
  MemoryRun run;
  run.before = proc_status_bytes("RssAnon");
  run.first = first_batch(way, prefix, flags);
  run.again = first_batch(way, prefix, flags);
  const Store store = open_store(prefix);
  const auto sample = [&](std::size_t b) {
    if (b % 64 == 0) run.peak = std::max(run.peak, proc_status_bytes("RssAnon"));
  };
  if (way == Way::pad) {
    const auto order = stoke::document_order(store.size(), true, flags.seed, 0);
    for (std::size_t b = 0; b < std::min(flags.memory_batches, store.size() / flags.rows); ++b) {
      (void)pad_batch(store, order, b, flags.rows);
      sample(b);
    }
  } else {
    std::visit(
        [&](const auto& p) {
          stoke::PlannedEpoch walk(p, 0);
          for (std::size_t b = 0; b < flags.memory_batches; ++b) {
            const stoke::PlannedBatch* batch = walk.find(b);
            if (batch == nullptr) break;
            (void)stoke::make_packed_batch(*batch, store);
            sample(b);
          }
        },
        make_planner(way, store, flags));
  }
  run.peak = std::max(run.peak, proc_status_bytes("RssAnon"));
  return run;
}

/// `memory_run` in a child process (so each starts from the same memory), its result through a
/// pipe; a failed child is an error naming the way and store.
MemoryRun memory_run_alone(Way way, const std::filesystem::path& prefix, const Flags& flags) {
  std::array<int, 2> pipe_ends{};
  if (pipe(pipe_ends.data()) != 0) throw std::runtime_error("sequence_bench: pipe failed");
  std::fflush(stdout);
  const pid_t child = fork();
  if (child == 0) {
    close(pipe_ends[0]);
    int status = 0;
    try {
      const MemoryRun run = memory_run(way, prefix, flags);
      status = write(pipe_ends[1], &run, sizeof run) == sizeof run ? 0 : 1;
    } catch (const std::exception& error) {
      std::fprintf(stderr, "sequence_bench: %s on %s: %s\n", name(way), prefix.c_str(),
                   error.what());
      status = 1;
    }
    _exit(status);
  }
  close(pipe_ends[1]);
  MemoryRun run;
  const bool read_all = read(pipe_ends[0], &run, sizeof run) == sizeof run;
  close(pipe_ends[0]);
  int status = 0;
  waitpid(child, &status, 0);
  if (!read_all || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error(std::string("sequence_bench: the memory run of ") + name(way) +
                             " on " + prefix.string() + " failed");
  }
  return run;
}

/// The largest deviation of any source from its weight's share, in samples (or tokens), at
/// every 1% of the epoch's picks and at every pick, of a mixture of `prefixes` by `unit`.
void mixture_deviation(const std::vector<std::filesystem::path>& prefixes, stoke::MixtureUnit unit,
                       const Flags& flags, double& at_percent, double& at_every_pick) {
  const std::array<std::uint64_t, 3> weights = {5, 3, 2};
  std::vector<Store> stores;
  std::vector<stoke::MixtureSource> sources;
  std::uint64_t total_weight = 0;
  for (std::size_t i = 0; i < prefixes.size() && i < weights.size(); ++i) {
    stores.push_back(open_store(prefixes[i]));
    sources.push_back({lengths_of(stores.back()), weights[i]});
    total_weight += weights[i];
  }
  const stoke::Mixture mixture(sources, {.unit = unit,
                                         .exhaustion = stoke::SourceExhaustion::wrap,
                                         .samples_per_epoch = flags.mixture_picks,
                                         .seed = flags.seed});
  stoke::MixtureState state = mixture.start(0);
  std::size_t next_percent = 1;
  at_percent = at_every_pick = 0;
  while (mixture.next(state)) {
    std::uint64_t all = 0;
    for (std::size_t i = 0; i < sources.size(); ++i) {
      all += unit == stoke::MixtureUnit::samples ? state.consumed[i] : state.tokens[i];
    }
    double worst = 0;
    for (std::size_t i = 0; i < sources.size(); ++i) {
      const double given = static_cast<double>(
          unit == stoke::MixtureUnit::samples ? state.consumed[i] : state.tokens[i]);
      const double share = static_cast<double>(sources[i].weight) * static_cast<double>(all) /
                           static_cast<double>(total_weight);
      worst = std::max(worst, std::abs(given - share));
    }
    at_every_pick = std::max(at_every_pick, worst);
    if (state.picks * 100 >= next_percent * flags.mixture_picks) {
      at_percent = std::max(at_percent, worst);
      ++next_percent;
    }
  }
}

/// The longest document of the stores.
std::size_t longest_document(const std::vector<std::filesystem::path>& prefixes) {
  std::size_t longest = 0;
  for (const auto& prefix : prefixes) {
    const Store store(prefix);
    for (const std::int32_t length : store.lengths())
      longest = std::max<std::size_t>(longest, length);
  }
  return longest;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

void target(const char* what, bool met, const std::string& how) {
  std::printf("target %s: %s (%s)\n", what, met ? "met" : "missed", how.c_str());
}

std::string format(const char* pattern, double a, double b = 0) {
  std::array<char, 256> text{};
  std::snprintf(text.data(), text.size(), pattern, a, b);
  return text.data();
}

/// Prints the real corpus's figures: the plain copy, then for each way its first batch, tokens/s
/// (tensors, and plan and tokens only) and padding; returns the smallest ratio to the copy.
double real_corpus_figures(const Flags& flags) {
  const auto [documents, tokens] = store_size(flags.real);
  std::printf(
      "real corpus %s: %zu documents, %zu tokens; S = %zu, %zu rows a batch (pad: %zu "
      "documents a batch), bucket budget T = %zu tokens in %zu buckets, %zu threads, "
      "%zu tokens a run\n",
      flags.real.filename().c_str(), documents, tokens, flags.sequence_length, flags.rows,
      flags.rows, flags.budget, flags.buckets, flags.threads, flags.tokens);
  const Store store = open_store(flags.real);
  const double copy = copy_throughput(store, flags);
  std::printf("plain copy: %.1f M tokens/s on %zu threads\n", copy / 1e6, flags.threads);
  double worst_ratio = 1e9;
  for (const Way way : kWays) {
    std::vector<double> firsts;
    for (std::size_t r = 0; r < flags.repeats; ++r) {
      firsts.push_back(first_batch(way, flags.real, flags).first_ms);
    }
    const double made = throughput(way, store, flags, true);
    worst_ratio = std::min(worst_ratio, made / copy);
    std::printf(
        "way %s: first batch %.3f ms (median of %zu), %.1f M tokens/s, ratio to the plain "
        "copy %.3f, padding %.4f\n",
        name(way), median(firsts), flags.repeats, made / 1e6, made / copy,
        padding_fraction(way, store, flags));
    if (way != Way::pad) {
      const double copied = throughput(way, store, flags, false);
      std::printf("way %s, plan and tokens only: %.1f M tokens/s, ratio to the plain copy %.3f\n",
                  name(way), copied / 1e6, copied / copy);
    }
  }
  return worst_ratio;
}

/// Worst figures of the memory runs.
struct MemoryFigures {
  double first_ms = 0;        // the slowest first batch (warm) on the largest store
  double first_way_ms = 1e9;  // the fastest way's first batch (warm) on the largest store
  double peak_mib = 0;        // the largest peak RssAnon
  double spread_mib = 0;      // the largest difference of a way's peak between store sizes
};

/// Prints, for each way and larger store, a memory run's figures; returns the worst.
MemoryFigures memory_figures(const Flags& flags) {
  MemoryFigures worst;
  for (const Way way : kWays) {
    std::vector<double> peaks;
    for (const auto& prefix : flags.large) {
      const auto [documents, tokens] = store_size(prefix);
      const MemoryRun run = memory_run_alone(way, prefix, flags);
      std::printf(
          "memory %s, %zu tokens: %zu documents, open %.3f ms, first batch %.3f ms (the "
          "first time: %.3f ms), RssAnon %.1f MiB before, peak %.1f MiB over %zu "
          "batches\n",
          name(way), tokens, documents, run.again.open_ms, run.again.first_ms, run.first.first_ms,
          mib(run.before), mib(run.peak), flags.memory_batches);
      if (prefix == flags.large.back()) {
        worst.first_ms = std::max(worst.first_ms, run.again.first_ms);
        worst.first_way_ms = std::min(worst.first_way_ms, run.again.first_ms);
      }
      worst.peak_mib = std::max(worst.peak_mib, mib(run.peak));
      peaks.push_back(mib(run.peak));
    }
    if (!peaks.empty()) {
      worst.spread_mib =
          std::max(worst.spread_mib, *std::max_element(peaks.begin(), peaks.end()) -
                                         *std::min_element(peaks.begin(), peaks.end()));
    }
  }
  return worst;
}

int run(const Flags& flags) {
  const double worst_ratio = real_corpus_figures(flags);
  const MemoryFigures memory = memory_figures(flags);
  std::vector<std::filesystem::path> sources = {flags.real};
  sources.insert(sources.end(), flags.large.begin(), flags.large.end());
  if (sources.size() > 3) sources.resize(3);
  double samples_percent = 0, samples_every = 0, tokens_percent = 0, tokens_every = 0;
  mixture_deviation(sources, stoke::MixtureUnit::samples, flags, samples_percent, samples_every);
  mixture_deviation(sources, stoke::MixtureUnit::tokens, flags, tokens_percent, tokens_every);
  std::printf(
      "mixture by samples of %zu sources (weights 5:3:2), %zu picks: largest deviation "
      "%.3f samples at every 1%%, %.3f samples at every pick\n",
      sources.size(), flags.mixture_picks, samples_percent, samples_every);
  std::printf(
      "mixture by tokens: largest deviation %.0f tokens at every 1%%, %.0f at every pick "
      "(the longest document: %zu tokens)\n",
      tokens_percent, tokens_every, longest_document(sources));

  if (!flags.large.empty()) {
    target("first batch <= 20 ms on the largest store", memory.first_ms <= 20.0,
           format("slowest way %.3f ms, fastest %.3f ms, warm page cache", memory.first_ms,
                  memory.first_way_ms));
    target("resident memory <= 64 MiB beyond the mapped files", memory.peak_mib <= 64.0,
           format("largest peak RssAnon %.1f MiB", memory.peak_mib));
    target("memory independent of the corpus's size", memory.spread_mib <= 1.0,
           format("largest difference between store sizes %.2f MiB", memory.spread_mib));
  }
  target("packed tokens/s >= 0.9 of a plain copy", worst_ratio >= 0.9,
         format("slowest way at %.3f of the copy", worst_ratio));
  target("mixture off by <= 1 sample per source", samples_percent <= 1.0,
         format("largest deviation %.3f samples at every 1%%, %.3f at every pick", samples_percent,
                samples_every));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  CLI::App app{"sequence_bench: the ways stoke batches sequences, on token stores (#37)"};
  app.add_option("--real", flags.real, "prefix of the real corpus (int32 tokens)")->required();
  app.add_option("--large", flags.large, "prefixes of larger stores (int32), for memory");
  app.add_option("--sequence-length", flags.sequence_length, "S of the packing ways");
  app.add_option("--rows", flags.rows, "rows of a packed batch, documents of a padded one");
  app.add_option("--budget", flags.budget, "T of the bucket way (tokens a batch, padding counted)");
  app.add_option("--buckets", flags.buckets, "buckets estimated from the lengths");
  app.add_option("--threads", flags.threads, "threads of the throughput runs");
  app.add_option("--tokens", flags.tokens, "real tokens per throughput run");
  app.add_option("--repeats", flags.repeats, "first-batch timings per way on the real corpus");
  app.add_option("--memory-batches", flags.memory_batches, "batches per memory run");
  app.add_option("--mixture-picks", flags.mixture_picks, "picks of the mixture's epoch");
  CLI11_PARSE(app, argc, argv);
  try {
    return run(flags);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s\n", error.what());
    return 1;
  }
}
