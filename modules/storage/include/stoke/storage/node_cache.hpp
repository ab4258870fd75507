#pragma once
/// @file
/// `NodeCache`: a folder of fetched objects with a byte bound, shared by every process and
/// thread of a node through file locks, evicting the object needed furthest in the future.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <stoke/core/atomic_file.hpp>
#include <stoke/core/error.hpp>
#include <stoke/core/fork.hpp>
#include <stoke/core/read_file.hpp>
#include <stoke/storage/file_lock.hpp>

namespace stoke::storage {

/// Where a `NodeCache` keeps its objects and how many bytes it may hold.
struct NodeCacheOptions {
  std::filesystem::path folder{};  ///< the cache's folder, on a local disk (created if missing)
  std::uint64_t max_bytes = 0;     ///< bytes of cached objects at most (must be > 0)
};

/// What one `NodeCache` (one process's handle on the folder) did since it was made.
struct NodeCacheStats {
  std::size_t hits = 0;             ///< objects found in the folder
  std::size_t fetches = 0;          ///< objects fetched from their store
  std::uint64_t fetched_bytes = 0;  ///< bytes of those objects
  std::size_t evictions = 0;        ///< objects this handle removed to make room
  std::size_t not_kept = 0;  ///< objects fetched but not kept: every other one was still needed
};

/// What every process of the node fetched through the folder, ever (kept in the folder).
struct NodeCacheTotals {
  std::size_t fetches = 0;          ///< objects fetched from their stores
  std::uint64_t fetched_bytes = 0;  ///< bytes of those objects
};

/// Test hooks of `NodeCache`: a hook that never returns stands for a process killed there.
struct NodeCacheHooks {
  /// Called when half of a fetched object is written to its temporary file.
  std::function<void()> mid_write;
};

/// A byte-bounded cache of fetched objects in a folder of a node's local disk, shared by every
/// process (and thread) that opens the same folder.
///
/// 1. `get(name, fetch)` returns the object `name` (a URL) from the folder, or calls `fetch`,
///    writes the bytes to a temporary file, and renames it into the folder, under a lock of
///    that object: processes that want the same object at once fetch it once.
/// 2. The folder is the only state. Every lock is an `flock`, which the kernel drops when its
///    holder dies, SIGKILL included; a temporary file whose object nobody holds locked is a dead
///    writer's and is removed. Nothing lives in `/dev/shm`. A process killed at any point
///    leaves the cache consistent.
/// 3. Cached objects hold at most `max_bytes`. To make room it evicts, first, objects no live
///    process's plan reads again (least recently used first), then the object whose next read
///    is furthest in the future. It never evicts an object a live process's plan reads next:
///    from the one before its cursor (lagging readers) to `depth` ahead of it. When nothing
///    more can go, the object fetched is returned but not kept (`not_kept`).
/// 4. `plan(names, depth)` publishes this process's order of reads (in the folder, beside a
///    lock it holds while it lives, so that others see when it is gone); each `get` moves its
///    cursor to the object's next place in the plan. `require` refuses, at open, a bound below
///    what that read-ahead depth needs.
/// 5. An object is cached by its name (URL): one that changes in its store is not fetched
///    again while it is cached (a manifest's sizes catch a changed shard). Remove the folder to
///    start afresh.
/// 6. Fork-safe: a handle used in a forked child registers the child as a process of its own.
///    The folder is shared; nothing of the parent's threads is needed.
class NodeCache {
 public:
  /// Opens (creates) the cache in `options.folder`. Throws `UsageError` for a bound of 0.
  explicit NodeCache(NodeCacheOptions options, NodeCacheHooks hooks = {})
      : options_(std::move(options)), hooks_(std::move(hooks)) {
    if (options_.max_bytes == 0) {
      throw UsageError("stoke: the node cache in '" + options_.folder.string() +
                       "' needs a byte bound (max_bytes) above 0");
    }
    std::filesystem::create_directories(options_.folder / ".procs");
    std::filesystem::create_directories(options_.folder / ".locks");
    register_process();
    recover();
  }
  NodeCache(const NodeCache&) = delete;
  NodeCache& operator=(const NodeCache&) = delete;

