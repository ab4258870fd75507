#pragma once
/// @file
/// The preamble and header of numpy's `.npy` format (versions 1.0, 2.0 and 3.0), parsed and
/// checked from bytes: what the npy and npz readers share.

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include <stoke/core/error.hpp>
#include <stoke/data/sources/array_shard.hpp>

static_assert(std::endian::native == std::endian::little,
              "stoke: the npy reader maps little-endian data in place");

namespace stoke::detail {

/// The longest npy header read (`stoke::npy_max_header`).
inline constexpr std::size_t npy_header_limit = std::size_t{1} << 20U;

/// Where npy bytes come from, for errors: `name` is "npy file 'a.npy'" or "npz file 'a.npz',
/// member 'x.npy'"; `offsets` says what offsets are relative to ("" for a file of its own).
struct NpySource {
  std::string name;
  std::string offsets;

  /// Throws `InputError` "stoke: <name>: <what>".
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError("stoke: " + name + ": " + what);
  }
  /// "at offset N" and what it is relative to.
  [[nodiscard]] std::string at(std::size_t offset) const {
    return "at offset " + std::to_string(offset) + offsets;
  }
};

/// What the 10- or 12-byte preamble says: where the header text starts and where it ends.
struct NpyPreamble {
  std::size_t header_offset = 0;  ///< 10 (version 1.0) or 12 (2.0, 3.0)
  std::size_t data_offset = 0;    ///< the end of the header, where the data starts
};

/// What a whole npy header says.
struct NpyLayout {
  ArrayInfo info;
  std::size_t data_offset = 0;  ///< where the data starts
  std::size_t data_size = 0;    ///< bytes of data the shape needs
};

/// The bytes a preamble needs to be parsed: 12 (10 suffice for version 1.0).
inline constexpr std::size_t npy_preamble_size = 12;

/// Parses the preamble at the start of `bytes` (the first `npy_preamble_size` bytes, or all
/// there are): the magic string, the version and the header length. Refuses a wrong magic
/// string, an unknown version, a header longer than `npy_header_limit` and a truncated preamble.
inline NpyPreamble parse_npy_preamble(std::span<const std::byte> bytes, const NpySource& source) {
  constexpr std::string_view magic = "\x93NUMPY";
  const auto byte = [&](std::size_t i) { return std::to_integer<unsigned>(bytes[i]); };
  for (std::size_t i = 0; i < magic.size() && i < bytes.size(); ++i) {
    if (byte(i) != static_cast<unsigned char>(magic[i])) {
      std::string hex;
      for (std::size_t j = 0; j < magic.size() && j < bytes.size(); ++j) {
        std::array<char, 3> digits{};
        std::snprintf(digits.data(), digits.size(), "%02x", byte(j));
        hex += digits.data();
      }
      source.fail("not an npy array: wrong magic string 0x" + hex + " " + source.at(0) +
                  " (expected 0x934e554d5059, \"\\x93NUMPY\")");
    }
  }
  const auto truncated = [&](std::size_t need) {
    source.fail("truncated header: it ends " + source.at(bytes.size()) + ", the preamble needs " +
                std::to_string(need) + " bytes");
  };
  if (bytes.size() < 8) truncated(10);
  const unsigned major = byte(6);
  if (major < 1 || major > 3 || byte(7) != 0) {
    source.fail("unsupported npy format version " + std::to_string(major) + "." +
                std::to_string(byte(7)) + " " + source.at(6) + " (stoke reads 1.0, 2.0 and 3.0)");
  }
  NpyPreamble preamble;
  preamble.header_offset = major == 1 ? 10 : 12;
  if (bytes.size() < preamble.header_offset) truncated(preamble.header_offset);
  std::size_t length = byte(8) | byte(9) << 8U;
  if (major > 1) length |= std::size_t{byte(10)} << 16U | std::size_t{byte(11)} << 24U;
  if (length > npy_header_limit) {
    source.fail("header length " + std::to_string(length) + " " + source.at(8) +
                " is beyond stoke's limit of " + std::to_string(npy_header_limit) + " bytes");
  }
  preamble.data_offset = preamble.header_offset + length;
  return preamble;
}

