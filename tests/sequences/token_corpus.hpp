// An in-memory token corpus for the sequence tests, and checks shared by their suites: which
// token of which document each slot holds, and whether an epoch used every token once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <stoke/stoke.hpp>

namespace stoke::testing {

/// Token `offset` of document `document`: a value that names both (documents under 4096 tokens).
constexpr std::int32_t corpus_token(std::size_t document, std::size_t offset) {
  return static_cast<std::int32_t>(document * 4096 + offset);
}

/// Documents of tokens made by `corpus_token`, as a `Dataset` of token spans; cheap to copy.
class TokenCorpus {
 public:
  /// Document `i` has `lengths[i]` tokens.
  explicit TokenCorpus(std::vector<std::int32_t> lengths)
      : lengths_(std::make_shared<std::vector<std::int32_t>>(std::move(lengths))),
        documents_(std::make_shared<std::vector<std::vector<std::int32_t>>>()) {
    for (std::size_t d = 0; d < lengths_->size(); ++d) {
      auto& document = documents_->emplace_back();
      for (std::int32_t t = 0; t < (*lengths_)[d]; ++t) document.push_back(corpus_token(d, t));
    }
  }
  [[nodiscard]] std::size_t size() const noexcept { return lengths_->size(); }
  [[nodiscard]] std::span<const std::int32_t> get(std::size_t i) const { return (*documents_)[i]; }
  /// The lengths, for a planner.
  [[nodiscard]] std::span<const std::int32_t> lengths() const { return *lengths_; }

 private:
  std::shared_ptr<std::vector<std::int32_t>> lengths_;
  std::shared_ptr<std::vector<std::vector<std::int32_t>>> documents_;
};

/// `count` lengths in [0, longest], drawn from `seed`; about one in 16 is 0, one in 8 is long.
inline std::vector<std::int32_t> random_lengths(std::size_t count, std::size_t longest,
                                                std::uint64_t seed) {
  std::vector<std::int32_t> lengths;
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint64_t draw = mix64(seed * 0x9E3779B97F4A7C15ull + i + 1);
    std::size_t length = draw % (longest / 4 + 1) + 1;
    if ((draw >> 32) % 8 == 0) length = (draw >> 40) % (longest + 1);
    if ((draw >> 48) % 16 == 0) length = 0;
    lengths.push_back(static_cast<std::int32_t>(length));
  }
  return lengths;
}

/// How many times each token of each document was read (as the input of a row).
class TokenUses {
 public:
  explicit TokenUses(std::span<const std::int32_t> lengths) {
    for (const std::int32_t length : lengths) uses_.emplace_back(length, 0);
  }
  /// Counts the pieces of `batch`, only the first `inputs` slots of each row (all by default).
  void add(const PlannedBatch& batch, std::size_t inputs = SIZE_MAX) {
    for (const auto& row : batch.rows) {
      std::size_t slot = 0;
      for (const auto& piece : row.pieces) {
        for (std::size_t t = piece.begin; t < piece.end && slot < inputs; ++t, ++slot) {
          ++uses_.at(piece.document).at(t);
        }
      }
    }
  }
  /// Empty when every token was used once; else the first token that was not, and how often.
  [[nodiscard]] std::string first_not_once() const {
    for (std::size_t d = 0; d < uses_.size(); ++d) {
      for (std::size_t t = 0; t < uses_[d].size(); ++t) {
        if (uses_[d][t] != 1) {
          return "token " + std::to_string(t) + " of document " + std::to_string(d) + " used " +
                 std::to_string(uses_[d][t]) + " times";
        }
      }
    }
    return {};
  }

 private:
  std::vector<std::vector<int>> uses_;
};

/// Every batch of `epoch` of `planner`'s plan, in order.
template <WindowPlanner P>
std::vector<PlannedBatch> whole_plan(const P& planner, std::size_t epoch) {
  PlannedEpoch<P> walk(planner, epoch);
  std::vector<PlannedBatch> out;
  while (const PlannedBatch* batch = walk.find(out.size())) out.push_back(*batch);
  return out;
}

/// Empty when `packed` agrees with `plan` and the documents of `TokenCorpus`: each slot's token,
/// segment id and position, `cu_seqlens` and the loss mask; else what disagrees first.
inline std::string packed_disagreement(const PackedBatch& packed, const PlannedBatch& plan,
                                       std::int32_t pad_id) {
  if (packed.rows != plan.rows.size() || packed.width != plan.width) return "shape";
  std::vector<std::int32_t> cu{0};
  for (std::size_t r = 0; r < packed.rows; ++r) {
    std::size_t slot = 0;
    std::int32_t segment = 0;
    for (const auto& piece : plan.rows[r].pieces) {
      ++segment;
      for (std::size_t t = piece.begin; t < piece.end; ++t, ++slot) {
        const std::size_t at = r * packed.width + slot;
        const std::string where = "row " + std::to_string(r) + " slot " + std::to_string(slot);
        if (packed.tokens[at] != corpus_token(piece.document, t)) return where + ": token";
        if (packed.segment_ids[at] != segment) return where + ": segment id";
        if (packed.positions[at] != static_cast<std::int32_t>(t - piece.begin)) {
          return where + ": position";
        }
        if (packed.loss_mask[at] != (t + 1 < piece.end ? 1 : 0)) return where + ": loss mask";
      }
      cu.push_back(cu.back() + static_cast<std::int32_t>(piece.size()));
    }
    for (; slot < packed.width; ++slot) {
      const std::size_t at = r * packed.width + slot;
      if (packed.tokens[at] != pad_id || packed.segment_ids[at] != 0 || packed.loss_mask[at] != 0) {
        return "row " + std::to_string(r) + " padding slot " + std::to_string(slot);
      }
    }
    if (cu.back() != static_cast<std::int32_t>((r + 1) * packed.width)) {
      cu.push_back(static_cast<std::int32_t>((r + 1) * packed.width));
    }
  }
  if (packed.cu_seqlens != cu) return "cu_seqlens";
  return {};
}

}  // namespace stoke::testing
