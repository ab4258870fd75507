#pragma once
/// @file
/// `TarShards`: the images and labels of WebDataset tar shards as one sharded dataset of
/// `EncodedImage`, read in place from the memory-mapped shards.

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
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
#include <stoke/data/sources/mmap_records.hpp>
#include <stoke/data/sources/sharded_arrays.hpp>
#include <stoke/images/detail/tar_reader.hpp>
#include <stoke/images/detail/webdataset_samples.hpp>
#include <stoke/images/image.hpp>

namespace stoke::images {

/// What a `TarShards` reads as a sample.
struct TarShardsOptions {
  /// Extensions of the image member (case-insensitive, with or without the dot).
  std::vector<std::string> image_extensions{"jpg", "jpeg", "png"};
  /// Extension of the label member, whose text is a decimal number (case-insensitive).
  std::string label_extension = "cls";
  /// Labels must be below this (0: any 32-bit label).
  std::size_t num_classes = 0;
  /// Shards advised to the kernel ahead of the one being read (`read_ahead`).
  std::size_t read_ahead_shards = 2;
};

namespace detail {

/// The members `options` reads: image extensions and label extension normalised.
inline WebDatasetFormat webdataset_format(const TarShardsOptions& options) {
  WebDatasetFormat format{.label_extension = normalized_extension(options.label_extension),
                          .num_classes = options.num_classes};
  for (const auto& extension : options.image_extensions) {
    format.image_extensions.push_back(normalized_extension(extension));
  }
  return format;
}

/// The samples of the tar archive `bytes` (named `name` in errors); throws `InputError` when it
/// is not a valid archive, holds an invalid sample or no sample at all.
inline std::vector<WebDatasetSample> tar_samples(std::span<const std::byte> bytes,
                                                 const std::string& name,
                                                 const WebDatasetFormat& format) {
  auto samples = group_samples(bytes, read_tar_members(bytes, name), name, format);
  if (samples.empty()) {
    throw InputError(
        "stoke: tar '" + name +
        "' holds no sample (no member with the extension of an image or of the label)");
  }
  return samples;
}

}  // namespace detail

/// Images in WebDataset tar shards: every shard a tar archive whose members are grouped into
/// samples by key (the member path up to the first '.' of its basename: `n01/0042.jpg` and
/// `n01/0042.cls` are sample `n01/0042`), samples in archive order, shard after shard.
///
/// - Each sample holds exactly one image member (`.jpg`, `.jpeg`, `.png` by default) and one
///   label member (`.cls`: decimal text, white space around it allowed). Members with other
///   extensions (`.json`, `.txt`) are ignored, and so are keys that have only such members.
/// - Opening maps every shard and reads every header and label: a sample lacking its image or
///   label, with two of either, with a label that is not a number or out of range, or whose
///   members are not consecutive is refused then (`InputError` naming the shard and the key),
///   as is a damaged archive (naming the shard and the header's offset).
/// - `get` returns the image's bytes in place, inside the mapping, which the returned
///   `EncodedImage` keeps alive; copies of the dataset share the mappings.
/// - A `ShardedDataset`: `shard_begins()` lets a loader's `shuffle_shards` and shard rank split
///   keep consecutive samples in one shard; `read_ahead` advises the kernel to read the
///   next shards of the epoch ahead.
///
/// As with `MmapRecordDataset`, a shard must not shrink while it is mapped (reading past its
/// new end raises SIGBUS). POSIX only.
class TarShards {
 public:
  /// The shards `files`, in this order. Throws `UsageError` when there are none, and
  /// `InputError` when a shard cannot be mapped, is not a valid tar archive, holds an invalid
  /// sample (see the class) or no sample at all.
  explicit TarShards(std::vector<std::filesystem::path> files, TarShardsOptions options = {})
      : shared_(std::make_shared<Shared>()) {
    if (files.empty()) throw UsageError("stoke: TarShards needs at least one shard");
    Shared& s = *shared_;
    s.options = std::move(options);
    const detail::WebDatasetFormat format = detail::webdataset_format(s.options);
    std::size_t total = 0;
    for (auto& file : files) {
      auto mapping = std::make_shared<const stoke::detail::FileMapping>(std::move(file));
      auto samples = detail::tar_samples(mapping->bytes(), mapping->path().string(), format);
      s.begins.push_back(total);
      total += samples.size();
      s.files.push_back(mapping->path());
      s.mappings.push_back(std::move(mapping));
      s.samples.push_back(std::move(samples));
    }
    s.size = total;
  }

  /// The shards in `directory` whose names match the shell pattern `pattern` (`train-*.tar`),
  /// sorted by name (see `files_matching`); throws as `files_matching` and the constructor above.
  /// (The pattern is a `std::string_view` so that `TarShards({a, b})` takes two files.)
  TarShards(const std::filesystem::path& directory, std::string_view pattern,
            TarShardsOptions options = {})
      : TarShards(files_matching(directory, std::string(pattern)), std::move(options)) {}

  /// Samples in all shards.
  [[nodiscard]] std::size_t size() const noexcept { return shared_->size; }

