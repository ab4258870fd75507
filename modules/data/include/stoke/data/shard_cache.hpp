#pragma once
/// @file
/// `ShardCache`: at most K shards of a sharded dataset resident in one process, shared by every
/// worker thread and local device, evicted least recently used, and read ahead in the order the
/// epoch will visit them on a bounded pool of I/O threads.

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/core/fork.hpp>

namespace stoke {

/// How many shards a `ShardCache` keeps and how it reads ahead.
struct ShardCacheOptions {
  std::size_t resident = 2;    ///< shards in memory at most (at least 1; 2 lets one be read ahead)
  std::size_t max_bytes = 0;   ///< a byte budget for the resident shards too (0: none)
  std::size_t io_threads = 1;  ///< threads that read shards ahead (0: no reading ahead)
};

/// The read-ahead depth of a cache of `options`: the shards it reads ahead of the one in use,
/// what a node cache below it (`stoke::storage::NodeCache`) keeps besides that one and the one
/// before it.
[[nodiscard]] inline std::size_t read_ahead_depth(const ShardCacheOptions& options) noexcept {
  return options.resident > 1 ? options.resident - 1 : 0;
}

/// The old name of `read_ahead_depth`, kept so that code written against it compiles.
[[nodiscard]] inline std::size_t read_ahead_window(const ShardCacheOptions& options) noexcept {
  return read_ahead_depth(options);
}

/// What a `ShardCache` did: every counter since it was made.
struct ShardCacheStats {
  std::size_t loads = 0;                 ///< shards read (ahead or on demand)
  std::size_t loaded_bytes = 0;          ///< bytes of the shards read
  std::size_t hits = 0;                  ///< acquisitions of a resident shard
  std::size_t waits = 0;                 ///< acquisitions that waited for a read ahead in flight
  std::size_t misses = 0;                ///< acquisitions that read the shard themselves
  std::size_t evictions = 0;             ///< shards dropped to make room
  std::size_t max_resident = 0;          ///< the most shards resident at once
  double wait_seconds = 0.0;             ///< time acquisitions spent waiting for a read
  std::vector<std::size_t> shard_loads;  ///< reads of each shard
};

/// A cache of the shards of one dataset, by shard number, shared by all threads of a process.
///
/// 1. `acquire(s)` returns shard `s`, read by `load(s)` if it is not resident (or waits for a
///    read ahead of it in flight). The caller holds the returned pointer: a shard evicted while
///    a batch still uses it is freed when the batch lets go.
/// 2. At most `options.resident` shards (and `options.max_bytes` bytes, when set) are resident.
///    The plan keeps K of them, in this order: the shard at the cursor (the furthest along the
///    plan that any consumer acquired), the next one, the one before the cursor, then the ones
///    after the next. The one before the cursor is kept because the consumers that lag behind
///    the one furthest ahead (the rank's other devices and workers, whose batches are made
///    ahead of their turn) still read it. A read ahead evicts only a shard that no batch holds
///    and the plan does not keep, least recently used first; a read on demand prefers such a
///    shard, and then evicts, of the kept ones, the one needed last. An epoch that visits shard
///    after shard reads each once when every consumer is less than a shard behind the one
///    furthest ahead and K >= 3: the shard they leave, the one they enter, the one read ahead.
///    Consumers spread over more shards (shards of a few batches, many workers) may read a
///    shard two behind the cursor again, unless a batch holds it.
/// 3. `plan(shards)` tells it the order the epoch visits the shards in; the I/O threads
///    then read the kept shards from the cursor on ahead, as room appears; until the first
///    shard an epoch reads is resident, it is read alone (the first batch waits for one
///    shard's transfer, not for a share of several). Because a stoke
///    epoch order is a pure function of (seed, epoch), the loader knows this order before the
///    epoch starts.
/// A failed read is rethrown by every `acquire` of that shard (and read again by the next).
template <class Shard>
class ShardCache {
 public:
  /// Reads shard `s` of the dataset.
  using Loader = std::function<Shard(std::size_t)>;
  /// The bytes a shard holds, for the byte budget and the statistics.
  using Sizer = std::function<std::size_t(const Shard&)>;