  /// Removes this process's plan from the folder (its lock goes with it).
  ~NodeCache() {
    if (owner_ != ::getpid()) return;  // a child's inherited handle: the parent's files stay
    std::error_code ignored;
    std::filesystem::remove(plan_path(), ignored);
    std::filesystem::remove(alive_path(), ignored);
  }

  /// The cache's folder and bound.
  [[nodiscard]] const NodeCacheOptions& options() const noexcept { return options_; }

  /// Refuses (`UsageError`, naming the size needed) a bound too small for the objects of
  /// `sizes` read with `depth` of them ahead: the plan keeps `depth + 2` objects (the one
  /// before the cursor, the one at it, `depth` ahead), so the bound must hold the
  /// `depth + 2` largest. `what` names the reader in the message.
  void require(std::span<const std::uint64_t> sizes, std::size_t depth,
               std::string_view what) const {
    std::vector<std::uint64_t> sorted(sizes.begin(), sizes.end());
    std::ranges::sort(sorted, std::greater<>());
    sorted.resize(std::min(sorted.size(), depth + 2));
    std::uint64_t needed = 0;
    for (const std::uint64_t size : sorted) needed += size;
    if (options_.max_bytes < needed) {
      throw UsageError("stoke: the node cache in '" + options_.folder.string() + "' holds " +
                       std::to_string(options_.max_bytes) + " bytes, but " + std::string(what) +
                       " reading " + std::to_string(depth) + " objects ahead needs " +
                       std::to_string(needed) + " bytes (its " + std::to_string(sorted.size()) +
                       " largest objects): set max_bytes to at least " + std::to_string(needed));
    }
  }

  /// Publishes the order this process reads `names` in, and that it reads `depth` ahead.
  void plan(const std::vector<std::string>& names, std::size_t depth) {
    const std::lock_guard lock(mutex_);
    ensure_registered();
    std::vector<std::string> entries;
    for (const std::string& name : names) entries.push_back(entry_name(name));
    if (entries == plan_ && depth == depth_) return;  // every local device plans the epoch
    plan_ = std::move(entries);
    depth_ = depth;
    cursor_ = 0;
    std::string text = std::to_string(depth_) + "\n";
    for (const std::string& entry : plan_) text += entry + "\n";
    write_file_atomically(plan_path(), text);
    publish_cursor();
  }

  /// The object `name`: from the folder, else `fetch()`ed and kept (see the class).
  std::vector<std::byte> get(std::string_view name,
                             const std::function<std::vector<std::byte>()>& fetch) {
    const std::string entry = entry_name(name);
    {
      const std::lock_guard lock(mutex_);
      ensure_registered();
      advance_cursor(entry);
    }
    if (auto cached = read_entry(entry)) return count_hit(std::move(*cached));
    FileLock object_lock(options_.folder / ".locks" / (entry + ".lock"));
    object_lock.lock();
    if (auto cached = read_entry(entry)) return count_hit(std::move(*cached));
    remove_temporaries_of(entry);  // we hold its lock: any is a dead writer's
    std::vector<std::byte> bytes = fetch();
    const std::filesystem::path temporary = write_temporary(entry, bytes);
    FileLock folder_lock(options_.folder / ".lock");
    folder_lock.lock();
    add_to_totals(bytes.size());
    const bool room = make_room(bytes.size());
    const std::lock_guard lock(mutex_);
    ++stats_.fetches;
    stats_.fetched_bytes += bytes.size();
    if (room) {
      std::filesystem::rename(temporary, options_.folder / entry);
    } else {
      std::filesystem::remove(temporary);
      ++stats_.not_kept;
    }
    return bytes;
  }

  /// This handle's counters.
  [[nodiscard]] NodeCacheStats stats() const {
    const std::lock_guard lock(mutex_);
    return stats_;
  }