  /// Sample `index`: its image's bytes inside the mapped shard, its label, and
  /// `"<shard path>:<key>"` as its source. Throws `UsageError` when out of range.
  [[nodiscard]] EncodedImage get(std::size_t index) const {
    stoke::check_index(index, size(), "TarShards");
    const auto [k, i] = locate(index);
    note_read(k);
    const Shared& s = *shared_;
    const detail::WebDatasetSample& sample = s.samples[k][i];
    const auto* data = reinterpret_cast<const std::uint8_t*>(s.mappings[k]->bytes().data());
    return {.bytes = {data + sample.image_offset, sample.image_size},
            .storage = s.mappings[k],
            .label = sample.label,
            .source = s.files[k].string() + ":" + sample.key};
  }

  /// Where each shard's samples begin.
  [[nodiscard]] const std::vector<std::size_t>& shard_begins() const noexcept {
    return shared_->begins;
  }

  /// The shards, in order.
  [[nodiscard]] const std::vector<std::filesystem::path>& shards() const noexcept {
    return shared_->files;
  }

  /// The key of sample `index` (its members' shared name); throws `UsageError` when out of
  /// range.
  [[nodiscard]] const std::string& key(std::size_t index) const {
    stoke::check_index(index, size(), "TarShards");
    const auto [k, i] = locate(index);
    return shared_->samples[k][i].key;
  }

  /// The label of sample `index`, without touching its image; throws `UsageError` when out of
  /// range.
  [[nodiscard]] std::uint32_t label(std::size_t index) const {
    stoke::check_index(index, size(), "TarShards");
    const auto [k, i] = locate(index);
    return shared_->samples[k][i].label;
  }

  /// The order the next epoch visits the shards in (the loader calls it as each epoch begins):
  /// advises the kernel to read the first `read_ahead_shards` of them, then, as `get` reaches
  /// each shard of the list, the ones that many after it (`posix_madvise` `WILLNEED`: the
  /// reading happens in the background, and this returns at once). Shard numbers out of range
  /// are ignored.
  void read_ahead(std::span<const std::size_t> shards) const {
    Shared& s = *shared_;
    const std::lock_guard lock(s.plan_mutex);
    s.plan.clear();
    s.advised.clear();
    s.plan_position.assign(s.files.size(), no_position);
    for (const std::size_t shard : shards) {
      if (shard < s.files.size() && s.plan_position[shard] == no_position) {
        s.plan_position[shard] = s.plan.size();
        s.plan.push_back(shard);
      }
    }
    s.advised_upto = 0;
    s.current.store(no_position, std::memory_order_relaxed);
    advise_upto(std::min(s.options.read_ahead_shards, s.plan.size()));
  }

  /// The shards advised to the kernel since the last `read_ahead`, in the order advised
  /// (for checking the read-ahead).
  [[nodiscard]] std::vector<std::size_t> prefetched_shards() const {
    const std::lock_guard lock(shared_->plan_mutex);
    return shared_->advised;
  }

 private:
  static constexpr std::size_t no_position = std::numeric_limits<std::size_t>::max();

  struct Shared {
    TarShardsOptions options;
    std::vector<std::filesystem::path> files;
    std::vector<std::shared_ptr<const stoke::detail::FileMapping>> mappings;
    std::vector<std::vector<detail::WebDatasetSample>> samples;  // per shard
    std::vector<std::size_t> begins;
    std::size_t size = 0;
    // The read-ahead: the epoch's shard order, and how far along it the kernel was advised.
    mutable std::mutex plan_mutex;
    std::vector<std::size_t> plan;
    std::vector<std::size_t> plan_position;  // per shard: its place in `plan`, or no_position
    std::vector<std::size_t> advised;        // shards advised, in order
    std::size_t advised_upto = 0;            // plan[0, advised_upto) were advised
    std::atomic<std::size_t> current{no_position};  // the shard `get` last read
  };

  /// The shard of sample `index` and its place in it.
  [[nodiscard]] std::pair<std::size_t, std::size_t> locate(std::size_t index) const {
    return locate_in_shards(shared_->begins, index);
  }

  /// Advises plan[advised_upto, end) (the caller holds the lock).
  void advise_upto(std::size_t end) const {
    Shared& s = *shared_;
    for (; s.advised_upto < end; ++s.advised_upto) {
      const std::size_t shard = s.plan[s.advised_upto];
      const auto bytes = s.mappings[shard]->bytes();
      // A hint: a refusal changes nothing but the speed, so its result is not checked.
      (void)::posix_madvise(const_cast<std::byte*>(bytes.data()), bytes.size(),
                            POSIX_MADV_WILLNEED);
      s.advised.push_back(shard);
    }
  }

  /// `get` reads shard `k`: when it is a shard it did not read just before, advises the ones
  /// `read_ahead_shards` after it in the plan.
  void note_read(std::size_t k) const {
    Shared& s = *shared_;
    if (s.current.load(std::memory_order_relaxed) == k) return;
    if (s.current.exchange(k, std::memory_order_relaxed) == k) return;
    const std::lock_guard lock(s.plan_mutex);
    if (s.plan_position.empty() || s.plan_position[k] == no_position) return;
    advise_upto(std::min(s.plan_position[k] + 1 + s.options.read_ahead_shards, s.plan.size()));
  }

  std::shared_ptr<Shared> shared_;
};

}  // namespace stoke::images