  /// A cache of `shard_count` shards read by `load`, sized by `size_of`.
  ShardCache(std::size_t shard_count, Loader load, Sizer size_of, ShardCacheOptions options = {})
      : load_(std::move(load)),
        size_of_(std::move(size_of)),
        options_(options),
        entries_(shard_count) {
    if (options_.resident == 0) throw UsageError("stoke: a shard cache needs at least 1 shard");
    stats_.shard_loads.assign(shard_count, 0);
    for (std::size_t t = 0; t < options_.io_threads; ++t) {
      io_threads_.emplace_back([this] { read_ahead(); });
    }
  }
  ShardCache(const ShardCache&) = delete;
  ShardCache& operator=(const ShardCache&) = delete;

  /// Stops the I/O threads (a read in flight finishes first). In a child forked after the
  /// cache was made there are none to stop: the cache is left as it is (<stoke/core/fork.hpp>).
  ~ShardCache() {
    if (owner_.inherited()) {
      detail::abandon(std::move(io_threads_));
      return;
    }
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    work_.notify_all();
    for (auto& thread : io_threads_) thread.join();
  }

  /// Shard `s`: resident, read ahead, or read now in the calling thread.
  std::shared_ptr<const Shard> acquire(std::size_t s) {
    refuse_if_inherited();
    std::unique_lock lock(mutex_);
    check_shard(s);
    Entry& entry = entries_[s];
    entry.last_use = ++clock_;
    advance_cursor(s);
    if (entry.shard) {
      ++stats_.hits;
      return entry.shard;
    }
    const auto start = std::chrono::steady_clock::now();
    if (entry.loading) {
      ++stats_.waits;
      loaded_.wait(lock, [&] { return !entry.loading; });
      stats_.wait_seconds += seconds_since(start);
      if (entry.shard) return entry.shard;
      if (entry.error) std::rethrow_exception(std::exchange(entry.error, nullptr));
    }
    ++stats_.misses;
    std::shared_ptr<const Shard> shard = load_locked(lock, s, /*ahead=*/false);
    stats_.wait_seconds += seconds_since(start);
    return shard;
  }

  /// Shard `s` if it is resident now (a hit), else null; reads nothing.
  std::shared_ptr<const Shard> resident(std::size_t s) {
    refuse_if_inherited();
    std::lock_guard lock(mutex_);
    check_shard(s);
    Entry& entry = entries_[s];
    if (!entry.shard) return nullptr;
    entry.last_use = ++clock_;
    ++stats_.hits;
    return entry.shard;
  }

  /// The shards the next epoch visits, in order (a shard may come more than once). The plan in
  /// force is kept when it is the same (every local device plans the same epoch).
  void plan(std::vector<std::size_t> shards) {
    refuse_if_inherited();
    {
      std::lock_guard lock(mutex_);
      if (plan_ == shards) return;
      for (const std::size_t s : shards) check_shard(s);
      plan_ = std::move(shards);
      cursor_ = 0;
      starting_ = true;
    }
    work_.notify_all();
  }

  /// The counters so far.
  [[nodiscard]] ShardCacheStats stats() const {
    std::lock_guard lock(mutex_);
    return stats_;
  }

  /// Shards resident now.
  [[nodiscard]] std::size_t resident_count() const {
    std::lock_guard lock(mutex_);
    return resident_;
  }

 private:
  /// A cache made before a fork is not used in the child: its I/O threads are not there, and
  /// one of them may have held its mutex at the fork.
  void refuse_if_inherited() const {
    if (owner_.inherited()) {
      throw StateError(
          owner_.after_fork_message("this shard cache (of a dataset made before a "
                                    "fork)"));
    }
  }

  struct Entry {
    std::shared_ptr<const Shard> shard;
    std::size_t bytes = 0;
    std::uint64_t last_use = 0;
    bool loading = false;
    std::exception_ptr error;
  };

  static double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  void check_shard(std::size_t s) const {
    if (s >= entries_.size()) {
      throw UsageError("stoke: shard " + std::to_string(s) + " of a cache of " +
                       std::to_string(entries_.size()) + " shards");
    }
  }

