#pragma once
/// @file
/// The `Fence` and `StagingBackend` concepts: host bytes copied to a device asynchronously,
/// through a bounded pool of recycled staging buffers, with a fence the consumer waits on.

#include <concepts>
#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include <stoke/core/backend.hpp>

namespace stoke {

/// A fence signals once, when the device work it stands for (a copy, a kernel) is complete.
/// A CUDA event, a Vulkan timeline semaphore with a value, or a user's own flag.
///
/// Requirements:
/// 1. it is movable (a batch carries its fence along);
/// 2. `f.ready()` says, without blocking, whether it has signalled;
/// 3. `f.wait()` blocks until it has signalled. If the work failed on the device, `wait()`
///    throws a `stoke::Error` (every time it is called). Waiting more than once, and from
///    any thread, is allowed.
template <class F>
concept Fence = std::movable<F> && requires(const F& fence) {
  { fence.ready() } -> std::convertible_to<bool>;
  fence.wait();
};

/// An upload in flight: what it makes on the device, and the fence to wait on before use.
template <class Value, class F>
struct Staged {
  Value value;  ///< the device-side result (for `upload`, the device buffer)
  F fence;      ///< signals when `value` holds the uploaded data
};

/// A backend whose devices take host bytes asynchronously: the bytes go into a staging
/// buffer (pinned host memory for CUDA, a host-visible buffer for Vulkan), a copy from there
/// to device memory is submitted on the device's copy stream or queue, and a fence tells
/// when it is complete. Staging buffers come from a pool that is recycled and bounded.
///
/// Requirements:
/// 1. `B` models `Backend`; `B::Fence` models `Fence`; `B::Buffer` is a movable device
///    buffer with `b.size()` (bytes) and `b.device()` (the device it lives on);
/// 2. `B::make_stager(device, slots)` returns a `std::unique_ptr<B::Stager>` that uploads to
///    `device` through at most `slots` (at least 1) staging buffers; `s.device()` is that
///    device and `s.capacity()` is `slots`;
/// 3. `s.upload(bytes)` copies `bytes` (a `std::span<const std::byte>`) into a free staging
///    buffer, submits the copy from there into a new device buffer of `bytes.size()` bytes,
///    and returns a `Staged<B::Buffer, B::Fence>` without waiting for that copy; the caller
///    may reuse the memory behind `bytes` as soon as `upload` returns;
/// 4. a staging buffer is reused only after the fence of the copy that last read it has
///    signalled: with all `slots` in flight, `upload` blocks until one of them signals.
///    `s.staging_buffers()` (staging buffers allocated now) never exceeds `s.capacity()`, so
///    staging memory is bounded by `slots` times the largest upload;
/// 5. once its fence has signalled, the buffer holds exactly the uploaded bytes for every
///    reader; `s.download(buffer)` returns a buffer's bytes in host memory (a
///    `std::vector<std::byte>`), first waiting for the writes submitted to it;
/// 6. `upload` and `download` may be called from several threads at once; fences may be
///    waited on from any thread; buffers and fences may outlive the stager that made them.
template <class B>
concept StagingBackend =
    Backend<B> && Fence<typename B::Fence> && std::movable<typename B::Buffer> &&
    requires(const device_t<B>& device, std::size_t slots, typename B::Stager& stager,
             const typename B::Stager& const_stager, const typename B::Buffer& buffer,
             std::span<const std::byte> bytes) {
      { B::make_stager(device, slots) } -> std::same_as<std::unique_ptr<typename B::Stager>>;
      { const_stager.device() } -> std::convertible_to<device_t<B>>;
      { const_stager.capacity() } -> std::convertible_to<std::size_t>;
      { const_stager.staging_buffers() } -> std::convertible_to<std::size_t>;
      { stager.upload(bytes) } -> std::same_as<Staged<typename B::Buffer, typename B::Fence>>;
      { stager.download(buffer) } -> std::same_as<std::vector<std::byte>>;
      { buffer.size() } -> std::convertible_to<std::size_t>;
      { buffer.device() } -> std::convertible_to<device_t<B>>;
    };

/// The stager type of a staging backend.
template <StagingBackend B>
using stager_t = typename B::Stager;

}  // namespace stoke
