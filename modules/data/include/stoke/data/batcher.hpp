#pragma once
/// @file
/// The `Batcher` concept: turns a list of samples into one batch on a given device.

#include <type_traits>
#include <utility>
#include <vector>

#include <stoke/core/backend.hpp>

namespace stoke {

/// A batcher builds one batch from samples, directly on the device the batch is for.
///
/// Requirements:
/// 1. `t.batch(std::vector<I> items, const B::Device& device)` returns the batch;
/// 2. it is callable on a `const` batcher from several threads at once;
/// 3. the returned batch lives on `device` (a device batcher copies there itself, so
///    no batch takes a detour through another device).
template <class T, class B, class I>
concept Batcher = Backend<B> && std::copy_constructible<T> &&
    requires(const T& batcher, std::vector<I> items, const device_t<B>& device) {
  batcher.batch(std::move(items), device);
  requires !std::is_void_v<decltype(batcher.batch(std::move(items), device))>;
};

/// The batch type a batcher makes from items of type `I`.
template <class T, class B, class I>
requires Batcher<T, B, I>
using batch_output_t = std::remove_cvref_t<decltype(std::declval<const T&>().batch(
    std::declval<std::vector<I>>(), std::declval<const device_t<B>&>()))>;

}  // namespace stoke