  /// What every process fetched through this folder.
  [[nodiscard]] NodeCacheTotals totals() const {
    std::ifstream file(options_.folder / ".totals");
    NodeCacheTotals totals;
    file >> totals.fetches >> totals.fetched_bytes;
    return totals;
  }

  /// The bytes of the objects in the folder now.
  [[nodiscard]] std::uint64_t cached_bytes() const {
    std::uint64_t bytes = 0;
    for (const Entry& e : entries()) bytes += e.size;
    return bytes;
  }

  /// Whether `name` is in the folder now.
  [[nodiscard]] bool holds(std::string_view name) const {
    return std::filesystem::exists(options_.folder / entry_name(name));
  }

  /// The file name of `name` in the folder: a hash of it, then its last part (readable).
  [[nodiscard]] static std::string entry_name(std::string_view name) {
    std::uint64_t hash = 1469598103934665603ULL;  // FNV-1a
    for (const char c : name) {
      hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
    }
    static constexpr char digits[] = "0123456789abcdef";
    std::string entry(16, '0');
    for (int i = 15; i >= 0; --i, hash >>= 4)
      entry[static_cast<std::size_t>(i)] = digits[hash & 15];
    std::string tail(name.substr(name.find_last_of('/') + 1));
    for (char& c : tail) {
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_')) c = '_';
    }
    return entry + "-" + tail.substr(0, 64);
  }

 private:
  /// A cached object in the folder.
  struct Entry {
    std::string name;
    std::uint64_t size = 0;
    std::int64_t modified = 0;  ///< nanoseconds, for least recently used
  };

  /// When a live process reads an object next: its distance from that process's cursor, and
  /// whether the process keeps it (it is within its read-ahead depth).
  struct Need {
    std::size_t distance = std::numeric_limits<std::size_t>::max();
    bool kept = false;
  };

  [[nodiscard]] std::filesystem::path alive_path() const {
    return options_.folder / ".procs" / (process_id_ + ".alive");
  }
  [[nodiscard]] std::filesystem::path plan_path() const {
    return options_.folder / ".procs" / (process_id_ + ".plan");
  }

  /// Names this handle as a process of the node: a file it holds locked while it lives.
  void register_process() {
    static std::atomic<std::uint64_t> handles{0};
    owner_ = ::getpid();
    process_id_ = std::to_string(owner_) + "-" + std::to_string(handles.fetch_add(1));
    // Another process may take an alive file it finds unlocked for a dead one's and remove
    // it, between its creation and its lock here: then make it again.
    for (;;) {
      alive_.emplace(alive_path());
      if (!alive_->try_lock()) {
        throw Error("stoke: the node cache file '" + alive_path().string() + "' is locked already");
      }
      struct ::stat held{}, named{};
      if (::fstat(alive_->fd(), &held) == 0 && ::stat(alive_path().c_str(), &named) == 0 &&
          held.st_ino == named.st_ino) {
        break;
      }
    }
    if (!plan_.empty()) {
      std::string text = std::to_string(depth_) + "\n";
      for (const std::string& entry : plan_) text += entry + "\n";
      write_file_atomically(plan_path(), text);
    }
    publish_cursor();
  }

  /// What a process killed at any point left: the files of dead processes and the temporary
  /// files of dead writers (no one holds their object's lock) go.
  void recover() {
    FileLock folder_lock(options_.folder / ".lock");
    folder_lock.lock();
    (void)needs();
    for (const auto& file : std::filesystem::directory_iterator(options_.folder)) {
      const std::string name = file.path().filename().string();
      const std::size_t temporary = name.find(".tmp.");
      if (temporary == std::string::npos) continue;
      FileLock object_lock(options_.folder / ".locks" / (name.substr(0, temporary) + ".lock"));
      if (object_lock.try_lock()) {
        std::error_code ignored;
        std::filesystem::remove(file.path(), ignored);
      }
    }
  }

  /// In a child forked after the handle was made: registers the child (the parent's lock stays
  /// the parent's).
  void ensure_registered() {
    if (owner_ == ::getpid()) return;
    alive_.reset();
    register_process();
  }

