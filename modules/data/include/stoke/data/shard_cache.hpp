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

namespace stoke {

/// How many shards a `ShardCache` keeps and how it reads ahead.
struct ShardCacheOptions {
  std::size_t resident = 2;    ///< shards in memory at most (at least 1; 2 lets one be read ahead)
  std::size_t max_bytes = 0;   ///< a byte budget for the resident shards too (0: none)
  std::size_t io_threads = 1;  ///< threads that read shards ahead (0: no reading ahead)
};

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
///    A read ahead evicts only a shard that no batch holds and the plan does not visit next; a
///    read on demand prefers such a shard, least recently used first. An epoch that visits
///    shard after shard reads each once when K covers the shard read ahead and those that the
///    batches being built read: with W workers and batches that span at most two shards, at
///    most W + 1 shards, so K = W + 2 (K = 3 for batches much smaller than a shard, whose
///    workers are mostly within one shard, is usually enough, but not always).
/// 3. `plan(shards)` tells it the order the epoch visits the shards in; the I/O threads
///    then keep the shards after the one acquired last read ahead, as many as fit. Because a
///    stoke epoch order is a pure function of (seed, epoch), the loader knows this order before
///    the epoch starts.
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

  /// Stops the I/O threads (a read in flight finishes first).
  ~ShardCache() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    work_.notify_all();
    for (auto& thread : io_threads_) thread.join();
  }

  /// Shard `s`: resident, read ahead, or read now in the calling thread.
  std::shared_ptr<const Shard> acquire(std::size_t s) {
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
    {
      std::lock_guard lock(mutex_);
      if (plan_ == shards) return;
      for (const std::size_t s : shards) check_shard(s);
      plan_ = std::move(shards);
      cursor_ = 0;
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

  /// Moves the plan's cursor to the next visit of `s` at or after it, if the plan has one.
  void advance_cursor(std::size_t s) {
    const auto from = plan_.begin() + static_cast<std::ptrdiff_t>(std::min(cursor_, plan_.size()));
    const auto found = std::find(from, plan_.end(), s);
    if (found == plan_.end()) return;
    const auto position = static_cast<std::size_t>(found - plan_.begin());
    if (position != cursor_) {
      cursor_ = position;
      work_.notify_all();
    }
  }

  /// Whether `s` is among the shards the plan visits from the cursor on, within `window`.
  [[nodiscard]] bool upcoming(std::size_t s, std::size_t window) const {
    const std::size_t end = std::min(plan_.size(), cursor_ + window);
    for (std::size_t p = cursor_; p < end; ++p) {
      if (plan_[p] == s) return true;
    }
    return false;
  }

  /// Evicts shards until `bytes` more fit besides `keep`; whether they do. A read ahead
  /// (`force` false) evicts only a shard no batch uses and the plan does not visit next; a read
  /// on demand evicts, least recently used first, a shard no batch uses and not visited next,
  /// then one no batch uses, then one not visited next, then any.
  bool make_room(std::size_t keep, std::size_t bytes, bool force) {
    const auto fits = [&] {
      return resident_ + reserved_ < options_.resident &&
             (options_.max_bytes == 0 || resident_bytes_ + bytes <= options_.max_bytes ||
              resident_ == 0);
    };
    // (spare a shard in use, spare an upcoming shard) for each tier, in order.
    constexpr std::pair<bool, bool> tiers[] = {
        {true, true}, {true, false}, {false, true}, {false, false}};
    while (!fits()) {
      std::optional<std::size_t> victim;
      for (const auto& [spare_used, spare_upcoming] : tiers) {
        for (std::size_t s = 0; s < entries_.size(); ++s) {
          const Entry& e = entries_[s];
          if (!e.shard || s == keep) continue;
          if (spare_used && e.shard.use_count() > 1) continue;
          if (spare_upcoming && upcoming(s, options_.resident)) continue;
          if (!victim || e.last_use < entries_[*victim].last_use) victim = s;
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

  /// The next shard to read ahead: the first of the plan's next shards that is neither
  /// resident nor in flight, and for which there is room without evicting an upcoming shard.
  /// Sets `waiting_for_room_` when there is a shard to read but no room yet.
  std::optional<std::size_t> next_to_read() {
    waiting_for_room_ = false;
    const std::size_t end = std::min(plan_.size(), cursor_ + options_.resident);
    for (std::size_t p = cursor_; p < end; ++p) {
      const std::size_t s = plan_[p];
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
  ShardCacheStats stats_;
  std::vector<std::thread> io_threads_;
};

}  // namespace stoke
