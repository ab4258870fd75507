#pragma once
// The layout JSON of `where_samples_go --layout-json`: which batches, samples and padding each
// device of a split gets in one epoch, as the loaders delivered them. scripts/figures draws the
// book's pictures of the split from it (book/results/split_layout.json).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <stoke/stoke.hpp>

namespace where_samples_go {

/// JSON whose objects keep their keys in the order written.
using Json = nlohmann::ordered_json;

/// The epoch-0 order of `loader`'s builder: the dataset index at every position, read from an
/// unsplit loader of the same options (whose epoch has no padding).
template <class Loader>
std::vector<std::size_t> delivered_order(Loader loader) {
  std::vector<std::size_t> order;
  for (auto& batch : loader.iter()) {
    if (batch.padding != 0) throw std::logic_error("layout: the unsplit epoch has padding");
    order.insert(order.end(), batch.indices.begin(), batch.indices.end());
  }
  return order;
}

/// One delivered batch: its step, dataset indices, padding (the last `padding` items), and the
/// position of every item in the epoch order (for a padded item, the position it repeats).
template <class Batch>
Json batch_json(const Batch& batch, const std::vector<std::size_t>& order) {
  if (batch.epoch != 0) throw std::logic_error("layout: a batch of another epoch than 0");
  std::vector<std::size_t> positions;
  for (const auto index : batch.indices) {
    const auto at = std::find(order.begin(), order.end(), index);
    if (at == order.end()) throw std::logic_error("layout: an index not in the epoch order");
    positions.push_back(static_cast<std::size_t>(at - order.begin()));
  }
  return {{"step", batch.step},
          {"indices", batch.indices},
          {"padding", batch.padding},
          {"positions", positions}};
}

/// The shares of a split of `rank`, each with its device, layout of epoch 0 and the batches it
/// delivered in epoch 0; each share stops after `max_steps` batches (0: runs the whole epoch).
template <class Part>
Json parts_json(std::vector<Part>& parts, std::size_t rank, const std::vector<std::size_t>& order,
                std::size_t max_steps = 0) {
  Json out = Json::array();
  for (auto& part : parts) {
    const stoke::EpochLayout layout = part.layout(0);
    Json batches = Json::array();
    for (auto& batch : part.iter()) {
      batches.push_back(batch_json(batch, order));
      if (max_steps != 0 && batches.size() == max_steps) break;
    }
    out.push_back({{"rank", rank},
                   {"device", stoke::device_name(part.device())},
                   {"num_batches", layout.num_batches},
                   {"padding", layout.padding},
                   {"dropped", layout.dropped},
                   {"offset", layout.offset},
                   {"batches", std::move(batches)}});
  }
  return out;
}

/// A scenario's header: the dataset and loader options and the epoch order.
inline Json scenario_json(const std::string& id, const std::string& title, std::size_t samples,
                          std::size_t batch_size, const std::string& remainder,
                          std::vector<std::size_t> order) {
  return {{"id", id},
          {"title", title},
          {"samples", samples},
          {"batch_size", batch_size},
          {"remainder", remainder},
          {"epoch", 0},
          {"order", std::move(order)},
          {"phases", Json::array()}};
}

/// A phase of a scenario: `parts` on `ranks` x `devices_per_rank` devices.
inline Json phase_json(std::size_t ranks, std::size_t devices_per_rank, std::size_t stopped_after,
                       Json parts) {
  return {{"ranks", ranks},
          {"devices_per_rank", devices_per_rank},
          {"stopped_after_steps", stopped_after},
          {"parts", std::move(parts)}};
}

/// How deeply `value` nests containers: 0 for a scalar, 1 for a list of numbers.
inline std::size_t nesting(const Json& value) {
  std::size_t deepest = 0;
  if (value.is_structured()) {
    for (const auto& item : value) deepest = std::max(deepest, nesting(item));
    return deepest + 1;
  }
  return 0;
}

/// Writes `value` indented, except that what nests at most two deep (a batch, a list of
/// numbers) stays on one line, so the file reads one batch per line.
inline void write_json(std::ostream& out, const Json& value, std::size_t indent = 0) {
  if (nesting(value) <= 2) {
    out << value.dump();
    return;
  }
  const std::string inner(indent + 2, ' ');
  const bool object = value.is_object();
  out << (object ? '{' : '[');
  bool first = true;
  for (const auto& [key, item] : value.items()) {
    out << (first ? "\n" : ",\n") << inner;
    if (object) out << Json(key).dump() << ": ";
    write_json(out, item, indent + 2);
    first = false;
  }
  out << '\n' << std::string(indent, ' ') << (object ? '}' : ']');
}

/// Epoch 0 of 10 samples in batches of 2 on 2 and on 3 devices (padded, and dropped on 3),
/// stopped on 2 devices after one step and resumed on 3, and 14 samples on 2 ranks x 2 devices,
/// loaded by loaders from `builder` on devices of `Backend`; sample `i` of `Numbers{n}` is `i`.
template <class Backend, class Numbers, class Builder>
Json layout_json(Builder builder, std::uint64_t seed) {
  builder.batch_size(2).shuffle(seed);
  auto padded = builder, dropping = builder;
  padded.pad();
  dropping.drop_last();
  const auto order10 = delivered_order(padded.build(Numbers{10}));
  Json scenarios = Json::array();

  for (const std::size_t devices : {2, 3}) {
    auto parts = stoke::split(padded.build(Numbers{10}), Backend::devices(devices));
    auto scenario =
        scenario_json("split_" + std::to_string(devices),
                      "10 samples, batch 2, pad(), " + std::to_string(devices) + " devices", 10, 2,
                      "pad", order10);
    scenario["phases"].push_back(phase_json(1, devices, 0, parts_json(parts, 0, order10)));
    scenarios.push_back(std::move(scenario));
  }

  auto dropped = stoke::split(dropping.build(Numbers{10}), Backend::devices(3));
  auto drop = scenario_json("split_3_drop_last", "10 samples, batch 2, drop_last(), 3 devices", 10,
                            2, "drop_last", order10);
  drop["phases"].push_back(phase_json(1, 3, 0, parts_json(dropped, 0, order10)));
  scenarios.push_back(std::move(drop));

  auto two = stoke::split(padded.build(Numbers{10}), Backend::devices(2));
  auto resume = scenario_json("resume_2_to_3",
                              "10 samples, batch 2, pad(): 1 step on 2 devices, resumed on 3", 10,
                              2, "pad", order10);
  resume["phases"].push_back(phase_json(1, 2, 1, parts_json(two, 0, order10, 1)));
  auto restarted = padded.build(Numbers{10});
  restarted.restore(stoke::split_state(two));
  auto three = stoke::split(restarted, Backend::devices(3));
  resume["phases"].push_back(phase_json(1, 3, 0, parts_json(three, 0, order10)));
  scenarios.push_back(std::move(resume));

  const auto order14 = delivered_order(padded.build(Numbers{14}));
  auto ranks = scenario_json("ranks_2x2", "14 samples, batch 2, pad(), 2 ranks x 2 devices", 14, 2,
                             "pad", order14);
  Json parts = Json::array();
  const auto loader14 = padded.build(Numbers{14});
  for (std::size_t rank = 0; rank < 2; ++rank) {  // what each of 2 MPI ranks computes
    auto local = stoke::split(stoke::rank_share(loader14, rank, 2), Backend::devices(2));
    for (auto& part : parts_json(local, rank, order14)) parts.push_back(std::move(part));
  }
  ranks["phases"].push_back(phase_json(2, 2, 0, std::move(parts)));
  scenarios.push_back(std::move(ranks));

  return {{"program", "examples/where_samples_go --layout-json"},
          {"seed", seed},
          {"scenarios", std::move(scenarios)}};
}

}  // namespace where_samples_go
