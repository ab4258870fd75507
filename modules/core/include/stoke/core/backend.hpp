#pragma once
/// @file
/// The `Backend` concept: a family of devices that stoke can feed.

#include <concepts>
#include <ranges>
#include <string_view>

#include <stoke/core/device.hpp>

namespace stoke {

/// A backend is a family of devices (CPU, CUDA, Vulkan, or a framework's own).
///
/// Requirements:
/// 1. `B::Device` models `Device`;
/// 2. `B::devices()` returns a range of the devices visible now (possibly empty);
/// 3. `B::name()` returns a short name such as `"cpu"`, used in messages and test names.
///
/// Refinements (device backends) add staging uploads and collectives; see the backends.
template <class B>
concept Backend = requires {
  typename B::Device;
  requires Device<typename B::Device>;
  { B::name() } -> std::convertible_to<std::string_view>;
  { B::devices() } -> std::ranges::range;
} && std::same_as<std::ranges::range_value_t<decltype(B::devices())>, typename B::Device>;

/// The device type of a backend.
template <Backend B>
using device_t = typename B::Device;

}  // namespace stoke
