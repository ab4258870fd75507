// Where every sample goes: shows each guarantee of stoke's loaders with printed evidence,
// and checks it. Exits non-zero if any property shown does not hold, so it is also a test.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <CLI/CLI.hpp>

#include <stoke/stoke.hpp>

#include "layout_json.hpp"

namespace {

using stoke::cpu::Backend;

// --8<-- [start:setup]
/// Sample `i` is the number `i`, so every batch shows which samples it holds.
struct Numbers {
  std::size_t count = 0;
  [[nodiscard]] std::size_t size() const { return count; }
  [[nodiscard]] std::size_t get(std::size_t index) const { return index; }
};

/// Keeps a batch's samples as a list. (A real batcher builds a tensor on `device`.)
struct ListBatcher {
  template <class Item, class Device>
  std::vector<Item> batch(std::vector<Item> items, const Device& /*device*/) const {
    return items;
  }
};

using Builder = stoke::DataLoaderBuilder<Backend, ListBatcher>;
// --8<-- [end:setup]

/// Prints each check and remembers whether one failed.
struct Checks {
  int failed = 0;
  void operator()(bool ok, const std::string& what) {
    std::printf("  %s %s\n", ok ? "ok:" : "FAILED:", what.c_str());
    failed += ok ? 0 : 1;
  }
};

/// A batch's dataset indices, padding marked with `*`: `[7 2 0*]`.
template <class Batch>
std::string show(const Batch& batch) {
  std::string out = "[";
  for (std::size_t i = 0; i < batch.size(); ++i) {
    out += (i ? " " : "") + std::to_string(batch.indices[i]) + (i >= batch.real_size() ? "*" : "");
  }
  return out + "]";
}

/// A set of dataset indices: `{0 3 9}`.
std::string show(const std::set<std::size_t>& indices) {
  std::string out = "{";
  for (const auto index : indices) out += (out.size() > 1 ? " " : "") + std::to_string(index);
  return out + "}";
}

/// The real (non-padding) indices of a batch.
template <class Batch>
std::vector<std::size_t> real_indices(const Batch& batch) {
  return {batch.indices.begin(),
          batch.indices.begin() + static_cast<std::ptrdiff_t>(batch.real_size())};
}

/// Whether `seen` holds every index `0 .. size-1` exactly once.
bool exactly_once(std::vector<std::size_t> seen, std::size_t size) {
  std::sort(seen.begin(), seen.end());
  if (seen.size() != size) return false;
  for (std::size_t i = 0; i < size; ++i) {
    if (seen[i] != i) return false;
  }
  return true;
}

void epoch_order(std::uint64_t seed, Checks& check) {
  std::printf("\n1. Epoch order: a keyed bijection over positions\n");
  // --8<-- [start:order]
  const std::size_t billion = 1'000'000'000;
  const stoke::EpochOrder epoch0(billion, seed, 0), epoch1(billion, seed, 1);
  std::printf("  the order of %zu samples is an object of %zu bytes\n", billion, sizeof(epoch0));
  for (const std::size_t position : {std::size_t{0}, std::size_t{1}, billion - 1}) {
    std::printf("  position %9zu -> index %9zu in epoch 0, %9zu in epoch 1\n", position,
                epoch0(position), epoch1(position));
  }
  // --8<-- [end:order]
  std::vector<std::size_t> first(100'000);
  for (std::size_t p = 0; p < first.size(); ++p) first[p] = epoch0(p);
  std::sort(first.begin(), first.end());
  check(std::adjacent_find(first.begin(), first.end()) == first.end() && first.back() < billion,
        "the first 100000 of a billion positions map to 100000 distinct indices");
  const std::size_t million = 1'000'000;
  const stoke::EpochOrder small(million, seed, 0);
  std::vector<std::size_t> all(million);
  for (std::size_t p = 0; p < million; ++p) all[p] = small(p);
  check(exactly_once(all, million), "over 1000000 samples every index appears exactly once");
  check(stoke::EpochOrder(billion, seed, 0)(12345) == epoch0(12345),
        "the order is a pure function of (seed, epoch): rebuilt, it gives the same index");
}

void slices_and_epochs(std::uint64_t seed, Checks& check) {
  std::printf("\n2. Slices are over positions of the epoch, and every iter() is a new epoch\n");
  // --8<-- [start:slices]
  auto loader = Builder({}).batch_size(5).shuffle(seed).build(Numbers{20});
  auto first_half = loader.slice(0, 10), second_half = loader.slice(10, 20);
  std::vector<std::array<std::set<std::size_t>, 2>> held;  // per epoch, the samples of each
  for (std::size_t epoch = 0; epoch < 2; ++epoch) {        // no set_epoch: each iter() advances it
    auto& [first, second] = held.emplace_back();
    for (auto& batch : first_half.iter()) first.insert(batch.indices.begin(), batch.indices.end());
    for (auto& batch : second_half.iter()) {
      second.insert(batch.indices.begin(), batch.indices.end());
    }
    std::printf("  epoch %zu: slice(0, 10) holds %s\n", epoch, show(first).c_str());
    std::printf("           slice(10, 20) holds %s\n", show(second).c_str());
  }
  // --8<-- [end:slices]
  for (std::size_t epoch = 0; epoch < 2; ++epoch) {
    std::set<std::size_t> both = held[epoch][0];
    both.insert(held[epoch][1].begin(), held[epoch][1].end());
    check(held[epoch][0].size() == 10 && held[epoch][1].size() == 10 && both.size() == 20,
          "epoch " + std::to_string(epoch) + ": the two slices are disjoint and cover the epoch");
  }
  check(held[0][0] != held[1][0],
        "slice(0, 10) holds other samples in epoch 1 (a slice of indices would hold 0..9 forever)");
}

void split_over_devices(std::uint64_t seed, Checks& check) {
  std::printf("\n3. split: equal batch counts on every device, padding reported\n");
  // --8<-- [start:split]
  auto loader = Builder({}).batch_size(2).shuffle(seed).pad().build(Numbers{10});
  auto devices = stoke::split(loader, Backend::devices(3));
  std::size_t evaluated = 0;
  std::vector<std::size_t> batches, seen;
  for (auto& device : devices) {
    std::string line;
    for (auto& batch : device.iter()) {
      line += " " + show(batch);
      evaluated += batch.real_size();  // the last `batch.padding` items repeat other samples
      auto real = real_indices(batch);
      seen.insert(seen.end(), real.begin(), real.end());
    }
    batches.push_back(device.layout(0).num_batches);
    std::printf("  %s:%s  (%zu batches, %zu padding)\n",
                stoke::device_name(device.device()).c_str(), line.c_str(),
                device.layout(0).num_batches, device.layout(0).padding);
  }
  std::printf("  evaluation counts %zu samples, not the %zu items delivered\n", evaluated,
              batches.front() * loader.options().batch_size * devices.size());
  // --8<-- [end:split]
  check(std::all_of(batches.begin(), batches.end(), [&](auto b) { return b == batches.front(); }),
        "every device runs the same number of steps, so no collective waits for a missing one");
  check(exactly_once(seen, 10), "without the padding, every sample was delivered exactly once");

  auto dropping = Builder({}).batch_size(2).shuffle(seed).drop_last().build(Numbers{10});
  auto dropped = stoke::split(dropping, Backend::devices(3));
  std::printf("  with drop_last() instead: %zu batch per device, %zu samples dropped this epoch\n",
              dropped[0].layout(0).num_batches, dropped[0].layout(0).dropped);
  check(dropped[0].layout(0).num_batches == 1 && dropped[0].layout(0).dropped == 4,
        "drop_last() drops the 4 samples that do not fill a round of 3 batches, and says so");
}

/// Every device's sequence of batches (as dataset indices) for one epoch, with `workers`.
std::vector<std::vector<std::size_t>> batches_with_workers(std::uint64_t seed,
                                                           std::size_t workers) {
  // --8<-- [start:workers]
  auto loader =
      Builder({}).batch_size(16).shuffle(seed).pad().num_workers(workers).build(Numbers{1000});
  std::vector<std::vector<std::size_t>> per_device;
  for (auto& device : stoke::split(loader, Backend::devices(2))) {
    per_device.emplace_back();
    for (auto& batch : device.iter()) {  // batches arrive in step order, whoever made them
      per_device.back().insert(per_device.back().end(), batch.indices.begin(), batch.indices.end());
    }
  }
  // --8<-- [end:workers]
  return per_device;
}

void workers_change_nothing(std::uint64_t seed, Checks& check) {
  std::printf("\n4. Worker threads never change the result\n");
  const auto reference = batches_with_workers(seed, 0);  // 0: made in the caller's thread
  for (const std::size_t workers : {0, 1, 2, 8}) {
    const auto result = workers == 0 ? reference : batches_with_workers(seed, workers);
    std::uint64_t fingerprint = 0;
    for (const auto& device : result) {
      for (const auto index : device) fingerprint = stoke::mix64(fingerprint ^ index);
    }
    std::printf("  %zu worker%s per device: cpu:0 starts with %zu %zu %zu, fingerprint %016llx\n",
                workers, workers == 1 ? " " : "s", result[0][0], result[0][1], result[0][2],
                static_cast<unsigned long long>(fingerprint));
    if (workers != 0) {
      check(result == reference,
            "both devices got the batches made in the caller's thread, in the same order");
    }
  }
}

// --8<-- [start:crop]
/// A random crop and flip drawn for one sample.
struct Crop {
  std::size_t sample = 0;
  unsigned x = 0, y = 0;
  bool flip = false;
  friend bool operator==(const Crop&, const Crop&) = default;
};

/// The crop drawn from a sample's random stream.
Crop draw_crop(std::size_t sample, stoke::SampleRng rng) {
  const unsigned x = rng() % 9, y = rng() % 9;
  return Crop{sample, x, y, (rng() & 1) != 0};
}
// --8<-- [end:crop]

void per_sample_randomness(std::uint64_t seed, Checks& check) {
  std::printf("\n5. Per-sample randomness: keyed by (seed, epoch, index), not by worker\n");
  // --8<-- [start:augment]
  // An augmentation draws from stoke::sample_rng(): the stream of the sample being read.
  auto augmented = Numbers{64} | stoke::map([](std::size_t sample) {
                     return draw_crop(sample, stoke::sample_rng());
                   });
  // --8<-- [end:augment]
  // What every sample drew in `epochs` epochs, loaded by `workers` on `devices` devices.
  const auto draws = [&](std::size_t workers, std::size_t devices, std::size_t epochs) {
    auto loader =
        Builder({}).batch_size(4).shuffle(seed).pad().num_workers(workers).build(augmented);
    std::vector<std::map<std::size_t, Crop>> by_epoch(epochs);
    for (auto& device : stoke::split(loader, Backend::devices(devices))) {
      for (std::size_t epoch = 0; epoch < epochs; ++epoch) {
        for (auto& batch : device.iter()) {
          for (const Crop& crop : batch.data) by_epoch[epoch][crop.sample] = crop;
        }
      }
    }
    return by_epoch;
  };
  const auto reference = draws(1, 1, 2);
  for (std::size_t sample = 0; sample < 3; ++sample) {
    const Crop& a = reference[0].at(sample);
    const Crop& b = reference[1].at(sample);
    std::printf("  sample %zu: epoch 0 crop at (%u, %u)%s, epoch 1 crop at (%u, %u)%s\n", sample,
                a.x, a.y, a.flip ? " flipped" : "", b.x, b.y, b.flip ? " flipped" : "");
  }
  check(draws(3, 2, 2) == reference && draws(2, 4, 2) == reference,
        "3 workers on 2 devices and 2 workers on 4 devices draw what 1 worker on 1 device drew");
  bool keyed = true;
  std::size_t changed = 0;
  for (std::size_t epoch = 0; epoch < 2; ++epoch) {
    for (const auto& [sample, crop] : reference[epoch]) {
      keyed = keyed && crop == draw_crop(sample, stoke::SampleRng(seed, epoch, sample));
      changed += epoch == 1 && !(crop == reference[0].at(sample));
    }
  }
  check(keyed && reference[0].size() == 64,
        "each of the 64 samples drew from SampleRng(seed, epoch, index) in both epochs");
  std::printf("  %zu of 64 samples got another crop in epoch 1 than in epoch 0\n", changed);
}

void state_and_restore(std::uint64_t seed, Checks& check) {
  std::printf("\n6. State -> JSON -> restore, in the middle of an epoch\n");
  auto builder = Builder({}).batch_size(8).shuffle(seed).num_workers(2);
  // --8<-- [start:state]
  auto loader = builder.build(Numbers{100});
  for (auto& batch : loader.iter()) (void)batch;  // epoch 0
  std::vector<std::size_t> before;
  std::string saved;
  for (auto& batch : loader.iter()) {  // epoch 1
    before.insert(before.end(), batch.indices.begin(), batch.indices.end());
    if (batch.step == 4) {  // the job is stopped after its fifth step of epoch 1
      saved = stoke::to_json(loader.state()).dump();
      break;
    }
  }
  std::printf("  saved: %s\n", saved.c_str());

  auto resumed = builder.build(Numbers{100});  // a new process
  resumed.restore(stoke::parse_loader_state(saved));
  std::vector<std::size_t> after;
  for (auto& batch : resumed.iter()) {
    after.insert(after.end(), batch.indices.begin(), batch.indices.end());
  }
  // --8<-- [end:state]
  auto unbroken = builder.build(Numbers{100});
  unbroken.set_epoch(1);
  std::vector<std::size_t> expected;
  for (auto& batch : unbroken.iter()) {
    expected.insert(expected.end(), batch.indices.begin(), batch.indices.end());
  }
  std::printf("  before the stop: %zu samples, after the restore: %zu samples\n", before.size(),
              after.size());
  std::vector<std::size_t> whole = before;
  whole.insert(whole.end(), after.begin(), after.end());
  check(whole == expected, "before + after equals the unbroken epoch 1, sample for sample");
  check(resumed.epoch() == 2, "the restored loader goes on with epoch 2");
}

void elastic_resume(std::uint64_t seed, Checks& check) {
  std::printf("\n7. Elastic resume: stopped on 2 devices, resumed on 3\n");
  auto builder = Builder({}).batch_size(4).shuffle(seed).pad().num_workers(2);
  // --8<-- [start:elastic]
  auto loader = builder.build(Numbers{103});
  auto two = stoke::split(loader, Backend::devices(2));
  std::vector<std::size_t> seen;
  for (auto& device : two) {  // each device runs 5 steps, then the job is preempted
    for (auto& batch : device.iter()) {
      auto real = real_indices(batch);
      seen.insert(seen.end(), real.begin(), real.end());
      if (batch.step == 4) break;
    }
  }
  const stoke::LoaderState state = stoke::split_state(two);  // the same for every device
  std::printf("  2 devices x 5 steps x 4 samples: state says %zu positions consumed\n",
              state.consumed);

  auto restarted = builder.build(Numbers{103});
  restarted.restore(state);
  for (auto& device : stoke::split(restarted, Backend::devices(3))) {
    std::size_t padding = 0;
    for (auto& batch : device.iter()) {
      auto real = real_indices(batch);
      seen.insert(seen.end(), real.begin(), real.end());
      padding += batch.padding;
    }
    std::printf("  %s after the restart: %zu batches, %zu padding\n",
                stoke::device_name(device.device()).c_str(), device.layout(state.epoch).num_batches,
                padding);
  }
  // --8<-- [end:elastic]
  check(state.consumed == 40, "the 2 devices consumed positions 0..39 of the epoch: a prefix");
  check(exactly_once(seen, 103),
        "over the stop and the restart, each of the 103 samples was seen once");
}

/// Days of January to June: one shard (file) per month.
struct Days {
  [[nodiscard]] std::size_t size() const { return 181; }
  [[nodiscard]] std::size_t get(std::size_t index) const { return index; }
  [[nodiscard]] std::vector<std::size_t> shard_begins() const { return {0, 31, 59, 90, 120, 151}; }
};

/// The months (0 = January) in the order a sequence of days enters them.
std::vector<std::size_t> months_entered(const std::vector<std::size_t>& days) {
  const auto begins = Days{}.shard_begins();
  std::vector<std::size_t> months;
  for (const std::size_t day : days) {
    const auto month = static_cast<std::size_t>(
        std::upper_bound(begins.begin(), begins.end(), day) - begins.begin() - 1);
    if (months.empty() || months.back() != month) months.push_back(month);
  }
  return months;
}

void shard_aware_order(std::uint64_t seed, Checks& check) {
  std::printf("\n8. Shard-aware order: shuffle the shards, then within each shard\n");
  static constexpr std::array<const char*, 6> kMonths = {"Jan", "Feb", "Mar", "Apr", "May", "Jun"};
  // --8<-- [start:shards]
  auto loader = Builder({}).batch_size(10).shuffle_shards(seed).build(Days{});
  std::vector<std::vector<std::size_t>> days(3);  // per epoch, in the order they were read
  for (std::size_t epoch = 0; epoch < days.size(); ++epoch) {
    for (auto& batch : loader.iter()) {
      days[epoch].insert(days[epoch].end(), batch.indices.begin(), batch.indices.end());
    }
    std::string months;
    for (const auto m : months_entered(days[epoch])) months += std::string(" ") + kMonths[m];
    std::printf("  epoch %zu reads%s; it starts with days %zu %zu %zu\n", epoch, months.c_str(),
                days[epoch][0], days[epoch][1], days[epoch][2]);
  }
  // --8<-- [end:shards]
  std::set<std::vector<std::size_t>> month_orders;
  for (std::size_t epoch = 0; epoch < days.size(); ++epoch) {
    const auto months = months_entered(days[epoch]);
    check(months.size() == 6 && exactly_once(days[epoch], 181),
          "epoch " + std::to_string(epoch) + ": each month is read in one piece, each day once");
    month_orders.insert(months);
  }
  check(month_orders.size() > 1, "the order of the months changes between epochs");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"stoke: where every sample goes, shown and checked"};
  std::uint64_t seed = 42;
  app.add_option("--seed", seed, "seed of every order and random draw")->capture_default_str();
  std::string layout_path;
  app.add_option("--layout-json", layout_path,
                 "also write where each batch of one epoch goes, split several ways, as JSON "
                 "(the data of the book's pictures of the split)");
  CLI11_PARSE(app, argc, argv);

  if (!layout_path.empty()) {
    std::ofstream out(layout_path);
    where_samples_go::write_json(
        out, where_samples_go::layout_json<Backend, Numbers>(Builder({}), seed));
    out << '\n';
    if (!out.flush()) {
      std::fprintf(stderr, "where_samples_go: cannot write %s\n", layout_path.c_str());
      return 1;
    }
  }

  std::printf("where every sample goes (seed %llu)\n", static_cast<unsigned long long>(seed));
  Checks check;
  epoch_order(seed, check);
  slices_and_epochs(seed, check);
  split_over_devices(seed, check);
  workers_change_nothing(seed, check);
  per_sample_randomness(seed, check);
  state_and_restore(seed, check);
  elastic_resume(seed, check);
  shard_aware_order(seed, check);
  if (check.failed == 0) {
    std::printf("\nevery property held\n");
  } else {
    std::printf("\n%d check%s FAILED\n", check.failed, check.failed == 1 ? "" : "s");
  }
  return check.failed == 0 ? 0 : 1;
}
