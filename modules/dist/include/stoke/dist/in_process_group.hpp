#pragma once
/// @file
/// `dist::InProcessGroup`: a `ProcessGroup` whose ranks are threads of one process sharing an
/// `InProcessContext`, for tests and single-machine runs; and `run_in_process_group`, which
/// starts one thread per rank.

#include <algorithm>
#include <concepts>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/dist/error.hpp>
#include <stoke/dist/process_group.hpp>

namespace stoke::dist {

/// What the ranks of one in-process group share: a reusable barrier that fails once the group
/// is aborted, and the buffers each rank publishes for the call in progress.
class InProcessContext {
 public:
  /// A context for `size` ranks.
  explicit InProcessContext(std::size_t size) : size_(size), sources_(size), lengths_(size) {
    if (size == 0) throw UsageError("stoke: a process group needs a rank");
  }

  /// Number of ranks.
  [[nodiscard]] std::size_t size() const noexcept { return size_; }

  /// Marks the group aborted with `reason` (the first reason wins) and wakes every waiting
  /// rank; their pending and later calls throw `GroupAbortedError`.
  void abort(const std::string& reason) {
    {
      std::lock_guard lock(mutex_);
      if (!reason_) reason_ = reason;
    }
    changed_.notify_all();
  }

  /// The reason the group was aborted with, if it was.
  [[nodiscard]] std::optional<std::string> abort_reason() const {
    std::lock_guard lock(mutex_);
    return reason_;
  }

 private:
  friend class InProcessGroup;

  /// Waits until every rank arrived; throws `GroupAbortedError` once the group is aborted.
  void arrive() {
    std::unique_lock lock(mutex_);
    throw_if_aborted();
    const std::size_t generation = generation_;
    if (++arrived_ == size_) {
      arrived_ = 0;
      ++generation_;
      changed_.notify_all();
      return;
    }
    changed_.wait(lock, [&] { return generation_ != generation || reason_.has_value(); });
    if (generation_ == generation) throw_if_aborted();
  }

  void throw_if_aborted() const {
    if (reason_) throw GroupAbortedError("stoke: the process group was aborted: " + *reason_);
  }

  std::size_t size_;
  std::vector<const void*> sources_;  // each rank's buffer for the call in progress
  std::vector<std::size_t> lengths_;  // and its length
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::size_t arrived_ = 0;
  std::size_t generation_ = 0;
  std::optional<std::string> reason_;
};

/// Rank `rank` of the group of threads sharing a context. Models `ProcessGroup`; every
/// rank computes sums in the same order (rank 0, 1, ...), so all get the same bits.
class InProcessGroup {
 public:
  /// Rank `rank` of `context`'s group.
  InProcessGroup(std::shared_ptr<InProcessContext> context, std::size_t rank)
      : context_(std::move(context)), rank_(rank) {
    if (!context_ || rank_ >= context_->size()) {
      throw UsageError("stoke: rank " + std::to_string(rank) + " is not in the process group");
    }
  }

  /// This rank.
  [[nodiscard]] std::size_t rank() const noexcept { return rank_; }
  /// Number of ranks.
  [[nodiscard]] std::size_t size() const noexcept { return context_->size(); }
  /// This rank among the ranks of its machine: all of them share one process, so `rank()`.
  [[nodiscard]] std::size_t local_rank() const noexcept { return rank_; }
  /// Ranks on this machine: `size()`.
  [[nodiscard]] std::size_t local_size() const noexcept { return context_->size(); }

  /// See `ProcessGroup`: every rank's `values` becomes the sum over all ranks.
  void all_reduce_sum(std::span<float> values) { reduce(values); }
  /// See `ProcessGroup`.
  void all_reduce_sum(std::span<double> values) { reduce(values); }
  /// See `ProcessGroup`.
  void all_reduce_sum(std::span<std::uint64_t> values) { reduce(values); }

