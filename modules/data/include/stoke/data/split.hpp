#pragma once
/// @file
/// `split`: one loader per device, with equal batch counts, re-drawn every epoch.

#include <cstddef>
#include <ranges>
#include <stdexcept>
#include <vector>

#include <stoke/data/dataloader.hpp>

namespace stoke {

/// Splits `loader` into one loader per device in `devices`.
///
/// Device `k` of `n` takes every `n`-th batch of the epoch, starting with batch `k`. Every
/// device gets the same number of batches: the remainder is dropped or padded, as the
/// loader's `Remainder` says (`Remainder::partial` is refused, since uneven steps would hang
/// a collective). Across devices the batches are disjoint and cover the epoch; since the
/// split is over positions of the epoch order, each device sees new samples every epoch.
/// Because device `k` takes batch `k` of every round, the first `s` steps of all devices
/// together consumed exactly the first `s * n` batches of the epoch: a prefix, which is what
/// makes resuming onto a different number of devices exact.
template <SplittableLoader L, std::ranges::input_range Devices>
  requires std::convertible_to<std::ranges::range_reference_t<Devices>, typename L::device_type>
[[nodiscard]] std::vector<L> split(const L& loader, const Devices& devices) {
  const auto count = static_cast<std::size_t>(std::ranges::distance(devices));
  if (count == 0) throw std::invalid_argument("stoke: split needs at least one device");
  std::vector<L> parts;
  parts.reserve(count);
  std::size_t index = 0;
  for (const auto& device : devices) {
    parts.push_back(loader.part(count, index++));
    parts.back().set_device(device);
  }
  return parts;
}

}  // namespace stoke
