#pragma once
/// @file
/// The safetensors format (Hugging Face): write tensors and string metadata to a file, and
/// read one back with every field checked. Little-endian hosts only, like the format.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <stoke/core/error.hpp>
#include <stoke/core/json_fields.hpp>
#include <stoke/core/read_file.hpp>
#include <stoke/learner/io/atomic_file.hpp>

namespace stoke {

static_assert(std::endian::native == std::endian::little,
              "stoke's safetensors I/O stores tensors as they are in memory: little-endian only");

/// A tensor's dtype (safetensors' name: `"F32"`, `"I64"`, ...), shape and raw little-endian
/// bytes, borrowed from whoever owns them.
struct TensorView {
  std::string dtype;                ///< safetensors dtype name
  std::vector<std::size_t> shape;   ///< extent of every dimension; `{}` for a scalar
  std::span<const std::byte> data;  ///< product(shape) x dtype size bytes
};

namespace detail {

/// Bytes per element of a safetensors dtype, or nothing for an unknown one.
inline std::optional<std::size_t> safetensors_dtype_size(std::string_view dtype) {
  static constexpr std::pair<std::string_view, std::size_t> sizes[] = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1},
      {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},
      {"U32", 4},  {"F32", 4}, {"F64", 8}, {"I64", 8},     {"U64", 8}};
  for (const auto& [name, size] : sizes) {
    if (name == dtype) return size;
  }
  return std::nullopt;
}

/// The safetensors dtype of the C++ element type `T`.
template <class T>
constexpr std::string_view safetensors_dtype_of() {
  if constexpr (std::is_same_v<T, float>)
    return "F32";
  else if constexpr (std::is_same_v<T, double>)
    return "F64";
  else if constexpr (std::is_same_v<T, std::int64_t>)
    return "I64";
  else if constexpr (std::is_same_v<T, std::uint64_t>)
    return "U64";
  else if constexpr (std::is_same_v<T, std::int32_t>)
    return "I32";
  else if constexpr (std::is_same_v<T, std::uint32_t>)
    return "U32";
  else if constexpr (std::is_same_v<T, std::int16_t>)
    return "I16";
  else if constexpr (std::is_same_v<T, std::uint16_t>)
    return "U16";
  else if constexpr (std::is_same_v<T, std::int8_t>)
    return "I8";
  else if constexpr (std::is_same_v<T, std::uint8_t>)
    return "U8";
  else if constexpr (std::is_same_v<T, bool>)
    return "BOOL";
  else
    static_assert(sizeof(T) == 0, "no safetensors dtype for this element type");
}

/// The product of `shape`, or nothing when it overflows.
inline std::optional<std::size_t> safetensors_element_count(const std::vector<std::size_t>& shape) {
  std::size_t count = 1;
  for (const std::size_t extent : shape) {
    if (extent != 0 && count > std::numeric_limits<std::size_t>::max() / extent) {
      return std::nullopt;
    }
    count *= extent;
  }
  return count;
}

}  // namespace detail

/// A view of `values` as a tensor of `shape` (the dtype follows from `T`: `float` is `"F32"`,
/// `std::int64_t` is `"I64"`, ...). Throws `InputError` when the sizes disagree.
template <class T>
TensorView make_tensor_view(std::span<const T> values, std::vector<std::size_t> shape) {
  const auto count = detail::safetensors_element_count(shape);
  if (!count || *count != values.size()) {
    throw InputError("stoke: make_tensor_view: " + std::to_string(values.size()) +
                     " values do not fill the shape given");
  }
  return {std::string(detail::safetensors_dtype_of<T>()), std::move(shape), std::as_bytes(values)};
}

