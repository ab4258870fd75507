// The data of the pictures of the book's chapter "Sequences", from stoke's own plans on the real
// corpus (a token store; only its lengths are read), as JSON:
//
// - "packed": a first-fit batch (S tokens a row): the batch of the epoch's first plan window
//   that holds the most pieces, each row's pieces as {document, begin, end};
// - "bucketed": every batch of an epoch planned by buckets under the budget T: its rows, its
//   width and each row's real tokens, in the order the epoch delivers them;
// - "mixture": three sources (the corpus's documents in three parts) mixed by samples, weights
//   5:3:2 and, from the middle of the epoch, 2:3:5 (a schedule): each source's count at every
//   1% of the epoch's picks, and the weights in force.
//
// scripts/sequence-bench writes book/results/sequence_plans.json with it; book/figures draws it.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <stoke/sequences.hpp>

namespace {

struct Flags {
  std::filesystem::path real;          // prefix of the real corpus's store
  std::filesystem::path json;          // where the JSON goes
  std::size_t sequence_length = 2048;  // S of the packed batch
  std::size_t rows = 8;                // rows of the packed batch
  std::size_t budget = 65536;          // T of the bucketed epoch
  std::size_t buckets = 8;             // buckets estimated from the lengths
  std::size_t picks = 1000;            // picks of the mixture's epoch
  std::uint64_t seed = 1;
};

/// The pieces of a planned batch's rows, as JSON.
nlohmann::json rows_json(const stoke::PlannedBatch& batch) {
  auto rows = nlohmann::json::array();
  for (const auto& row : batch.rows) {
    auto pieces = nlohmann::json::array();
    for (const auto& piece : row.pieces) {
      pieces.push_back({{"document", piece.document}, {"begin", piece.begin}, {"end", piece.end}});
    }
    rows.push_back(pieces);
  }
  return rows;
}

/// The first plan window's first-fit batch with the most pieces.
nlohmann::json packed_json(const stoke::DocumentLengths& lengths, const Flags& flags) {
  const stoke::FitPlanner planner(lengths, {.sequence_length = flags.sequence_length,
                                            .rows_per_batch = flags.rows,
                                            .seed = flags.seed,
                                            .fit = stoke::PackFit::first});
  const stoke::WindowPlan window = planner.plan_window(0, {});
  const auto pieces = [](const stoke::PlannedBatch& batch) {
    std::size_t count = 0;
    for (const auto& row : batch.rows) count += row.pieces.size();
    return count;
  };
  const auto most =
      std::max_element(window.batches.begin(), window.batches.end(),
                       [&](const auto& a, const auto& b) { return pieces(a) < pieces(b); });
  return {{"way", "first-fit"},
          {"sequence_length", flags.sequence_length},
          {"batch", most - window.batches.begin()},
          {"rows", rows_json(*most)}};
}

/// Every batch of epoch 0 planned by buckets under the budget.
nlohmann::json bucketed_json(const stoke::DocumentLengths& lengths, const Flags& flags) {
  const stoke::BucketPlanner planner(
      lengths, {.budget = flags.budget,
                .boundaries = stoke::estimate_bucket_boundaries(lengths, flags.buckets),
                .seed = flags.seed});
  auto batches = nlohmann::json::array();
  stoke::PlannedEpoch walk(planner, 0);
  for (std::size_t b = 0; const stoke::PlannedBatch* batch = walk.find(b); ++b) {
    auto tokens = nlohmann::json::array();
    for (const auto& row : batch->rows) tokens.push_back(row.tokens());
    batches.push_back({{"width", batch->width}, {"row_tokens", tokens}});
  }
  return {
      {"budget", flags.budget}, {"boundaries", planner.options().boundaries}, {"batches", batches}};
}

/// Three parts of the corpus mixed by samples with a schedule: counts at every 1%.
nlohmann::json mixture_json(const std::vector<std::int32_t>& all, const Flags& flags) {
  const std::size_t third = all.size() / 3;
  std::vector<stoke::MixtureSource> sources;
  const std::vector<std::uint64_t> weights = {5, 3, 2};
  for (std::size_t k = 0; k < 3; ++k) {
    sources.push_back(
        {std::vector<std::int32_t>(all.begin() + k * third, all.begin() + (k + 1) * third),
         weights[k]});
  }
  const std::size_t middle = flags.picks / 2;
  const stoke::Mixture mixture(sources, {.exhaustion = stoke::SourceExhaustion::wrap,
                                         .samples_per_epoch = flags.picks,
                                         .seed = flags.seed,
                                         .schedule = {{middle, {2, 3, 5}}}});
  stoke::MixtureState state = mixture.start(0);
  auto counts = nlohmann::json::array();
  std::size_t next_percent = 1;
  while (mixture.next(state)) {
    if (state.picks * 100 >= next_percent * flags.picks) {
      counts.push_back({{"picks", state.picks}, {"consumed", state.consumed}});
      ++next_percent;
    }
  }
  return {{"weights", weights},
          {"schedule", {{{"from_pick", middle}, {"weights", {2, 3, 5}}}}},
          {"picks", flags.picks},
          {"counts", counts}};
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  CLI::App app{"sequence_pictures: the data of the book's pictures of sequences, from plans"};
  app.add_option("--real", flags.real, "prefix of the real corpus (int32 tokens)")->required();
  app.add_option("--json", flags.json, "where the JSON goes")->required();
  CLI11_PARSE(app, argc, argv);
  try {
    const stoke::TokenStore<std::int32_t> store(flags.real);
    const std::vector<std::int32_t> all(store.lengths().begin(), store.lengths().end());
    const stoke::DocumentLengths lengths(all);
    const nlohmann::json out = {{"corpus", flags.real.filename().string()},
                                {"documents", all.size()},
                                {"packed", packed_json(lengths, flags)},
                                {"bucketed", bucketed_json(lengths, flags)},
                                {"mixture", mixture_json(all, flags)}};
    std::ofstream(flags.json) << out.dump(1) << '\n';
    std::printf("sequence_pictures: wrote %s\n", flags.json.c_str());
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s\n", error.what());
    return 1;
  }
  return 0;
}
