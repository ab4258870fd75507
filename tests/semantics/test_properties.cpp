// Property tests over 500 random shapes: dataset size, batch size, devices, ranks, workers,
// drop or pad, shuffle or not, seed. Each shape checks every guarantee of DESIGN.md.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <stoke/stoke.hpp>

#include "stoke_test_support.hpp"

namespace {

using stoke::cpu::Backend;
using stoke::testing::IotaDataset;
using stoke::testing::ItemsBatcher;

struct Shape {
  std::size_t size, batch, devices, ranks, workers;
  stoke::Remainder remainder;
  bool shuffle;
  std::uint64_t seed;

  [[nodiscard]] std::string describe() const {
    std::ostringstream out;
    out << "size=" << size << " batch=" << batch << " devices=" << devices << " ranks=" << ranks
        << " workers=" << workers << (remainder == stoke::Remainder::pad ? " pad" : " drop")
        << (shuffle ? " shuffle" : "") << " seed=" << seed;
    return out.str();
  }
};

Shape random_shape(std::mt19937_64& rng) {
  const auto log_uniform = [&](double max) {
    return static_cast<std::size_t>(
               std::exp(std::uniform_real_distribution<>(0, std::log(max + 1))(rng))) -
           1;
  };
  std::uniform_int_distribution<std::size_t> devices(1, 8), ranks(1, 4), workers(1, 8);
  return Shape{log_uniform(1e5), 1 + log_uniform(256),
               devices(rng),     ranks(rng),
               workers(rng),     rng() % 2 ? stoke::Remainder::pad : stoke::Remainder::drop,
               rng() % 4 != 0,   rng()};
}

auto builder(const Shape& shape) {
  auto builder = stoke::DataLoaderBuilder<Backend, ItemsBatcher>(ItemsBatcher{})
                     .batch_size(shape.batch)
                     .remainder(shape.remainder)
                     .seed(shape.seed);
  if (shape.shuffle) builder.shuffle(shape.seed);
  return builder;
}

using Loader = stoke::BatchLoader<IotaDataset, ItemsBatcher, Backend>;

/// One loader per device of every rank: rank part first, then split over local devices.
std::vector<Loader> all_parts(const Loader& loader, std::size_t ranks, std::size_t devices) {
  std::vector<Loader> parts;
  for (std::size_t r = 0; r < ranks; ++r) {
    for (auto& part :
         stoke::split(stoke::rank_share(loader, r, ranks), Backend::devices(devices))) {
      parts.push_back(std::move(part));
    }
  }
  return parts;
}

/// What one epoch of every part delivered: the real items (padding excluded) in order of
/// parts, and each part's batch count.
struct EpochResult {
  std::vector<std::size_t> real;  // by part, then by batch
  std::vector<std::size_t> batches;
  std::size_t padding = 0;
};

/// Runs `steps` batches (all when past the end) of the current epoch on every part, in
/// lockstep, and returns what they delivered plus the state after.
EpochResult run_lockstep(std::vector<Loader>& parts, std::size_t steps,
                         stoke::LoaderState* state_after = nullptr, std::size_t skip = 0) {
  EpochResult result;
  std::vector<stoke::BatchRange<Loader::batch_type>> ranges;
  ranges.reserve(parts.size());
  for (auto& part : parts) {
    std::size_t count = 0;
    if (steps == 0) {  // taking no batch: do not even start the epoch's range
      result.batches.push_back(0);
      continue;
    }
    ranges.push_back(part.iter());
    std::size_t skipped = 0;
    for (auto& batch : ranges.back()) {
      if (skipped < skip) {
        ++skipped;
        continue;
      }
      result.real.insert(result.real.end(), batch.indices.begin(),
                         batch.indices.begin() + static_cast<std::ptrdiff_t>(batch.real_size()));
      EXPECT_TRUE(std::all_of(batch.indices.begin(), batch.indices.end(), [&](std::size_t i) {
        return i < parts.front().plan().dataset_size();
      }));
      result.padding += batch.padding;
      if (++count == steps) break;
    }
    result.batches.push_back(count);
  }
  if (state_after != nullptr) *state_after = stoke::split_state(parts);
  return result;
}

std::vector<std::size_t> sorted(std::vector<std::size_t> values) {
  std::sort(values.begin(), values.end());
  return values;
}

/// Checks exactly-once (pad) or at-most-once with the reported drop (drop).
void expect_coverage(const Shape& shape, const std::vector<std::size_t>& real,
                     std::size_t dropped) {
  const auto items = sorted(real);
  ASSERT_TRUE(std::adjacent_find(items.begin(), items.end()) == items.end())
      << "a sample was delivered twice";
  if (shape.remainder == stoke::Remainder::pad) {
    ASSERT_EQ(items.size(), shape.size) << "not every sample was delivered";
  } else {
    ASSERT_EQ(items.size() + dropped, shape.size) << "delivered + dropped != dataset size";
  }
}

TEST(Properties, FiveHundredRandomShapesKeepEveryGuarantee) {
  std::mt19937_64 rng(20261121);
  for (int trial = 0; trial < 500; ++trial) {
    const Shape shape = random_shape(rng);
    SCOPED_TRACE("trial " + std::to_string(trial) + ": " + shape.describe());
    const Loader loader = builder(shape).build_batch_loader(IotaDataset{shape.size});
    auto parts = all_parts(loader, shape.ranks, shape.devices);
    const std::size_t dropped = parts.front().layout(0).dropped;

    // Exactly once, equal batch counts on every device of every rank.
    const EpochResult first = run_lockstep(parts, SIZE_MAX);
    ASSERT_TRUE(std::all_of(first.batches.begin(), first.batches.end(), [&](std::size_t b) {
      return b == first.batches.front();
    })) << "uneven batch counts";
    expect_coverage(shape, first.real, dropped);
    if (shape.remainder == stoke::Remainder::pad) {
      std::size_t reported = 0;
      for (const auto& part : parts) reported += part.layout(0).padding;
      ASSERT_EQ(first.padding, reported) << "padding delivered != padding reported";
      ASSERT_EQ(first.padding + shape.size, first.batches.front() * shape.batch * parts.size());
    }

    // A new order every epoch when shuffling.
    const EpochResult second = run_lockstep(parts, SIZE_MAX);
    expect_coverage(shape, second.real, dropped);
    if (shape.shuffle && first.real.size() >= 8) ASSERT_NE(first.real, second.real);

    // Identical output for 1 and N workers: one random part through a multithread loader.
    const std::size_t which = rng() % parts.size();
    auto threaded = builder(shape)
                        .num_workers(shape.workers)
                        .queue_depth(1 + rng() % 4)
                        .build(IotaDataset{shape.size});
    auto threaded_parts =
        stoke::split(stoke::rank_share(threaded, which / shape.devices, shape.ranks),
                     Backend::devices(shape.devices));
    auto& threaded_part = threaded_parts[which % shape.devices];
    Loader reference = parts[which];
    reference.set_epoch(0);
    std::vector<std::size_t> expected, actual;
    for (auto& batch : reference.iter())
      expected.insert(expected.end(), batch.indices.begin(), batch.indices.end());
    for (auto& batch : threaded_part.iter())
      actual.insert(actual.end(), batch.indices.begin(), batch.indices.end());
    ASSERT_EQ(actual, expected) << "workers changed the result";

    // Exact resume from a state taken at a random step of epoch 2, onto the same shape and
    // onto another number of devices and ranks.
    const std::size_t steps = parts.front().layout(2).num_batches;
    const std::size_t stop = steps == 0 ? 0 : rng() % (steps + 1);
    stoke::LoaderState state;
    for (auto& part : parts) part.set_epoch(2);
    const EpochResult before = run_lockstep(parts, stop, &state);

    const auto json = stoke::to_json(state).dump();
    const auto restored_state = stoke::parse_loader_state(json);
    ASSERT_EQ(restored_state, state);

    // Same shape: the continuation equals the rest of the unbroken epoch.
    {
      Loader fresh = builder(shape).build_batch_loader(IotaDataset{shape.size});
      fresh.restore(restored_state);
      auto resumed = all_parts(fresh, shape.ranks, shape.devices);
      const EpochResult rest = run_lockstep(resumed, SIZE_MAX);
      std::vector<std::size_t> whole = before.real;
      whole.insert(whole.end(), rest.real.begin(), rest.real.end());
      if (state.epoch == 2) {
        Loader again = builder(shape).build_batch_loader(IotaDataset{shape.size});
        again.set_epoch(2);
        auto unbroken = all_parts(again, shape.ranks, shape.devices);
        const EpochResult tail = run_lockstep(unbroken, SIZE_MAX, nullptr, stop);
        ASSERT_EQ(rest.real, tail.real) << "the resumed epoch differs from the unbroken one";
        const std::size_t rest_dropped = resumed.front().layout(2).dropped;
        expect_coverage(shape, whole, rest_dropped);
      }
    }

    // Elastic: onto other device and rank counts, every sample still exactly once.
    {
      const std::size_t devices = 1 + rng() % 8, ranks = 1 + rng() % 4;
      Loader fresh = builder(shape).build_batch_loader(IotaDataset{shape.size});
      fresh.restore(restored_state);
      auto resumed = all_parts(fresh, ranks, devices);
      const EpochResult rest = run_lockstep(resumed, SIZE_MAX);
      ASSERT_TRUE(std::all_of(rest.batches.begin(), rest.batches.end(),
                              [&](std::size_t b) { return b == rest.batches.front(); }));
      if (state.epoch == 2) {
        std::vector<std::size_t> whole = before.real;
        whole.insert(whole.end(), rest.real.begin(), rest.real.end());
        expect_coverage(shape, whole, resumed.front().layout(2).dropped);
      } else {
        expect_coverage(shape, rest.real, resumed.front().layout(state.epoch).dropped);
      }
    }
  }
}

}  // namespace
