#pragma once
/// @file
/// `ShardedArrays`: one dataset over many array files (a shard per file, their first axes laid
/// end to end), read through a `ShardCache` that keeps at most K of them in memory and reads
/// the next ones ahead in the order the epoch visits them.

#include <fnmatch.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/data/check_index.hpp>
#include <stoke/data/shard_begins.hpp>
#include <stoke/data/shard_cache.hpp>
#include <stoke/data/sources/array_shard.hpp>

namespace stoke {

/// How the files of a `ShardedArrays` are read: `info` reads a file's header (type and shape,
/// at open), `load` its whole array (when the cache needs the shard), and `read_rows`, if set,
/// a few rows of it (a window that runs over the end of a shard into one that is not resident
/// reads only the rows it needs). `npy_format()` and `hdf5_format(variable)` make them.
struct ArrayFileFormat {
  std::function<ArrayInfo(const std::filesystem::path&)> info{};   ///< the header of a file
  std::function<ArrayShard(const std::filesystem::path&)> load{};  ///< the array of a file
  /// Rows `[first, first + count)` of a file (optional).
  std::function<ArrayShard(const std::filesystem::path&, std::size_t, std::size_t)> read_rows{};
  /// Called at open with the shards read ahead of the one in use (optional): a store read
  /// through a node cache refuses there a bound too small for them.
  std::function<void(std::size_t window)> prepare{};
  /// Called with the files of each epoch's order (optional): the node cache evicts by it.
  std::function<void(const std::vector<std::filesystem::path>&)> plan{};
};

/// The regular files in `directory` whose names match the shell pattern `pattern` (`*.npy`,
/// `era5_????.h5`), sorted by name; throws `InputError` naming the directory when it cannot be
/// read or nothing matches.
inline std::vector<std::filesystem::path> files_matching(const std::filesystem::path& directory,
                                                         const std::string& pattern) {
  std::vector<std::filesystem::path> files;
  std::error_code error;
  for (std::filesystem::directory_iterator it(directory, error), end; !error && it != end;
       it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (it->is_regular_file() && ::fnmatch(pattern.c_str(), name.c_str(), 0) == 0) {
      files.push_back(it->path());
    }
  }
  if (error) {
    throw InputError("stoke: cannot list '" + directory.string() + "': " + error.message());
  }
  if (files.empty()) {
    throw InputError("stoke: no file in '" + directory.string() + "' matches '" + pattern + "'");
  }
  std::sort(files.begin(), files.end());
  return files;
}

/// The rows of many array files as one dataset of `ArrayRow<T>`: shard `k` is file `k`, and
/// its rows follow those of file `k - 1` (for example one file per month of hourly fields).
///
/// - A `ShardedDataset`: `shard_begins()` says where each file begins, so `shuffle_shards`
///   keeps consecutive batches in one file.
/// - Rows are views into the cached shard, kept alive by the row: no copy, and a shard evicted
///   while a batch still uses it is freed when the batch lets go. A shard that is not aligned
///   for `T` (a stored `.npz` member, read in place where the archive put it) gives a copy of
///   each row instead (see `ArrayShard::array_row`); the shard itself stays in place.
/// - At most `cache.resident` shards (and `cache.max_bytes`) are resident per process, shared
///   by every copy of the dataset (every worker thread and local device); besides them, the
///   heads of as many shards that windows ran over into (see `rows`).
/// - The loader tells it the order of the epoch's shards (`read_ahead`); the cache's I/O
///   threads read the next ones while the current one is trained on.
/// Opening reads every file's header and checks that all hold `T` with the same row shape.
template <class T>
class ShardedArrays {
 public:
  /// The files `files`, in this order, read with `format`; throws `InputError` naming the file
  /// when one cannot be read, holds another type than `T` or rows of another shape.
  ShardedArrays(std::vector<std::filesystem::path> files, ArrayFileFormat format,
                ShardCacheOptions cache = {})
      : shared_(std::make_shared<Shared>()) {
    if (files.empty()) throw UsageError("stoke: ShardedArrays needs at least one file");
    Shared& s = *shared_;
    s.files = std::move(files);
    s.format = std::move(format);
    std::size_t rows = 0;
    for (const auto& file : s.files) {
      const ArrayInfo info = s.format.info(file);
      check_compatible(file, info, s.files.front(), s.begins.empty() ? info : s.info);
      if (s.begins.empty()) s.info = info;
      s.begins.push_back(rows);
      s.rows.push_back(info.rows());
      rows += info.rows();
    }
    s.size = rows;
    s.info.shape.front() = rows;
    s.heads_kept = cache.resident;
    if (s.format.prepare) s.format.prepare(read_ahead_depth(cache));
    s.cache = std::make_unique<ShardCache<ArrayShard>>(
        s.files.size(), [&s](std::size_t k) { return s.load(k); },
        [](const ArrayShard& shard) { return shard.bytes().size(); }, cache);
  }