/// The safetensors encoding of `tensors` and `metadata`: an 8-byte little-endian header size
/// N, N bytes of JSON padded with spaces so the data starts at a multiple of 8, then the data.
/// Tensors are laid out by decreasing element size, then name, so every tensor is aligned to
/// its element size. Throws `InputError` naming the tensor when its dtype is unknown, its
/// data size does not match shape x dtype size, or its name is `__metadata__`.
inline std::string encode_safetensors(const std::map<std::string, TensorView>& tensors,
                                      const std::map<std::string, std::string>& metadata = {}) {
  std::vector<std::pair<std::size_t, const std::string*>> order;
  for (const auto& [name, tensor] : tensors) {
    const auto fail = [&](const std::string& why) {
      throw InputError("stoke: cannot encode tensor '" + name + "' as safetensors: " + why);
    };
    if (name == "__metadata__") fail("the name is reserved for the metadata");
    const auto dtype_size = detail::safetensors_dtype_size(tensor.dtype);
    if (!dtype_size) fail("unknown dtype '" + tensor.dtype + "'");
    const auto count = detail::safetensors_element_count(tensor.shape);
    if (!count || *count > std::numeric_limits<std::size_t>::max() / *dtype_size ||
        *count * *dtype_size != tensor.data.size()) {
      fail(std::to_string(tensor.data.size()) + " data bytes do not match its shape and dtype " +
           tensor.dtype);
    }
    order.emplace_back(*dtype_size, &name);
  }
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : *a.second < *b.second;
  });

  nlohmann::json header = nlohmann::json::object();
  std::size_t offset = 0;
  for (const auto& [dtype_size, name] : order) {
    const TensorView& tensor = tensors.at(*name);
    header[*name] = {{"dtype", tensor.dtype},
                     {"shape", tensor.shape},
                     {"data_offsets", {offset, offset + tensor.data.size()}}};
    offset += tensor.data.size();
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;

  std::string json = header.dump();
  json.append((8 - json.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  const std::uint64_t header_size = json.size();
  std::memcpy(out.data(), &header_size, sizeof header_size);
  out.reserve(8 + json.size() + offset);
  out += json;
  for (const auto& [dtype_size, name] : order) {
    const auto data = tensors.at(*name).data;
    out.append(reinterpret_cast<const char*>(data.data()), data.size());
  }
  return out;
}

/// Writes `tensors` and `metadata` to `path` as safetensors (see `encode_safetensors`),
/// atomically (see `write_file_atomically`).
inline void save_safetensors(const std::filesystem::path& path,
                             const std::map<std::string, TensorView>& tensors,
                             const std::map<std::string, std::string>& metadata = {}) {
  write_file_atomically(path, encode_safetensors(tensors, metadata));
}

/// The largest JSON header a safetensors file may have, in bytes (100 MiB, the limit of the
/// reference implementation); a larger one is refused before it is parsed.
inline constexpr std::uint64_t safetensors_max_header = std::uint64_t{100} << 20U;

/// A safetensors file read into memory and checked: its tensors and its metadata.
/// Copies share the bytes.
class SafetensorsFile {
 public:
  /// Parses and checks `bytes` read from `path` (the path is for messages). Throws
  /// `InputError` naming the path and the byte offset when the file is shorter than 8 bytes,
  /// the header size exceeds the file, the header is not valid JSON or not an object, a
  /// tensor entry misses a field or has one of the wrong type (naming the tensor), a dtype
  /// is unknown, data offsets lie outside the data section, disagree with shape x dtype
  /// size, or leave holes or overlaps, or the metadata is not an object of strings. A value
  /// an error quotes is quoted briefly (see `stoke::json_excerpt`): a string or number cut
  /// short, an array or object by its size, so a value nested 100,000 deep is refused like
  /// any other, without recursion.
  SafetensorsFile(std::filesystem::path path, std::vector<std::byte> bytes)
      : path_(std::move(path)),
        bytes_(std::make_shared<const std::vector<std::byte>>(std::move(bytes))) {
    parse();
  }

  /// The file it was read from.
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

  /// The names of the tensors, sorted.
  [[nodiscard]] std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& [name, tensor] : tensors_) out.push_back(name);
    return out;
  }

  /// Whether the file has a tensor called `name`.
  [[nodiscard]] bool contains(const std::string& name) const { return tensors_.contains(name); }

  /// The tensor `name`, its data pointing into the file's bytes. Throws `UsageError`
  /// naming the tensor and the file when there is none.
  [[nodiscard]] const TensorView& tensor(const std::string& name) const {
    const auto found = tensors_.find(name);
    if (found == tensors_.end()) {
      throw UsageError("stoke: safetensors file '" + path_.string() + "' has no tensor '" + name +
                       "'");
    }
    return found->second;
  }

  /// The elements of tensor `name` copied out as `T` (the data need not be aligned). Throws
  /// `InputError` when the tensor's dtype is not that of `T`, and for `bool` (dtype BOOL, one
  /// byte an element) when a byte is neither 0 nor 1, naming the element and its file offset.
  template <class T>
  [[nodiscard]] std::vector<T> values(const std::string& name) const {
    const TensorView& view = tensor(name);
    if (view.dtype != detail::safetensors_dtype_of<T>()) {
      throw InputError("stoke: tensor '" + name + "' in '" + path_.string() + "' has dtype " +
                       view.dtype + ", not " + std::string(detail::safetensors_dtype_of<T>()));
    }
    if constexpr (std::is_same_v<T, bool>) {
      std::vector<bool> out;
      out.reserve(view.data.size());
      for (std::size_t i = 0; i < view.data.size(); ++i) {
        const auto byte = std::to_integer<unsigned>(view.data[i]);
        if (byte > 1) {
          const auto offset = static_cast<std::size_t>(view.data.data() + i - bytes_->data());
          fail("tensor '" + name + "' (BOOL) element " + std::to_string(i) + " at byte offset " +
               std::to_string(offset) + " is " + std::to_string(byte) + ", not 0 or 1");
        }
        out.push_back(byte == 1);
      }
      return out;
    } else {
      std::vector<T> out(view.data.size() / sizeof(T));
      if (!out.empty()) std::memcpy(out.data(), view.data.data(), view.data.size());
      return out;
    }
  }

  /// The `__metadata__` strings (empty when the file has none).
  [[nodiscard]] const std::map<std::string, std::string>& metadata() const noexcept {
    return metadata_;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError("stoke: safetensors file '" + path_.string() + "': " + what);
  }

  void parse() {
    const std::span<const std::byte> file(*bytes_);
    if (file.size() < 8) {
      fail("only " + std::to_string(file.size()) +
           " bytes, shorter than the 8-byte header size at offset 0");
    }
    std::uint64_t header_size = 0;
    std::memcpy(&header_size, file.data(), sizeof header_size);
    if (header_size > safetensors_max_header) {
      fail("header size " + std::to_string(header_size) + " (at offset 0) is above the limit of " +
           std::to_string(safetensors_max_header) + " bytes");
    }
    if (header_size > file.size() - 8) {
      fail("header size " + std::to_string(header_size) +
           " (at offset 0) is larger than the file: only " + std::to_string(file.size() - 8) +
           " bytes follow offset 8");
    }
    const std::size_t data_start = 8 + static_cast<std::size_t>(header_size);
    const auto text = file.subspan(8, data_start - 8);
    nlohmann::json header;
    try {
      header = nlohmann::json::parse(reinterpret_cast<const char*>(text.data()),
                                     reinterpret_cast<const char*>(text.data() + text.size()));
    } catch (const nlohmann::json::parse_error& error) {
      fail("invalid JSON header at offset 8 (error near file offset " +
           std::to_string(8 + (error.byte == 0 ? 0 : error.byte - 1)) + "): " + error.what());
    } catch (const nlohmann::json::exception& error) {  // a number beyond double's range
      fail(std::string("unreadable JSON header at offset 8: ") + error.what());
    }
    if (!header.is_object()) fail("the JSON header at offset 8 is not an object");

    const std::size_t data_size = file.size() - data_start;
    const auto section = file.subspan(data_start);
    const std::string in_header = " in the JSON header at offset 8";
    // (begin, end, name) of every tensor, to check that they tile the data section.
    std::vector<std::tuple<std::size_t, std::size_t, std::string>> extents;
    for (const auto& [name, entry] : header.items()) {
      if (name == "__metadata__") {
        read_metadata(entry);
        continue;
      }
      const auto bad = [&](const std::string& why) {
        fail("tensor '" + name + "'" + in_header + ": " + why);
      };
      if (!entry.is_object()) bad("the entry is not an object");
      const auto field = [&](const char* key) -> const nlohmann::json& {
        const auto found = entry.find(key);
        if (found == entry.end()) bad(std::string("missing field \"") + key + "\"");
        return *found;
      };
      const auto& dtype = field("dtype");
      if (!dtype.is_string()) bad("field \"dtype\" is not a string");
      const auto& shape_json = field("shape");
      const auto& offsets_json = field("data_offsets");
      TensorView view;
      view.dtype = dtype.get<std::string>();
      view.shape = sizes(shape_json, "shape", -1, bad);
      const auto offsets = sizes(offsets_json, "data_offsets", 2, bad);
      const auto dtype_size = detail::safetensors_dtype_size(view.dtype);
      if (!dtype_size) bad("unknown dtype " + stoke::json_excerpt(dtype));
      const std::size_t begin = offsets[0];
      const std::size_t end = offsets[1];
      const auto where = [&] {
        return "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
               "] (file offsets " + std::to_string(data_start + begin) + " to " +
               std::to_string(data_start + end) + ")";
      };
      if (begin > end || end > data_size) {
        bad(where() + " lie outside the data section of " + std::to_string(data_size) +
            " bytes (file offsets " + std::to_string(data_start) + " to " +
            std::to_string(file.size()) + ")");
      }
      const auto count = detail::safetensors_element_count(view.shape);
      if (!count || *count > std::numeric_limits<std::size_t>::max() / *dtype_size ||
          *count * *dtype_size != end - begin) {
        bad(where() + " hold " + std::to_string(end - begin) + " bytes, but its shape and dtype " +
            view.dtype + " need " +
            (count && *count <= std::numeric_limits<std::size_t>::max() / *dtype_size
                 ? std::to_string(*count * *dtype_size)
                 : std::string("more than fits in memory")));
      }
      view.data = section.subspan(begin, end - begin);
      extents.emplace_back(begin, end, name);
      tensors_.emplace(name, std::move(view));
    }
    check_tiling(std::move(extents), data_start, data_size);
  }

  /// The array `value` of field `key` as sizes; `length` -1 means any length.
  template <class Bad>
  static std::vector<std::size_t> sizes(const nlohmann::json& value, const char* key, int length,
                                        const Bad& bad) {
    if (!value.is_array()) bad(std::string("field \"") + key + "\" is not an array");
    if (length >= 0 && value.size() != static_cast<std::size_t>(length)) {
      bad(std::string("field \"") + key + "\" has " + std::to_string(value.size()) +
          " elements, expected " + std::to_string(length));
    }
    std::vector<std::size_t> out;
    for (const auto& element : value) {
      if (!element.is_number_unsigned()) {
        bad(std::string("field \"") + key + "\" holds " + stoke::json_excerpt(element) +
            ", not a non-negative integer");
      }
      const auto number = element.get<std::uint64_t>();
      if (number > std::numeric_limits<std::size_t>::max()) {
        bad(std::string("field \"") + key + "\" holds " + stoke::json_excerpt(element) +
            ", too large");
      }
      out.push_back(static_cast<std::size_t>(number));
    }
    return out;
  }

  void read_metadata(const nlohmann::json& entry) {
    if (!entry.is_object()) {
      fail("\"__metadata__\" in the JSON header at offset 8 is " + stoke::json_excerpt(entry) +
           ", not an object");
    }
    for (const auto& [key, value] : entry.items()) {
      if (!value.is_string()) {
        fail("\"__metadata__\" entry " + stoke::json_excerpt(nlohmann::json(key)) +
             " in the JSON header at offset 8 is " + stoke::json_excerpt(value) + ", not a string");
      }
      metadata_.emplace(key, value.get<std::string>());
    }
  }

  /// Checks that the tensors cover the data section exactly, without holes or overlaps (as
  /// the reference implementation requires).
  void check_tiling(std::vector<std::tuple<std::size_t, std::size_t, std::string>> extents,
                    std::size_t data_start, std::size_t data_size) const {
    std::sort(extents.begin(), extents.end());
    std::size_t expected = 0;
    std::string previous;
    for (const auto& [begin, end, name] : extents) {
      if (begin != expected) {
        fail("tensor '" + name + "' starts at data offset " + std::to_string(begin) +
             " (file offset " + std::to_string(data_start + begin) + ") but " +
             (previous.empty()
                  ? std::string("the data section starts at 0")
                  : "the previous tensor '" + previous + "' ends at " + std::to_string(expected)) +
             (begin < expected ? ": the tensors overlap" : ": a hole in the data"));
      }
      expected = end;
      previous = name;
    }
    if (expected != data_size) {
      fail("the tensors end at data offset " + std::to_string(expected) + " (file offset " +
           std::to_string(data_start + expected) + ") but the file has " +
           std::to_string(data_size - expected) + " more bytes, up to offset " +
           std::to_string(data_start + data_size));
    }
  }

  std::filesystem::path path_;
  std::shared_ptr<const std::vector<std::byte>> bytes_;
  std::map<std::string, TensorView> tensors_;
  std::map<std::string, std::string> metadata_;
};

/// Reads and checks the safetensors file at `path` (see `SafetensorsFile`); also throws
/// `InputError` naming the path when it is missing or unreadable.
inline SafetensorsFile load_safetensors(const std::filesystem::path& path) {
  return SafetensorsFile(path, stoke::read_whole_file<std::byte>(path, "safetensors"));
}

}  // namespace stoke