  /// Writes the cursor into this process's alive file, for the others to read.
  void publish_cursor() const {
    std::string text = std::to_string(cursor_);
    text.resize(20, ' ');
    if (::pwrite(alive_->fd(), text.data(), text.size(), 0) !=
        static_cast<::ssize_t>(text.size())) {
      throw Error("stoke: cannot write the cursor of the node cache to '" + alive_path().string() +
                  "'");
    }
  }

  /// Moves the cursor to the next place of `entry` in the plan (from the cursor on).
  void advance_cursor(const std::string& entry) {
    const auto from = plan_.begin() + static_cast<std::ptrdiff_t>(std::min(cursor_, plan_.size()));
    const auto found = std::find(from, plan_.end(), entry);
    if (found == plan_.end() || found == from) return;
    cursor_ = static_cast<std::size_t>(found - plan_.begin());
    publish_cursor();
  }

  std::vector<std::byte> count_hit(std::vector<std::byte> bytes) {
    const std::lock_guard lock(mutex_);
    ++stats_.hits;
    return bytes;
  }

  /// The bytes of `entry` if it is in the folder (an eviction after the open does not hurt:
  /// the open file stays readable). Marks it used.
  [[nodiscard]] std::optional<std::vector<std::byte>> read_entry(const std::string& entry) const {
    const std::filesystem::path path = options_.folder / entry;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    struct Closer {
      int fd;
      ~Closer() { ::close(fd); }
    } closer{fd};
    ::futimens(fd, nullptr);  // least recently used, among objects no plan reads again
    struct ::stat info{};
    if (::fstat(fd, &info) != 0) return std::nullopt;
    std::vector<std::byte> bytes(static_cast<std::size_t>(info.st_size));
    std::size_t filled = 0;
    while (filled < bytes.size()) {
      const ::ssize_t got =
          ::pread(fd, bytes.data() + filled, bytes.size() - filled, static_cast<::off_t>(filled));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        throw InputError("stoke: cannot read the cached object '" + path.string() + "' at offset " +
                         std::to_string(filled));
      }
      filled += static_cast<std::size_t>(got);
    }
    return bytes;
  }