  /// See `ProcessGroup`: every rank's `bytes` becomes rank `root`'s.
  void broadcast(std::span<std::byte> bytes, std::size_t root) {
    if (root >= size()) {
      throw UsageError("stoke: broadcast from rank " + std::to_string(root) + " of a group of " +
                       std::to_string(size()));
    }
    publish(bytes.data(), bytes.size());
    check_lengths("broadcast", root);
    if (rank_ != root && !bytes.empty()) {
      std::memcpy(bytes.data(), context_->sources_[root], bytes.size());
    }
    context_->arrive();  // everyone copied: buffers may change again
  }

  /// See `ProcessGroup`: returns once every rank entered it.
  void barrier() { context_->arrive(); }

  /// See `ProcessGroup`: aborts the group (every rank's pending and later calls throw
  /// `GroupAbortedError` with `reason`) and throws it here too.
  [[noreturn]] void abort(const std::string& reason) {
    const std::string full = detail::on_rank(rank_, size(), reason);
    context_->abort(full);
    throw GroupAbortedError("stoke: the process group was aborted: " + full);
  }

 private:
  template <class T>
  void reduce(std::span<T> values) {
    publish(values.data(), values.size());
    check_lengths("all_reduce_sum", 0);
    std::vector<T> sum(values.size());
    for (std::size_t r = 0; r < size(); ++r) {
      const T* source = static_cast<const T*>(context_->sources_[r]);
      for (std::size_t i = 0; i < sum.size(); ++i) sum[i] = r == 0 ? source[i] : sum[i] + source[i];
    }
    context_->arrive();  // everyone read every buffer: each may overwrite its own
    std::ranges::copy(sum, values.begin());
  }

  void publish(const void* data, std::size_t length) {
    context_->sources_[rank_] = data;
    context_->lengths_[rank_] = length;
    context_->arrive();  // every buffer is published
  }

  /// Every rank sees every length, so a mismatch throws on all ranks alike.
  void check_lengths(const char* call, std::size_t reference) const {
    const auto& lengths = context_->lengths_;
    for (std::size_t r = 0; r < lengths.size(); ++r) {
      if (lengths[r] != lengths[reference]) {
        throw GroupError("stoke: " + std::string(call) + ": rank " + std::to_string(r) + " has " +
                         std::to_string(lengths[r]) + " elements, rank " +
                         std::to_string(reference) + " has " + std::to_string(lengths[reference]));
      }
    }
  }

  std::shared_ptr<InProcessContext> context_;
  std::size_t rank_;
};

/// Runs `fn(group)` on `size` threads, one `InProcessGroup` rank each, and waits for all.
/// A rank that throws aborts the group, so no other rank is left waiting; the first error
/// that is not a `GroupAbortedError` (or else the first one) is then rethrown here.
template <class F>
  requires std::invocable<F&, InProcessGroup&>
void run_in_process_group(std::size_t size, F fn) {
  auto context = std::make_shared<InProcessContext>(size);
  std::mutex mutex;
  std::exception_ptr first, first_cause;
  std::vector<std::thread> threads;
  threads.reserve(size);
  for (std::size_t rank = 0; rank < size; ++rank) {
    threads.emplace_back([&, rank] {
      InProcessGroup group(context, rank);
      try {
        fn(group);
      } catch (const std::exception& error) {
        const bool aborted = dynamic_cast<const GroupAbortedError*>(&error) != nullptr;
        {
          std::lock_guard lock(mutex);
          if (!first) first = std::current_exception();
          if (!aborted && !first_cause) first_cause = std::current_exception();
        }
        context->abort(detail::on_rank(rank, size, error.what()));
      } catch (...) {
        {
          std::lock_guard lock(mutex);
          if (!first) first = std::current_exception();
          if (!first_cause) first_cause = std::current_exception();
        }
        context->abort(detail::on_rank(rank, size, "unknown exception"));
      }
    });
  }
  for (auto& thread : threads) thread.join();
  if (first_cause) std::rethrow_exception(first_cause);
  if (first) std::rethrow_exception(first);
}

}  // namespace stoke::dist