  /// Rows of all files together.
  [[nodiscard]] std::size_t size() const noexcept { return shared_->size; }
  /// Where each file's rows begin.
  [[nodiscard]] const std::vector<std::size_t>& shard_begins() const noexcept {
    return shared_->begins;
  }
  /// The files, one shard each.
  [[nodiscard]] const std::vector<std::filesystem::path>& files() const noexcept {
    return shared_->files;
  }
  /// Element type and shape of all rows together (the first dimension is `size()`).
  [[nodiscard]] const ArrayInfo& info() const noexcept { return shared_->info; }

  /// Row `index`, a view into its shard; throws `UsageError` when out of range, and what the
  /// reader throws (an `InputError` naming the file) when its shard cannot be read.
  [[nodiscard]] ArrayRow<T> get(std::size_t index) const {
    stoke::check_index(index, size(), "ShardedArrays");
    const auto [k, row] = locate(index);
    const std::shared_ptr<const ArrayShard> shard = shared_->cache->acquire(k);
    return shard->template array_row<T>(row, 1, shard);
  }

  /// Copies the bytes of row `index` (`info().row_bytes()` of them) into `out`, straight from
  /// its shard at any alignment: for a reader that gathers rows into a buffer of its own (no
  /// `ArrayRow`, and no copy of a row of an unaligned shard on the way). Throws as `get`, and
  /// `UsageError` when `out` holds another number of bytes.
  void copy_row(std::size_t index, std::span<std::byte> out) const {
    stoke::check_index(index, size(), "ShardedArrays");
    const auto [k, row] = locate(index);
    const std::shared_ptr<const ArrayShard> shard = shared_->cache->acquire(k);
    const std::span<const std::byte> bytes = shard->row_bytes(row);
    if (out.size() != bytes.size()) {
      throw UsageError("stoke: ShardedArrays::copy_row into " + std::to_string(out.size()) +
                       " bytes; a row holds " + std::to_string(bytes.size()));
    }
    std::memcpy(out.data(), bytes.data(), bytes.size());
  }

  /// Rows `[first, first + count)`: a view when they lie in one shard (as `get`: a copy where
  /// that shard is not aligned), else a copy of the rows of every shard they span (a window
  /// across the end of a file). The shard of the first row comes through the cache; rows that run
  /// over into a later shard come from it if it is resident, else from a read of just the head of
  /// that shard (`ArrayFileFormat::read_rows`), so that a rank does not read a whole shard another
  /// rank owns for the head of a window. The heads read are kept, for as many shards as the cache
  /// keeps resident: the first read of a shard's head reads the rows asked for; a later one that
  /// needs more reads the `count - 1` rows that any window of `count` rows can need from it, so
  /// that the windows running over one file's end read the next file's head at most twice, not once
  /// each.
  [[nodiscard]] ArrayRow<T> rows(std::size_t first, std::size_t count) const {
    if (first > size() || count > size() - first || count == 0) {
      throw UsageError("stoke: ShardedArrays rows [" + std::to_string(first) + ", " +
                       std::to_string(first + count) + ") of " + std::to_string(size()));
    }
    auto [k, row] = locate(first);
    if (row + count <= shared_->rows[k]) {
      const std::shared_ptr<const ArrayShard> shard = shared_->cache->acquire(k);
      return shard->template array_row<T>(row, count, shard);
    }
    const std::size_t per_row = shared_->info.row_elements();
    std::shared_ptr<T[]> copy(new T[count * per_row]);
    for (std::size_t left = count; left > 0; ++k, row = 0) {
      const std::size_t take = std::min(left, shared_->rows[k] - row);
      std::shared_ptr<const ArrayShard> shard =
          left == count ? shared_->cache->acquire(k) : shared_->cache->resident(k);
      std::size_t from = row;
      if (!shard && shared_->format.read_rows) {
        shard = shared_->head(k, take, count - 1);  // `row` is 0: a later shard's first rows
      } else if (!shard) {
        shard = shared_->cache->acquire(k);
      }
      shard->template copy_values<T>(from, take,
                                     {copy.get() + (count - left) * per_row, take * per_row});
      left -= take;
    }
    return {std::span<const T>(copy.get(), count * per_row), std::move(copy)};
  }

  /// Rows read outside the cache (the heads of windows that ran over into a shard that was not
  /// resident, each read once or twice per shard, see `rows`), and their bytes.
  [[nodiscard]] std::pair<std::size_t, std::size_t> partial_reads() const {
    return {shared_->partial_rows.load(), shared_->partial_bytes.load()};
  }