/// The dtype of the npy descr `descr` (little-endian, or without byte order for one byte),
/// refusing big-endian, object, and every other dtype; `at` says where the descr is.
inline DType npy_dtype(std::string_view descr, const NpySource& source, const std::string& at) {
  static constexpr std::array<std::pair<std::string_view, DType>, 11> known{{
      {"b1", DType::boolean},
      {"u1", DType::u8},
      {"i1", DType::i8},
      {"u2", DType::u16},
      {"i2", DType::i16},
      {"u4", DType::u32},
      {"i4", DType::i32},
      {"u8", DType::u64},
      {"i8", DType::i64},
      {"f4", DType::f32},
      {"f8", DType::f64},
  }};
  const std::string quoted = "'" + std::string(descr) + "'";
  if (descr.size() == 3) {
    for (const auto& [code, dtype] : known) {
      if (descr.substr(1) != code) continue;
      const char order = descr[0];
      if (order == '<' || (dtype_size(dtype) == 1 && (order == '|' || order == '>'))) {
        return dtype;
      }
      if (order == '>') {
        source.fail("big-endian dtype " + quoted + " " + at +
                    ": stoke reads little-endian data; save it with arr.astype('<" +
                    std::string(code) + "')");
      }
    }
  }
  if (descr.find('O') != std::string_view::npos) {
    source.fail("object array (dtype " + quoted + ") " + at +
                ": it holds pickled Python objects, which stoke does not read");
  }
  source.fail("unsupported dtype " + quoted + " " + at +
              "; stoke reads <f4, <f8, |u1, |i1, <u2, <i2, <u4, <i4, <u8, <i8 and |b1");
}

/// Reads the header dictionary of an npy file, a Python literal such as
/// `{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }`.
class NpyHeaderParser {
 public:
  NpyHeaderParser(std::string_view text, std::size_t base, const NpySource& source)
      : text_(text), base_(base), source_(source) {}

  /// The array the header describes; refuses what `npy_layout` lists.
  ArrayInfo parse() {
    std::optional<std::string> descr;
    std::optional<bool> fortran;
    std::optional<std::vector<std::size_t>> shape;
    std::size_t descr_at = 0;
    std::size_t shape_at = 0;
    expect('{');
    while (peek() != '}') {
      const std::size_t key_at = pos_;  // peek skipped the space before the key
      const std::string key = string();
      expect(':');
      skip_space();
      if (key == "descr" && !descr) {
        descr_at = pos_;
        if (peek() == '[') {
          fail("structured dtype (a list of fields) " + at(pos_) +
               "; stoke reads arrays of one plain element type");
        }
        descr = string();
      } else if (key == "fortran_order" && !fortran) {
        fortran = boolean();
      } else if (key == "shape" && !shape) {
        shape_at = pos_;
        shape = tuple();
      } else {
        fail("unexpected key '" + key + "' " + at(key_at) +
             " (the header holds 'descr', 'fortran_order' and 'shape', each once)");
      }
      if (peek() != ',') break;
      ++pos_;
    }
    expect('}');
    skip_space();
    if (pos_ != text_.size()) fail("unexpected text after the header dictionary " + at(pos_));
    if (!descr || !fortran || !shape) {
      fail("the header " + at(0) + " lacks " +
           std::string(!descr     ? "'descr'"
                       : !fortran ? "'fortran_order'"
                                  : "'shape'"));
    }
    ArrayInfo info;
    info.dtype = npy_dtype(*descr, source_, at(descr_at));
    if (*fortran) {
      fail("Fortran-order array ('fortran_order': True) " + at(0) +
           "; stoke reads C order: save it with np.save(path, np.ascontiguousarray(arr))");
    }
    if (shape->empty()) {
      fail("0-d array (shape ()) " + at(shape_at) +
           ": it has no first axis to index samples by; save it with np.atleast_1d(arr)");
    }
    info.shape = std::move(*shape);
    return info;
  }

  /// "at offset N" of the header character `pos`.
  [[nodiscard]] std::string at(std::size_t pos) const { return source_.at(base_ + pos); }

