#pragma once
/// @file
/// The samples of a WebDataset shard: its members grouped by key, each group checked to hold
/// exactly one image and one label, the label parsed.

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/images/detail/tar_reader.hpp>

namespace stoke::images::detail {

/// One sample of a shard: where its image lies, and its label.
struct WebDatasetSample {
  std::string key{};             ///< the members' shared path up to the first '.' of the basename
  std::size_t image_offset = 0;  ///< offset of the image member's bytes in the shard
  std::size_t image_size = 0;    ///< its bytes
  std::uint32_t label = 0;       ///< the label member's number
};

/// What makes a sample: the extensions of its image and of its label (lower case, no dot),
/// and the bound of the labels (0: any `std::uint32_t`).
struct WebDatasetFormat {
  std::vector<std::string> image_extensions{};  ///< lower case, no dot
  std::string label_extension{};                ///< lower case, no dot
  std::size_t num_classes = 0;                  ///< labels are below it (0: any)
};

/// The extension `text` in lower case without a leading dot.
inline std::string normalized_extension(std::string_view text) {
  if (!text.empty() && text.front() == '.') text.remove_prefix(1);
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

/// A member name split at the first '.' of its basename (the WebDataset convention):
/// `dir/n01.seg.png` is key `dir/n01`, extension `seg.png`. Empty key when the basename has no
/// dot, or starts with one.
struct KeyAndExtension {
  std::string_view key{};        ///< the path up to the first '.' of the basename
  std::string_view extension{};  ///< what follows that '.'
};

/// Splits `name` into key and extension (see `KeyAndExtension`).
inline KeyAndExtension split_member_name(std::string_view name) {
  const std::size_t slash = name.rfind('/');
  const std::size_t base = slash == std::string_view::npos ? 0 : slash + 1;
  const std::size_t dot = name.find('.', base);
  if (dot == std::string_view::npos || dot == base) return {};
  return {name.substr(0, dot), name.substr(dot + 1)};
}

/// The label in the text of a label member: a decimal number, optionally surrounded by ASCII
/// white space (a trailing newline); throws `InputError` naming the shard and the key when it
/// is not one, or not below `num_classes` (when set) and `std::uint32_t`'s range.
inline std::uint32_t parse_label(std::string_view text, std::string_view shard,
                                 std::string_view key, std::size_t num_classes) {
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  std::string_view digits = text;
  while (!digits.empty() && space(digits.front())) digits.remove_prefix(1);
  while (!digits.empty() && space(digits.back())) digits.remove_suffix(1);
  const std::string where = "stoke: tar '" + std::string(shard) + "', sample '" + std::string(key) +
                            "': label '" + tar_shown(std::as_bytes(std::span(text.substr(0, 32)))) +
                            (text.size() > 32 ? "...'" : "'");
  const auto value = tar_decimal(digits);
  if (!value) throw InputError(where + " is not a decimal number");
  const std::uint64_t bound =
      num_classes != 0 ? num_classes : std::uint64_t{std::numeric_limits<std::uint32_t>::max()} + 1;
  if (*value >= bound) {
    throw InputError(where + " is out of range (" +
                     (num_classes != 0 ? std::to_string(num_classes) + " classes"
                                       : std::string("labels are 32-bit")) +
                     ")");
  }
  return static_cast<std::uint32_t>(*value);
}

/// The samples of the shard `shard` (its bytes `bytes`, its regular members `members`, in
/// archive order): consecutive members sharing a key form a sample; members whose extension
/// is neither an image nor the label extension are ignored, and so are keys with only such
/// members. Throws `InputError` naming the shard and the key when a sample lacks its image or
/// label, has two of either, has a bad label, or when a key comes back after other keys.
inline std::vector<WebDatasetSample> group_samples(std::span<const std::byte> bytes,
                                                   const std::vector<TarMember>& members,
                                                   std::string_view shard,
                                                   const WebDatasetFormat& format) {
  std::vector<WebDatasetSample> samples;
  std::unordered_set<std::string> done;  // keys of closed samples
  const TarMember* image = nullptr;
  const TarMember* label = nullptr;
  std::string key;
  const auto fail = [&](const std::string& what) -> void {
    throw InputError("stoke: tar '" + std::string(shard) + "', sample '" + key + "': " + what);
  };
  const auto image_list = [&] {
    std::string out;
    for (const auto& e : format.image_extensions) out += (out.empty() ? "." : ", .") + e;
    return out;
  };
  const auto close = [&] {
    if (image == nullptr && label == nullptr) return;
    if (image == nullptr) fail("no image member (" + image_list() + ")");
    if (label == nullptr) fail("no label member (." + format.label_extension + ")");
    const std::string_view text(reinterpret_cast<const char*>(bytes.data() + label->data_offset),
                                label->size);
    const std::uint32_t value = parse_label(text, shard, key, format.num_classes);
    samples.push_back({key, image->data_offset, image->size, value});
    done.insert(key);
    image = nullptr;
    label = nullptr;
  };
  for (const TarMember& member : members) {
    const auto [member_key, member_extension] = split_member_name(member.name);
    if (member_key.empty()) continue;
    const std::string extension = normalized_extension(member_extension);
    const bool is_image = std::find(format.image_extensions.begin(), format.image_extensions.end(),
                                    extension) != format.image_extensions.end();
    const bool is_label = extension == format.label_extension;
    if (!is_image && !is_label) continue;
    if (member_key != key) {
      close();
      key = member_key;
      if (done.contains(key)) {
        fail("its members are not consecutive (member '" + member.name + "' at offset " +
             std::to_string(member.header_offset) + " comes after other keys)");
      }
    }
    const TarMember*& slot = is_image ? image : label;
    if (slot != nullptr) {
      fail(std::string("a second ") + (is_image ? "image" : "label") + " member '" + member.name +
           "' at offset " + std::to_string(member.header_offset) + " (the first is '" + slot->name +
           "')");
    }
    slot = &member;
  }
  close();
  return samples;
}

}  // namespace stoke::images::detail