  /// Writes `bytes` to a new temporary file for `entry`; returns its path.
  std::filesystem::path write_temporary(const std::string& entry,
                                        std::span<const std::byte> bytes) {
    static std::atomic<std::uint64_t> counter{0};
    const std::filesystem::path path =
        options_.folder /
        (entry + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1)));
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) stoke::detail::throw_file_error("create", path, errno);
    struct Closer {
      int fd;
      ~Closer() { ::close(fd); }
    } closer{fd};
    try {
      const std::size_t half = bytes.size() / 2;
      stoke::detail::write_all(fd, bytes.first(half), path);
      if (hooks_.mid_write) hooks_.mid_write();
      stoke::detail::write_all(fd, bytes.subspan(half), path);
    } catch (...) {
      ::unlink(path.c_str());  // a full disk, say: nothing half-written stays
      throw;
    }
    return path;
  }

  /// Removes the temporary files of `entry` (its lock held: their writers are dead).
  void remove_temporaries_of(const std::string& entry) const {
    const std::string prefix = entry + ".tmp.";
    for (const auto& file : std::filesystem::directory_iterator(options_.folder)) {
      if (file.path().filename().string().starts_with(prefix)) {
        std::error_code ignored;
        std::filesystem::remove(file.path(), ignored);
      }
    }
  }

  /// The cached objects in the folder (not temporary files, not the cache's own files).
  [[nodiscard]] std::vector<Entry> entries() const {
    std::vector<Entry> found;
    for (const auto& file : std::filesystem::directory_iterator(options_.folder)) {
      const std::string name = file.path().filename().string();
      if (name.starts_with('.') || name.find(".tmp.") != std::string::npos) continue;
      struct ::stat info{};
      if (::stat(file.path().c_str(), &info) != 0) continue;  // evicted meanwhile
      found.push_back(
          {name, static_cast<std::uint64_t>(info.st_size),
           static_cast<std::int64_t>(info.st_mtim.tv_sec) * 1'000'000'000 + info.st_mtim.tv_nsec});
    }
    return found;
  }

  /// The needs of every live process (this one's from memory), and removes the files of the
  /// dead. The folder lock is held.
  [[nodiscard]] std::map<std::string, Need> needs() {
    std::map<std::string, Need> needs;
    const auto add = [&](const std::vector<std::string>& plan, std::size_t cursor,
                         std::size_t depth) {
      const std::size_t first = cursor == 0 ? 0 : cursor - 1;
      for (std::size_t p = first; p < plan.size(); ++p) {
        Need& need = needs[plan[p]];
        need.distance = std::min(need.distance, p < cursor ? 0 : p - cursor);
        need.kept = need.kept || p <= cursor + depth;
      }
    };
    for (const auto& file : std::filesystem::directory_iterator(options_.folder / ".procs")) {
      const std::filesystem::path& path = file.path();
      if (path.extension() != ".alive" || path.stem().string() == process_id_) continue;
      FileLock other(path);
      if (other.try_lock()) {  // its process is gone
        std::error_code ignored;
        std::filesystem::remove(path, ignored);
        std::filesystem::remove(std::filesystem::path(path).replace_extension(".plan"), ignored);
        continue;
      }
      std::ifstream cursor_file(path);
      std::size_t cursor = 0;
      cursor_file >> cursor;
      std::ifstream plan_file(std::filesystem::path(path).replace_extension(".plan"));
      std::size_t depth = 0;
      std::vector<std::string> plan;
      if (!(plan_file >> depth)) continue;  // no plan yet
      for (std::string entry; plan_file >> entry;) plan.push_back(std::move(entry));
      add(plan, cursor, depth);
    }
    const std::lock_guard lock(mutex_);
    add(plan_, cursor_, depth_);
    return needs;
  }

  /// Evicts objects until `incoming` more bytes fit (the folder lock held); whether they do.
  bool make_room(std::uint64_t incoming) {
    std::vector<Entry> cached = entries();
    std::uint64_t used = 0;
    for (const Entry& e : cached) used += e.size;
    if (used + incoming <= options_.max_bytes) return true;
    const std::map<std::string, Need> need = needs();
    const auto need_of = [&](const Entry& e) {
      const auto found = need.find(e.name);
      return found == need.end() ? Need{} : found->second;
    };
    std::erase_if(cached, [&](const Entry& e) { return need_of(e).kept; });
    // Not needed again first (least recently used first), then needed furthest ahead.
    std::ranges::sort(cached, [&](const Entry& a, const Entry& b) {
      const std::size_t da = need_of(a).distance;
      const std::size_t db = need_of(b).distance;
      if (da != db) return da > db;
      return a.modified < b.modified;
    });
    for (const Entry& victim : cached) {
      if (used + incoming <= options_.max_bytes) break;
      std::error_code error;
      if (std::filesystem::remove(options_.folder / victim.name, error)) {
        used -= victim.size;
        const std::lock_guard lock(mutex_);
        ++stats_.evictions;
      }
    }
    return used + incoming <= options_.max_bytes;
  }

  /// Adds a fetch of `bytes` to the node's totals (the folder lock held).
  void add_to_totals(std::uint64_t bytes) const {
    NodeCacheTotals totals = this->totals();
    ++totals.fetches;
    totals.fetched_bytes += bytes;
    write_file_atomically(
        options_.folder / ".totals",
        std::to_string(totals.fetches) + " " + std::to_string(totals.fetched_bytes) + "\n");
  }

  NodeCacheOptions options_;
  NodeCacheHooks hooks_;
  mutable stoke::detail::ForkGuarded mutex_;  ///< the plan, the cursor and the counters
  pid_t owner_ = 0;
  std::string process_id_;
  std::optional<FileLock> alive_;
  std::vector<std::string> plan_;
  std::size_t cursor_ = 0;
  std::size_t depth_ = 0;
  NodeCacheStats stats_;
};

}  // namespace stoke::storage
