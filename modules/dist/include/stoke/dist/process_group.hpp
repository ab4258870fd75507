#pragma once
/// @file
/// The `ProcessGroup` concept: the ranks of a distributed job (processes, or threads of one
/// process in tests) summing and broadcasting small host buffers among themselves.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>

namespace stoke {

/// The ranks of one job, `0 .. size()-1`, each calling from its own process (or thread).
///
/// Requirements:
/// 1. `g.size()` is at least 1 and `g.rank()` is in `[0, size())`; both are fixed for the
///    group's life.
/// 2. The collective calls (`all_reduce_sum`, `broadcast`, `barrier`) are made by every rank
///    in the same order, with buffers of the same length; within a rank, by one thread at a
///    time (not necessarily the thread that made the group).
/// 3. `g.all_reduce_sum(values)` (for `float`, `double` and `std::uint64_t`) replaces every
///    rank's `values` by the element-wise sum over all ranks; every rank gets the same bits,
///    so model replicas fed from it stay identical.
/// 4. `g.broadcast(bytes, root)` replaces every rank's `bytes` by rank `root`'s.
/// 5. `g.barrier()` returns once every rank has entered it.
/// 6. `g.abort(reason)` does not return: it ends the whole job, on every rank, with an error
///    that carries `reason`; no rank is left waiting in a collective call.
/// 7. A collective call that fails (mismatched lengths, a transport error) throws a
///    `stoke::Error`; it never returns with wrong data.
///
/// Models: `dist::InProcessGroup` (threads as ranks) and `dist::MpiGroup` (target
/// `stoke::mpi`). Both also tell `local_rank()` and `local_size()`: the rank among the
/// ranks of the same machine, which picks the machine's devices for this rank.
template <class G>
concept ProcessGroup =
    requires(G& group, const G& const_group, std::span<float> floats, std::span<double> doubles,
             std::span<std::uint64_t> counts, std::span<std::byte> bytes, std::size_t root,
             const std::string& reason) {
      { const_group.rank() } -> std::convertible_to<std::size_t>;
      { const_group.size() } -> std::convertible_to<std::size_t>;
      group.all_reduce_sum(floats);
      group.all_reduce_sum(doubles);
      group.all_reduce_sum(counts);
      group.broadcast(bytes, root);
      group.barrier();
      group.abort(reason);
    };

namespace dist {

/// Broadcasts a trivially copyable `value` from rank `root` to every rank of `group`.
template <ProcessGroup G, class T>
  requires std::is_trivially_copyable_v<T>
void broadcast_value(G& group, T& value, std::size_t root = 0) {
  group.broadcast(std::as_writable_bytes(std::span(&value, 1)), root);
}

}  // namespace dist
}  // namespace stoke