  /// The order the next epoch visits the shards in (the loader calls it): the cache reads the
  /// next ones ahead.
  void read_ahead(std::span<const std::size_t> shards) const {
    if (shared_->format.plan) {
      std::vector<std::filesystem::path> order;
      for (const std::size_t k : shards) order.push_back(shared_->files.at(k));
      shared_->format.plan(order);
    }
    shared_->cache->plan(std::vector<std::size_t>(shards.begin(), shards.end()));
  }

  /// What the cache did so far: shards read, bytes, hits, waits.
  [[nodiscard]] ShardCacheStats cache_stats() const { return shared_->cache->stats(); }

 private:
  struct Shared {
    std::vector<std::filesystem::path> files;
    ArrayFileFormat format;
    ArrayInfo info;
    std::vector<std::size_t> begins;
    std::vector<std::size_t> rows;
    std::size_t size = 0;
    std::unique_ptr<ShardCache<ArrayShard>> cache;
    std::atomic<std::size_t> partial_rows{0};   ///< rows read outside the cache
    std::atomic<std::size_t> partial_bytes{0};  ///< their bytes
    /// The first rows of a shard, read outside the cache for the heads of windows.
    struct Head {
      std::size_t shard = 0;
      std::shared_ptr<const ArrayShard> rows;
    };
    std::mutex heads_mutex;
    std::vector<Head> heads;     ///< the heads kept, oldest first
    std::size_t heads_kept = 0;  ///< shards whose heads are kept at most

    /// The first `count` rows of shard `k` (or more): a head kept, else read. The first read
    /// of a shard's head reads `count` rows; a later one reads `longest` (at most the shard).
    std::shared_ptr<const ArrayShard> head(std::size_t k, std::size_t count, std::size_t longest) {
      bool again = false;
      {
        std::lock_guard lock(heads_mutex);
        for (const Head& kept : heads) {
          if (kept.shard != k) continue;
          if (kept.rows->rows() >= count) return kept.rows;
          again = true;
        }
      }
      const std::size_t want = again ? std::max(count, std::min(longest, rows[k])) : count;
      auto read = std::make_shared<const ArrayShard>(read_rows(k, 0, want));
      std::lock_guard lock(heads_mutex);
      for (const Head& kept : heads) {
        if (kept.shard == k && kept.rows->rows() >= want) return read;  // another thread's
      }
      std::erase_if(heads, [&](const Head& kept) { return kept.shard == k; });
      heads.push_back({k, read});
      if (heads.size() > std::max<std::size_t>(heads_kept, 1)) heads.erase(heads.begin());
      return read;
    }

    /// Reads rows `[first, first + count)` of shard `k` alone, checking what it got.
    ArrayShard read_rows(std::size_t k, std::size_t first, std::size_t count) {
      ArrayShard shard = format.read_rows(files[k], first, count);
      ArrayInfo expected = info;
      expected.shape.front() = count;
      if (shard.info() != expected) {
        throw InputError("stoke: rows [" + std::to_string(first) + ", " +
                         std::to_string(first + count) + ") of '" + files[k].string() +
                         "' read as " + describe(shard.info()) + ", expected " +
                         describe(expected));
      }
      partial_rows += count;
      partial_bytes += shard.bytes().size();
      return shard;
    }

    /// Reads shard `k`, checking it still is what its header said at open.
    ArrayShard load(std::size_t k) const {
      ArrayShard shard = format.load(files[k]);
      ArrayInfo expected = info;
      expected.shape.front() = rows[k];
      if (shard.info() != expected) {
        throw InputError("stoke: '" + files[k].string() + "' holds " + describe(shard.info()) +
                         " now, " + describe(expected) + " when the dataset was opened");
      }
      return shard;
    }
  };

  static void check_compatible(const std::filesystem::path& file, const ArrayInfo& info,
                               const std::filesystem::path& first, const ArrayInfo& reference) {
    if (info.dtype != dtype_of<T>()) {
      throw InputError("stoke: '" + file.string() + "' holds " + dtype_name(info.dtype) +
                       ", the dataset reads " + dtype_name(dtype_of<T>()));
    }
    if (info.shape.empty()) {
      throw InputError("stoke: '" + file.string() + "' holds a 0-dimensional array: no rows");
    }
    if (info.row_shape() != reference.row_shape()) {
      throw InputError("stoke: '" + file.string() + "' holds " + describe(info) +
                       ", whose rows differ from those of '" + first.string() + "' (" +
                       describe(reference) + ")");
    }
  }

  /// The shard of row `index` and the row within it.
  [[nodiscard]] std::pair<std::size_t, std::size_t> locate(std::size_t index) const {
    return locate_in_shards(shared_->begins, index);
  }

  std::shared_ptr<Shared> shared_;
};

}  // namespace stoke
