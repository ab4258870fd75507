#pragma once
/// @file
/// The `DataLoader` concept: something that yields an epoch of batches for one device and
/// can be narrowed to a slice of its epoch.

#include <concepts>
#include <cstddef>
#include <ranges>

#include <stoke/core/device.hpp>

namespace stoke {

/// A data loader yields the batches of one epoch at a time for one device.
///
/// Requirements:
/// 1. `L::device_type` models `Device`; `L::batch_type` is what the epoch range yields;
/// 2. `l.iter()` returns an input range over the next epoch's batches (and advances the
///    epoch, so every call sees a new order when shuffling);
/// 3. `l.num_items()` is the number of items the next epoch yields;
/// 4. `l.set_device(d)` makes later batches for device `d`;
/// 5. `l.slice(begin, end)` returns a loader of the same type over positions
///    `[begin, end)` of each epoch's order (not of dataset indices), so slices of one loader
///    are disjoint and are re-drawn every epoch.
template <class L>
concept DataLoader = std::copy_constructible<L> &&
                     requires(L& loader, const L& const_loader,
                              const typename L::device_type& device, std::size_t position) {
                       typename L::batch_type;
                       requires Device<typename L::device_type>;
                       { loader.iter() } -> std::ranges::input_range;
                       { const_loader.num_items() } -> std::convertible_to<std::size_t>;
                       loader.set_device(device);
                       { const_loader.slice(position, position) } -> std::same_as<L>;
                     };

/// A split source: a loader that can be split into interleaved shares of equal batch counts
/// (what `split` takes).
///
/// Requirements:
/// 1. `L` models `DataLoader`;
/// 2. `l.share(count, index)`, for `index < count`, is a loader of the same type over every
///    `count`-th batch of `l`, starting with batch `index`;
/// 3. the `count` shares have equal batch counts, are disjoint and together cover `l`'s epoch
///    (the remainder dropped or padded, as `l`'s options say).
template <class L>
concept SplitSource = DataLoader<L> && requires(const L& loader, std::size_t count) {
  { loader.share(count, count) } -> std::same_as<L>;
};

/// The backend a loader makes batches for: `L::backend_type`, which stoke's loaders name (a
/// loader that names one lets `prefetch_to_device(loader, depth)` find the backend itself).
template <class L>
struct loader_backend {};
template <class L>
  requires requires { typename L::backend_type; }
struct loader_backend<L> {
  using type = typename L::backend_type;  ///< the loader's backend
};
/// The backend a loader makes batches for.
template <class L>
using loader_backend_t = typename loader_backend<L>::type;

}  // namespace stoke