  /// Moves the plan's cursor to the next visit of `s` at or after it, if the plan has one;
  /// not for the shard visited just before the cursor, which consumers that lag behind still
  /// read (a later visit of it, such as padding's wrap to the first shard, is not reached yet).
  void advance_cursor(std::size_t s) {
    if (cursor_ > 0 && cursor_ <= plan_.size() && plan_[cursor_ - 1] == s) return;
    const auto from = plan_.begin() + static_cast<std::ptrdiff_t>(std::min(cursor_, plan_.size()));
    const auto found = std::find(from, plan_.end(), s);
    if (found == plan_.end()) return;
    const auto position = static_cast<std::size_t>(found - plan_.begin());
    if (position != cursor_) {
      cursor_ = position;
      work_.notify_all();
    }
  }

  /// The shards the plan keeps resident, most needed first, at most `options_.resident` of
  /// them: the one at the cursor, the next one, the one visited before the cursor, then the
  /// ones after the next. The cursor is where the consumer furthest ahead is; the consumers that
  /// lag behind it (the other devices of the rank, the other workers, each with its batches
  /// queued ahead) still read the shard before it, so that one is kept before reading further
  /// ahead. Once the cursor moves on again, it may go. With `ahead`, only those the plan
  /// visits from the cursor on (the ones to read ahead).
  [[nodiscard]] std::vector<std::size_t> kept_shards(bool ahead = false) const {
    std::vector<std::size_t> seen;
    std::vector<std::size_t> kept;
    const auto keep = [&](std::size_t p, bool behind) {
      if (p >= plan_.size() || seen.size() >= options_.resident) return;
      if (std::find(seen.begin(), seen.end(), plan_[p]) != seen.end()) return;
      seen.push_back(plan_[p]);
      if (!(ahead && behind)) kept.push_back(plan_[p]);
    };
    keep(cursor_, false);
    keep(cursor_ + 1, false);
    if (cursor_ > 0) keep(cursor_ - 1, true);
    for (std::size_t p = cursor_ + 2; p < plan_.size() && seen.size() < options_.resident; ++p) {
      keep(p, false);
    }
    return kept;
  }

  /// Where `s` stands among `kept` (`kept.size()` when it is not kept).
  [[nodiscard]] static std::size_t kept_rank(const std::vector<std::size_t>& kept, std::size_t s) {
    return static_cast<std::size_t>(std::find(kept.begin(), kept.end(), s) - kept.begin());
  }

  /// Evicts shards until `bytes` more fit besides `keep`; whether they do. A read ahead
  /// (`force` false) evicts only a shard no batch uses and the plan does not keep
  /// (`kept_shards`); a read on demand evicts a shard no batch uses and not kept, then one no
  /// batch uses, then one not kept, then any. Among shards the plan does not keep, the least
  /// recently used goes first; among kept ones, the one needed last (a shard read ahead was
  /// used least recently, yet is the one needed soonest).
  bool make_room(std::size_t keep, std::size_t bytes, bool force) {
    const auto fits = [&] {
      return resident_ + reserved_ < options_.resident &&
             (options_.max_bytes == 0 || resident_bytes_ + bytes <= options_.max_bytes ||
              resident_ == 0);
    };
    // (spare a shard in use, spare a kept shard) for each tier, in order.
    constexpr std::pair<bool, bool> tiers[] = {
        {true, true}, {true, false}, {false, true}, {false, false}};
    const std::vector<std::size_t> kept = kept_shards();
    // Whether `s` should go before `victim`: not kept before kept, then as said above.
    const auto before = [&](std::size_t s, std::size_t victim) {
      const std::size_t rank = kept_rank(kept, s);
      const std::size_t victim_rank = kept_rank(kept, victim);
      if (rank != victim_rank) return rank > victim_rank;
      return entries_[s].last_use < entries_[victim].last_use;
    };
    while (!fits()) {
      std::optional<std::size_t> victim;
      for (const auto& [spare_used, spare_kept] : tiers) {
        for (std::size_t s = 0; s < entries_.size(); ++s) {
          const Entry& e = entries_[s];
          if (!e.shard || s == keep) continue;
          if (spare_used && e.shard.use_count() > 1) continue;
          if (spare_kept && kept_rank(kept, s) < kept.size()) continue;
          if (!victim || before(s, *victim)) victim = s;
        }
        if (victim || !force) break;
      }
      if (!victim) return false;
      Entry& e = entries_[*victim];
      e.shard.reset();
      resident_bytes_ -= e.bytes;
      --resident_;
      ++stats_.evictions;
    }
    return true;
  }

