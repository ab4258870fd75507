#pragma once
/// @file
/// A reader of ustar archives (POSIX ustar, GNU and pax) held in memory: the list of their
/// regular files, each with its name and where its bytes lie, every header checked.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <stoke/core/error.hpp>

namespace stoke::images::detail {

/// Bytes of a tar block (headers, and the unit member data is padded to).
inline constexpr std::size_t tar_block = 512;

/// The longest member name read from a GNU long-name entry or a pax `path` record, and the
/// largest pax extended header read: the names come from the input, so they are bounded.
inline constexpr std::size_t tar_max_long_name = 65536;

/// One regular file of an archive.
struct TarMember {
  std::string name{};             ///< its path in the archive (a long name where it has one)
  std::size_t header_offset = 0;  ///< offset of its header (the last one, after any 'L'/'x')
  std::size_t data_offset = 0;    ///< offset of its first byte
  std::size_t size = 0;           ///< its bytes
};

/// Throws `InputError` "stoke: tar '<file>', header at offset <offset>: <what>".
[[noreturn]] inline void tar_fail(std::string_view file, std::size_t offset,
                                  const std::string& what) {
  throw InputError("stoke: tar '" + std::string(file) + "', header at offset " +
                   std::to_string(offset) + ": " + what);
}

/// The text of a NUL-terminated field (all of it when it has no NUL).
inline std::string_view tar_text(std::span<const std::byte> field) {
  const auto* chars = reinterpret_cast<const char*>(field.data());
  const std::string_view text(chars, field.size());
  return text.substr(0, std::min(text.find('\0'), text.size()));
}

/// The field's bytes shown for an error message (non-printable bytes as `\xNN`).
inline std::string tar_shown(std::span<const std::byte> field) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  for (const std::byte b : field) {
    const auto c = std::to_integer<unsigned char>(b);
    if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += digits[c >> 4U];
      out += digits[c & 0xFU];
    }
  }
  return out;
}

/// The number in a numeric header field: octal digits, optionally led by spaces and ended by
/// NUL or space (then only NULs and spaces), or GNU's base-256 (the first byte's high bit set,
/// the rest a big-endian integer); nullopt for anything else, a negative base-256 value, or a
/// value above `std::uint64_t`.
inline std::optional<std::uint64_t> tar_number(std::span<const std::byte> field) {
  const auto byte_at = [&](std::size_t i) { return std::to_integer<unsigned char>(field[i]); };
  if (!field.empty() && (byte_at(0) & 0x80U) != 0) {
    if (byte_at(0) != 0x80) return std::nullopt;  // 0xff: negative; others: not defined
    std::uint64_t value = 0;
    for (std::size_t i = 1; i < field.size(); ++i) {
      if (value > (std::numeric_limits<std::uint64_t>::max() >> 8U)) return std::nullopt;
      value = value << 8U | byte_at(i);
    }
    return value;
  }
  std::size_t i = 0;
  while (i < field.size() && byte_at(i) == ' ') ++i;
  std::uint64_t value = 0;
  for (; i < field.size() && byte_at(i) >= '0' && byte_at(i) <= '7'; ++i) {
    if (value > (std::numeric_limits<std::uint64_t>::max() >> 3U)) return std::nullopt;
    value = value << 3U | (byte_at(i) - '0');
  }
  for (; i < field.size(); ++i) {
    if (byte_at(i) != '\0' && byte_at(i) != ' ') return std::nullopt;
  }
  return value;
}

/// Whether the header checksum (field at 148, 8 bytes) matches the header's bytes summed with
/// the field taken as spaces, unsigned (POSIX) or signed (some historic writers).
inline bool tar_checksum_matches(std::span<const std::byte> header, std::uint64_t stored) {
  std::uint64_t unsigned_sum = 0;
  std::int64_t signed_sum = 0;
  for (std::size_t i = 0; i < tar_block; ++i) {
    const bool in_field = i >= 148 && i < 156;
    const auto u =
        in_field ? static_cast<unsigned char>(' ') : std::to_integer<unsigned char>(header[i]);
    unsigned_sum += u;
    signed_sum += static_cast<signed char>(u);
  }
  return stored == unsigned_sum || static_cast<std::int64_t>(stored) == signed_sum;
}

/// Whether the block is all zeros (an end-of-archive block).
inline bool tar_zero_block(std::span<const std::byte> block) {
  return std::all_of(block.begin(), block.end(), [](std::byte b) { return b == std::byte{0}; });
}

