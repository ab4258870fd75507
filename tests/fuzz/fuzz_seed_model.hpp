#pragma once
/// @file
/// The model, dataset and loader settings the seed corpora are written for (fuzz_seeds.cpp)
/// and the harnesses read them with.

#include <cstddef>
#include <cstdint>

namespace stoke::fuzz {

/// A model of `seed_parameters` parameters without names: one tensor, "model.parameters".
struct SeedModel {};
inline constexpr std::size_t seed_parameters = 3;

/// The loader the loader-state seeds were taken from: 40 samples, batches of 4, padded,
/// shuffled with seed `seed_loader_seed`.
inline constexpr std::size_t seed_dataset_size = 40;
inline constexpr std::uint64_t seed_loader_seed = 7;

/// Sample `i` is `i`.
struct SeedDataset {
  [[nodiscard]] std::size_t size() const noexcept { return seed_dataset_size; }
  [[nodiscard]] std::size_t get(std::size_t index) const noexcept { return index; }
};

}  // namespace stoke::fuzz