 private:
  [[noreturn]] void fail(const std::string& what) const { source_.fail(what); }
  [[noreturn]] void malformed(const std::string& expected) const {
    fail("malformed header: expected " + expected + " " + at(pos_));
  }

  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' ||
                                   text_[pos_] == '\t' || text_[pos_] == '\r'))
      ++pos_;
  }
  char peek() {
    skip_space();
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }
  void expect(char c) {
    if (peek() != c) malformed(std::string("'") + c + "'");
    ++pos_;
  }
  std::string string() {
    const char quote = peek();
    if (quote != '\'' && quote != '"') malformed("a quoted string");
    const std::size_t end = text_.find(quote, pos_ + 1);
    if (end == std::string_view::npos) malformed("a closing quote for the string");
    std::string out(text_.substr(pos_ + 1, end - pos_ - 1));
    if (out.find('\\') != std::string::npos) malformed("a string without escape sequences");
    pos_ = end + 1;
    return out;
  }
  bool boolean() {
    skip_space();
    for (const auto& [word, value] :
         {std::pair{std::string_view("True"), true}, std::pair{std::string_view("False"), false}}) {
      if (text_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        return value;
      }
    }
    malformed("True or False");
  }
  std::vector<std::size_t> tuple() {
    constexpr std::size_t max_dims = 64;  // numpy's NPY_MAXDIMS
    std::vector<std::size_t> dims;
    expect('(');
    while (peek() != ')') {
      if (dims.size() == max_dims) fail("more than 64 dimensions (numpy's limit) " + at(pos_));
      dims.push_back(integer());
      if (peek() != ',') break;
      ++pos_;
    }
    expect(')');
    return dims;
  }
  std::size_t integer() {
    const std::size_t start = pos_;
    std::size_t value = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      const auto digit = static_cast<std::size_t>(text_[pos_] - '0');
      if (value > (std::numeric_limits<std::size_t>::max() - digit) / 10) {
        fail("dimension " + at(start) + " does not fit in 64 bits");
      }
      value = value * 10 + digit;
      ++pos_;
    }
    if (pos_ == start) malformed("a dimension (a non-negative integer)");
    return value;
  }

  std::string_view text_;
  std::size_t base_ = 0;
  const NpySource& source_;
  std::size_t pos_ = 0;
};

/// Parses the whole header of `bytes`, which hold at least the preamble and the header, and
/// computes the data size. Refuses what `parse_npy_preamble` refuses, a header that goes past
/// `bytes`, a malformed header, an unsupported dtype (big-endian, object, structured, other),
/// Fortran order, a 0-d array and a shape whose bytes overflow the address space.
inline NpyLayout parse_npy_layout(std::span<const std::byte> bytes, const NpySource& source) {
  const NpyPreamble preamble = parse_npy_preamble(bytes, source);
  if (preamble.data_offset > bytes.size()) {
    source.fail("truncated header: its length " +
                std::to_string(preamble.data_offset - preamble.header_offset) + " (" +
                source.at(8) + ") makes it end " + source.at(preamble.data_offset) +
                ", past the end " + source.at(bytes.size()));
  }
  const auto header =
      bytes.subspan(preamble.header_offset, preamble.data_offset - preamble.header_offset);
  const std::string_view text(reinterpret_cast<const char*>(header.data()), header.size());
  NpyHeaderParser parser(text, preamble.header_offset, source);
  NpyLayout layout{parser.parse(), preamble.data_offset, 0};
  // Every partial product of the extents must fit, even where one of them is 0.
  std::size_t bytes_needed = dtype_size(layout.info.dtype);
  bool empty = false;
  const std::size_t limit = std::numeric_limits<std::size_t>::max() - layout.data_offset - 1;
  for (const std::size_t extent : layout.info.shape) {
    empty = empty || extent == 0;
    if (extent == 0) continue;
    if (bytes_needed > limit / extent) {
      source.fail("shape of " + describe(layout.info) + " " + parser.at(0) +
                  " declares more bytes than the address space holds");
    }
    bytes_needed *= extent;
  }
  layout.data_size = empty ? 0 : bytes_needed;
  return layout;
}

/// Checks that `total_size` bytes, header included, hold exactly the data `layout` needs;
/// `end` names where the bytes end ("the file", "the member").
inline void check_npy_data(const NpyLayout& layout, std::size_t total_size, const NpySource& source,
                           const std::string& end) {
  const std::size_t present = total_size - layout.data_offset;
  const std::string needs = describe(layout.info) + " needs " + std::to_string(layout.data_size) +
                            " bytes of data " + source.at(layout.data_offset);
  if (present < layout.data_size) {
    source.fail("truncated data: " + needs + ", but " + end + " ends " + source.at(total_size) +
                " after " + std::to_string(present));
  }
  if (present > layout.data_size) {
    source.fail(std::to_string(present - layout.data_size) + " unexpected bytes after the data " +
                source.at(layout.data_offset + layout.data_size) + ": " + needs + ", but " + end +
                " ends " + source.at(total_size));
  }
}

}  // namespace stoke::detail