/// What a pax extended header says about the next member: its `path` and `size`, if it has them.
struct PaxOverrides {
  std::optional<std::string> path{};    ///< the `path` record's value
  std::optional<std::uint64_t> size{};  ///< the `size` record's value
};

/// The decimal number `text` (digits only, no sign); nullopt when it is not one or overflows.
inline std::optional<std::uint64_t> tar_decimal(std::string_view text) {
  if (text.empty() || text.size() > 20) return std::nullopt;
  std::uint64_t value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    const auto digit = static_cast<std::uint64_t>(c - '0');
    if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  return value;
}

/// The records `<length> <key>=<value>\n` of a pax extended header's data: keeps `path` and
/// `size`, skips the other keys; throws `InputError` at `header_offset` on a malformed record.
inline PaxOverrides read_pax_records(std::string_view data, std::string_view file,
                                     std::size_t header_offset) {
  PaxOverrides out;
  std::size_t at = 0;
  while (at < data.size()) {
    if (data[at] == '\0') break;  // some writers pad the data with NULs
    const std::size_t space = data.find(' ', at);
    // 0 stands for no length: a record is longer than its length field and the space.
    const std::uint64_t length =
        space == std::string_view::npos ? 0 : tar_decimal(data.substr(at, space - at)).value_or(0);
    const std::string where = "pax record at byte " + std::to_string(at) + " of its data";
    if (length <= space - at + 1 || length > data.size() - at) {
      tar_fail(file, header_offset,
               where + ": no valid length (a record is '<length> key=value\\n')");
    }
    const std::string_view record = data.substr(at, static_cast<std::size_t>(length));
    if (record.back() != '\n') tar_fail(file, header_offset, where + ": does not end in a newline");
    const std::string_view body = record.substr(space - at + 1, record.size() - (space - at + 2));
    const std::size_t equals = body.find('=');
    if (equals == std::string_view::npos || equals == 0) {
      tar_fail(file, header_offset, where + ": no 'key=value'");
    }
    const std::string_view key = body.substr(0, equals);
    const std::string_view value = body.substr(equals + 1);
    if (key == "path") {
      if (value.find('\0') != std::string_view::npos) {
        tar_fail(file, header_offset, where + ": the path holds a NUL byte");
      }
      if (value.empty()) {
        out.path.reset();
      } else {
        out.path = std::string(value);
      }
    } else if (key == "size") {
      const auto size = tar_decimal(value);
      if (!size) {
        tar_fail(
            file, header_offset,
            where + ": size '" + std::string(value.substr(0, 32)) + "' is not a decimal number");
      }
      out.size = size;
    }
    at += record.size();
  }
  return out;
}

