#pragma once
/// @file
/// `dist::check_agreement`: before training, all ranks check that they split the same loader
/// (seed, epoch, dataset size, batch size, order, remainder) without exchanging any data, and
/// every rank fails with the same message naming each mismatch when they do not.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <stoke/data/epoch_plan.hpp>
#include <stoke/dist/error.hpp>
#include <stoke/dist/process_group.hpp>

namespace stoke::dist {

/// The settings all ranks must share to split one loader, in a fixed order.
struct LoaderAgreement {
  /// The fields, by name; `values` holds them in this order.
  static constexpr std::array<const char*, 7> names = {
      "seed", "epoch", "dataset size", "batch size", "shuffle", "shard-aware order", "remainder"};
  std::array<std::uint64_t, names.size()> values{};  ///< the fields as numbers

  /// Field `field`'s value as the message shows it (`true`, `drop`, `60000`).
  [[nodiscard]] static std::string show(std::size_t field, std::uint64_t value) {
    if (field == 4 || field == 5) return value != 0 ? "true" : "false";
    if (field == 6) {
      switch (static_cast<Remainder>(value)) {
        case Remainder::partial:
          return "partial";
        case Remainder::drop:
          return "drop";
        case Remainder::pad:
          return "pad";
      }
    }
    return std::to_string(value);
  }

  /// A 64-bit digest of the fields (FNV-1a over their bytes).
  [[nodiscard]] std::uint64_t digest() const noexcept {
    std::uint64_t hash = 0xcbf29ce484222325ull;
    for (const std::uint64_t value : values) {
      for (int byte = 0; byte < 8; ++byte) {
        hash ^= (value >> (8 * byte)) & 0xffu;
        hash *= 0x100000001b3ull;
      }
    }
    return hash;
  }
};

/// The fields of `loader` that all ranks must share (any stoke loader, or one of its shares:
/// the fields do not depend on the share).
template <class L>
  requires requires(const L& loader) {
    loader.options();
    loader.plan();
    loader.epoch();
  }
[[nodiscard]] LoaderAgreement agreement_of(const L& loader) {
  const auto& options = loader.options();
  const auto& plan = loader.plan();
  return {{options.seed, loader.epoch(), plan.dataset_size(), plan.batch_size(),
           options.shuffle ? 1u : 0u, options.shard_aware ? 1u : 0u,
           static_cast<std::uint64_t>(plan.remainder())}};
}

/// Checks that every rank of `group` has the same `agreement`, and throws `AgreementError` on
/// every rank when not, naming every mismatched field with both values, e.g. "rank 1 has
/// dataset size 60001, rank 0 has 60000".
///
/// Rank 0 broadcasts its digest and fields (one broadcast); each rank compares; then one
/// all_reduce gathers which ranks differ and their fields, so every rank throws the same
/// message (no rank is left waiting for another). Collective: every rank must call it.
template <ProcessGroup G>
void check_agreement(G& group, const LoaderAgreement& agreement) {
  constexpr std::size_t fields = LoaderAgreement::names.size();
  constexpr std::size_t row = 1 + fields;  // {differs, fields...}
  std::array<std::uint64_t, row> root{agreement.digest()};
  std::ranges::copy(agreement.values, root.begin() + 1);
  group.broadcast(std::as_writable_bytes(std::span(root)), 0);

  bool differs = root[0] != agreement.digest();
  for (std::size_t f = 0; f < fields; ++f) differs = differs || root[1 + f] != agreement.values[f];
  const std::size_t rank = group.rank();
  std::vector<std::uint64_t> table(group.size() * row, 0);
  if (differs) {
    table[rank * row] = 1;
    std::ranges::copy(agreement.values,
                      table.begin() + static_cast<std::ptrdiff_t>(rank * row + 1));
  }
  group.all_reduce_sum(std::span(table));

  std::string message;
  for (std::size_t r = 0; r < group.size(); ++r) {
    if (table[r * row] == 0) continue;
    for (std::size_t f = 0; f < fields; ++f) {
      const std::uint64_t theirs = table[r * row + 1 + f];
      if (theirs == root[1 + f]) continue;
      message += message.empty() ? "" : "; ";
      message += "rank " + std::to_string(r) + " has " + LoaderAgreement::names[f] + " " +
                 LoaderAgreement::show(f, theirs) + ", rank 0 has " +
                 LoaderAgreement::show(f, root[1 + f]);
    }
  }
  if (!message.empty()) {
    throw AgreementError("stoke: the ranks do not agree on the training loader: " + message);
  }
}

/// `check_agreement(group, agreement_of(loader))`: call it on every rank before training.
template <ProcessGroup G, class L>
  requires requires(const L& loader) { agreement_of(loader); }
void check_agreement(G& group, const L& loader) {
  check_agreement(group, agreement_of(loader));
}

}  // namespace stoke::dist
