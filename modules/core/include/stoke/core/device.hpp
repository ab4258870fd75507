#pragma once
/// @file
/// The `Device` concept: a value that names one place where batches can live.

#include <concepts>
#include <cstddef>
#include <functional>
#include <ostream>
#include <sstream>
#include <string>

namespace stoke {

/// A device names one place a batch can live (`cpu:0`, `cuda:1`, `vulkan:0`, or a user's own).
///
/// Requirements:
/// 1. it is a regular value (copyable, default-constructible, equality-comparable), cheap to copy;
/// 2. it is hashable with `std::hash`, so it can key a map of per-device state;
/// 3. it is printable with `operator<<`, so errors can say which device failed.
template <class D>
concept Device = std::regular<D> && requires(const D& device, std::ostream& out) {
  { std::hash<D>{}(device) } -> std::convertible_to<std::size_t>;
  { out << device } -> std::same_as<std::ostream&>;
};

/// The printed name of a device, as `operator<<` writes it.
template <Device D>
std::string device_name(const D& device) {
  std::ostringstream out;
  out << device;
  return out.str();
}

}  // namespace stoke