  /// Reads shard `s` (`lock` held on entry and on return, released while reading) and makes it
  /// resident; rethrows a failed read.
  std::shared_ptr<const Shard> load_locked(std::unique_lock<std::mutex>& lock, std::size_t s,
                                           bool ahead) {
    Entry& entry = entries_[s];
    entry.loading = true;
    entry.error = nullptr;
    lock.unlock();
    std::shared_ptr<const Shard> shard;
    std::exception_ptr error;
    std::size_t bytes = 0;
    try {
      shard = std::make_shared<const Shard>(load_(s));
      bytes = size_of_(*shard);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    entry.loading = false;
    if (ahead) --reserved_;  // the slot `next_to_read` kept for it
    loaded_.notify_all();
    work_.notify_all();  // an I/O thread held back while this one was the first may go on
    if (error) {
      if (ahead)
        entry.error = error;  // for the acquisition that waits for it
      else
        std::rethrow_exception(error);
      return nullptr;
    }
    ++stats_.loads;
    ++stats_.shard_loads[s];
    stats_.loaded_bytes += bytes;
    // A shard read on demand is needed now: room is made for it whatever the plan says.
    if (make_room(s, bytes, /*force=*/!ahead)) {
      entry.shard = shard;
      entry.bytes = bytes;
      ++resident_;
      resident_bytes_ += bytes;
      stats_.max_resident = std::max(stats_.max_resident, resident_);
      if (ahead) entry.last_use = ++clock_;
    }
    return shard;
  }

  /// The next shard to read ahead: the first of the shards the plan keeps from the cursor on
  /// (not the one before it, which is not read again) that is neither resident nor in flight,
  /// and for which there is room without evicting a kept shard; none while the epoch's first
  /// shard (the one at the cursor since `plan`) is in flight, so that it is read alone. Sets
  /// `waiting_for_room_` when there is a shard to read but no room yet.
  std::optional<std::size_t> next_to_read() {
    waiting_for_room_ = false;
    const std::vector<std::size_t> ahead = kept_shards(/*ahead=*/true);
    if (starting_ && !ahead.empty()) {
      const Entry& first = entries_[ahead.front()];
      if (first.shard || first.error) {
        starting_ = false;
      } else if (first.loading) {
        return std::nullopt;  // the epoch's first shard has the bandwidth to itself
      }
    }
    for (const std::size_t s : ahead) {
      const Entry& e = entries_[s];
      if (e.shard || e.loading || e.error) continue;
      if (!make_room(s, 0, /*force=*/false)) {
        waiting_for_room_ = true;
        return std::nullopt;
      }
      ++reserved_;  // no read on demand takes the room before this read lands
      return s;
    }
    return std::nullopt;
  }

  /// The loop of an I/O thread: reads the plan's next shards ahead while there is room. Room
  /// appears when batches let go of a shard, which nothing signals: it looks again every
  /// millisecond while a read ahead waits for room.
  void read_ahead() {
    std::unique_lock lock(mutex_);
    for (;;) {
      std::optional<std::size_t> next;
      while (!stopping_ && !(next = next_to_read()).has_value()) {
        if (waiting_for_room_) {
          work_.wait_for(lock, std::chrono::milliseconds(1));
        } else {
          work_.wait(lock);
        }
      }
      if (stopping_) return;
      (void)load_locked(lock, *next, /*ahead=*/true);
    }
  }

  Loader load_;
  Sizer size_of_;
  ShardCacheOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable work_;    ///< the plan or the cursor moved, or room was made
  std::condition_variable loaded_;  ///< a read finished
  std::vector<Entry> entries_;
  std::vector<std::size_t> plan_;
  std::size_t cursor_ = 0;
  std::size_t resident_ = 0;
  std::size_t reserved_ = 0;  ///< slots kept for reads ahead in flight
  std::size_t resident_bytes_ = 0;
  std::uint64_t clock_ = 0;
  bool stopping_ = false;
  bool waiting_for_room_ = false;  ///< a read ahead waits for a batch to let go of a shard
  bool starting_ = false;          ///< the plan's first shard is not resident yet
  ShardCacheStats stats_;
  detail::OwnerProcess owner_;
  std::vector<std::thread> io_threads_;
};

}  // namespace stoke
