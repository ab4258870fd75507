#pragma once
/// @file
/// The `Collective` and `CollectiveBackend` concepts: summing buffers across the devices of
/// one process (all_reduce), each device calling from its own thread; and `all_gather`, which
/// shares the participants' shards of a buffer.

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include <stoke/core/backend.hpp>

namespace stoke {

/// A communicator over a fixed set of participants (devices), one thread each.
///
/// Requirements:
/// 1. `c.size()` is the number of participants;
/// 2. `c.all_reduce_sum(participant, values)` is called once by every participant
///    `0 .. size()-1` with a buffer of the same length; it returns, in every participant,
///    when each buffer holds the element-wise sum of all of them. The buffer lives wherever
///    the backend keeps training data (host memory for CPU, device memory for CUDA).
/// 3. An exception in one participant must not leave the others blocked: `c.abort()` wakes
///    every waiting participant with an error.
template <class C>
concept Collective = requires(C& collective, std::size_t participant, std::span<float> values) {
  { collective.size() } -> std::convertible_to<std::size_t>;
  collective.all_reduce_sum(participant, values);
  collective.abort();
};

/// A parameter shard: the slice of a buffer of `length` elements that participant `k` of `n`
/// owns in a sharded operation (`all_gather`, a sharded optimizer step): elements
/// `[begin, end)` with `begin = length * k / n`, so the parameter shards are contiguous, in
/// participant order, and differ in size by at most one. (Not a data shard: see the glossary.)
struct ParameterShard {
  std::size_t begin = 0;  ///< first element
  std::size_t end = 0;    ///< one past the last element

  /// Number of elements.
  [[nodiscard]] constexpr std::size_t size() const noexcept { return end - begin; }
};

/// Participant `k`'s parameter shard of a buffer of `length` elements shared by `n` participants.
[[nodiscard]] constexpr ParameterShard parameter_shard(std::size_t length, std::size_t k,
                                                       std::size_t n) {
  return {length * k / n, length * (k + 1) / n};
}

/// Every participant's `values` receives, in each parameter shard
/// `parameter_shard(values.size(), k, size())`, participant `k`'s values there: the result of
/// sharded work (each participant updated its own parameter shard) made whole on every
/// participant. Called once by every participant with buffers of one length. Uses the
/// collective's own `all_gather` where it has one; otherwise each participant zeroes what is
/// not its parameter shard and the buffers are summed (adding zeros changes no bit, so the
/// result is exact either way).
template <Collective C>
void all_gather(C& collective, std::size_t participant, std::span<float> values) {
  if constexpr (requires { collective.all_gather(participant, values); }) {
    collective.all_gather(participant, values);
  } else {
    const ParameterShard own = parameter_shard(values.size(), participant, collective.size());
    std::fill(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(own.begin), 0.0f);
    std::fill(values.begin() + static_cast<std::ptrdiff_t>(own.end), values.end(), 0.0f);
    collective.all_reduce_sum(participant, values);
  }
}

/// A collective backend: a backend whose devices can sum buffers among themselves.
///
/// Requirements:
/// 1. `B` models `Backend`;
/// 2. `B::Collective` models `Collective`;
/// 3. `B::make_collective(devices)` returns a `std::unique_ptr<B::Collective>` over those
///    devices, participant `k` being `devices[k]`.
template <class B>
concept CollectiveBackend = Backend<B> && Collective<typename B::Collective> &&
                            requires(const std::vector<device_t<B>>& devices) {
                              {
                                B::make_collective(devices)
                              } -> std::same_as<std::unique_ptr<typename B::Collective>>;
                            };

/// Any `Collective` behind one interface. The learner holds one, so a collective spanning
/// several processes (see `stoke::dist`) can stand in for the backend's own.
class AnyCollective {
 public:
  /// Takes ownership of `collective`.
  template <Collective C>
  explicit AnyCollective(std::unique_ptr<C> collective)
      : self_(std::make_unique<Adapter<C>>(std::move(collective))) {}

  /// Number of participants.
  [[nodiscard]] std::size_t size() const { return self_->size(); }
  /// See `Collective`: every participant's `values` becomes the sum over all of them.
  void all_reduce_sum(std::size_t participant, std::span<float> values) {
    self_->all_reduce_sum(participant, values);
  }
  /// See `stoke::all_gather`: every participant gets every participant's shard of `values`.
  void all_gather(std::size_t participant, std::span<float> values) {
    self_->all_gather(participant, values);
  }
  /// See `Collective`: wakes every waiting participant with an error.
  void abort() { self_->abort(); }

 private:
  struct Interface {
    virtual ~Interface() = default;
    virtual std::size_t size() const = 0;
    virtual void all_reduce_sum(std::size_t participant, std::span<float> values) = 0;
    virtual void all_gather(std::size_t participant, std::span<float> values) = 0;
    virtual void abort() = 0;
  };
  template <class C>
  struct Adapter final : Interface {
    explicit Adapter(std::unique_ptr<C> inner) : collective(std::move(inner)) {}
    std::size_t size() const override { return collective->size(); }
    void all_reduce_sum(std::size_t participant, std::span<float> values) override {
      collective->all_reduce_sum(participant, values);
    }
    void all_gather(std::size_t participant, std::span<float> values) override {
      stoke::all_gather(*collective, participant, values);
    }
    void abort() override { collective->abort(); }
    std::unique_ptr<C> collective;
  };
  std::unique_ptr<Interface> self_;
};

}  // namespace stoke