/// The regular files of the tar archive `bytes` (the file `file`, for messages), in archive
/// order: ustar headers with their checksums checked and numeric fields in octal or base-256,
/// GNU long names ('L'), pax extended headers ('x', their `path` and `size`); pax global
/// headers ('g'), GNU long link names ('K'), directories, links and devices are skipped. The
/// archive ends at a zero block followed by a zero block or the end of the file.
///
/// Throws `InputError` naming the file, the offset of the header at fault and the reason: a
/// truncated header or member, a bad checksum, magic or number, a member running past the end
/// of the file, a long name or pax header over `tar_max_long_name` bytes, a GNU sparse member,
/// a long name or pax header that no member follows, a file that ends without the zero blocks.
/// Allocates only the list and the names, each bounded by the input's size.
inline std::vector<TarMember> read_tar_members(std::span<const std::byte> bytes,
                                               std::string_view file) {
  std::vector<TarMember> members;
  std::optional<std::string> long_name;  // from an 'L' entry, for the next member
  PaxOverrides pax;                      // from an 'x' entry, for the next member
  std::size_t pending_at = 0;            // the header of the pending 'L' or 'x' entry
  bool pending = false;
  std::size_t at = 0;
  for (;;) {
    if (at == bytes.size()) {
      tar_fail(file, at,
               "the file ends without the end-of-archive blocks (truncated after " +
                   std::to_string(members.size()) + " members?)");
    }
    if (bytes.size() - at < tar_block) {
      tar_fail(file, at,
               "truncated header: " + std::to_string(bytes.size() - at) + " of 512 bytes");
    }
    const std::span<const std::byte> header = bytes.subspan(at, tar_block);
    if (tar_zero_block(header)) {
      const std::size_t next = at + tar_block;
      if (next == bytes.size() ||
          (bytes.size() - next >= tar_block && tar_zero_block(bytes.subspan(next, tar_block)))) {
        break;
      }
      tar_fail(file, at, "a zero block not followed by a second one (a damaged archive)");
    }
    const auto stored_checksum = tar_number(header.subspan(148, 8));
    if (!stored_checksum) {
      tar_fail(file, at,
               "checksum field '" + tar_shown(header.subspan(148, 8)) + "' is not an octal number");
    }
    if (!tar_checksum_matches(header, *stored_checksum)) {
      tar_fail(file, at,
               "header checksum mismatch (stored " + std::to_string(*stored_checksum) +
                   "): not a tar header, or a damaged one");
    }
    const std::string_view magic = tar_text(header.subspan(257, 6));
    if (magic != "ustar" && magic != "ustar ") {
      tar_fail(file, at, "no ustar magic (found '" + tar_shown(header.subspan(257, 8)) + "')");
    }
    const bool posix = std::to_integer<char>(header[262]) == '\0';  // "ustar\0", not "ustar  "
    const auto header_size = tar_number(header.subspan(124, 12));
    if (!header_size) {
      tar_fail(file, at,
               "size field '" + tar_shown(header.subspan(124, 12)) +
                   "' is not an octal or base-256 number");
    }
    const auto type = std::to_integer<char>(header[156]);
    const bool regular = type == '0' || type == '\0' || type == '7';
    // A pax size applies to the member the pax header describes, not to 'L'/'x'/'g' entries.
    const bool describes_member = type != 'L' && type != 'K' && type != 'x' && type != 'g';
    const std::uint64_t size = describes_member && pax.size ? *pax.size : *header_size;
    const std::size_t data_offset = at + tar_block;
    // Entries without data: links, devices, fifos and directories (as GNU tar and Python).
    const bool has_data = !(type >= '1' && type <= '6');
    if (has_data && size > bytes.size() - data_offset) {
      tar_fail(file, at,
               "its " + std::to_string(size) + " bytes of data run past the end of the file (" +
                   std::to_string(bytes.size() - data_offset) + " bytes left)");
    }
    const auto data_size = has_data ? static_cast<std::size_t>(size) : std::size_t{0};
    const auto data = bytes.subspan(data_offset, data_size);
    const std::string_view data_text(reinterpret_cast<const char*>(data.data()), data.size());
    switch (type) {
      case 'L':
        if (data_size > tar_max_long_name) {
          tar_fail(file, at,
                   "a GNU long name of " + std::to_string(data_size) + " bytes (at most " +
                       std::to_string(tar_max_long_name) + ")");
        }
        long_name = std::string(data_text.substr(0, std::min(data_text.find('\0'), data_size)));
        if (long_name->empty()) tar_fail(file, at, "an empty GNU long name");
        pending = true;
        pending_at = at;
        break;
      case 'x':
        if (data_size > tar_max_long_name) {
          tar_fail(file, at,
                   "a pax extended header of " + std::to_string(data_size) + " bytes (at most " +
                       std::to_string(tar_max_long_name) + ")");
        }
        pax = read_pax_records(data_text, file, at);
        pending = true;
        pending_at = at;
        break;
      case 'g':
      case 'K':
        break;
      case 'S':
        tar_fail(file, at, "a GNU sparse member, which is not supported");
      default: {
        if (regular) {
          std::string name;
          if (pax.path) {
            name = std::move(*pax.path);
          } else if (long_name) {
            name = std::move(*long_name);
          } else {
            const std::string_view prefix = posix ? tar_text(header.subspan(345, 155)) : "";
            const std::string_view base = tar_text(header.subspan(0, 100));
            name =
                prefix.empty() ? std::string(base) : std::string(prefix) + "/" + std::string(base);
          }
          if (name.empty()) tar_fail(file, at, "a regular file without a name");
          members.push_back({std::move(name), at, data_offset, data_size});
        }
        long_name.reset();
        pax = {};
        pending = false;
      }
    }
    at = data_offset + (data_size + tar_block - 1) / tar_block * tar_block;
    if (at > bytes.size()) at = bytes.size();  // the last member's padding is missing
    if (pending && at == bytes.size()) {
      tar_fail(file, pending_at, "a long name or pax header that no member follows");
    }
  }
  if (pending) tar_fail(file, pending_at, "a long name or pax header that no member follows");
  return members;
}

}  // namespace stoke::images::detail
