#pragma once
/// @file
/// `ScaledColumn`: the rows of another column as float32 `value * scale + offset`, computed by
/// the loader's workers as they make each batch (as `cpu::StackBatcher` does in C++), so that a
/// consumer gets normalised rows without a pass of its own over every batch.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <nanobind/ndarray.h>

#include <stoke/core/error.hpp>

#include "rows.hpp"

namespace stoke_python {

/// The rows of `source` converted to float32, `value * scale + offset` for every element.
class ScaledColumn final : public Column {
 public:
  /// `source`'s rows scaled; its elements are integers (8 to 64 bits, signed or not) or floats
  /// (32 or 64 bits), else an `InputError` names the column.
  ScaledColumn(std::string name, std::shared_ptr<Column> source, float scale, float offset)
      : Column(std::move(name), nb::dtype<float>(), source->row_shape()),
        source_(std::move(source)),
        scale_(scale),
        offset_(offset) {
    if (!convertible(source_->dtype())) {
      throw stoke::InputError("stoke_loader: column '" + this->name() +
                              "' scales integers or floats of 32 or 64 bits; its source has " +
                              std::to_string(source_->dtype().bits) + "-bit elements of code " +
                              std::to_string(source_->dtype().code));
    }
    set_rows(source_->rows());
  }

  void copy_rows(std::span<const std::size_t> indices, std::size_t first_row,
                 std::byte* out) const override {
    thread_local std::vector<std::byte> scratch;
    scratch.resize(indices.size() * source_->row_bytes());
    source_->copy_rows(indices, first_row, scratch.data());
    const std::size_t count = indices.size() * (row_bytes() / sizeof(float));
    const nb::dlpack::dtype type = source_->dtype();
    const auto code = static_cast<nb::dlpack::dtype_code>(type.code);
    if (code == nb::dlpack::dtype_code::UInt) {
      switch (type.bits) {
        case 8:
          return convert<std::uint8_t>(scratch.data(), count, out);
        case 16:
          return convert<std::uint16_t>(scratch.data(), count, out);
        case 32:
          return convert<std::uint32_t>(scratch.data(), count, out);
        default:
          return convert<std::uint64_t>(scratch.data(), count, out);
      }
    }
    if (code == nb::dlpack::dtype_code::Int) {
      switch (type.bits) {
        case 8:
          return convert<std::int8_t>(scratch.data(), count, out);
        case 16:
          return convert<std::int16_t>(scratch.data(), count, out);
        case 32:
          return convert<std::int32_t>(scratch.data(), count, out);
        default:
          return convert<std::int64_t>(scratch.data(), count, out);
      }
    }
    if (type.bits == 32) return convert<float>(scratch.data(), count, out);
    return convert<double>(scratch.data(), count, out);
  }

  [[nodiscard]] const std::vector<std::size_t>* shard_begins() const override {
    return source_->shard_begins();
  }
  void read_ahead(std::span<const std::size_t> shards) const override {
    source_->read_ahead(shards);
  }

 private:
  /// Whether `type` is one `copy_rows` converts.
  static bool convertible(nb::dlpack::dtype type) noexcept {
    const auto code = static_cast<nb::dlpack::dtype_code>(type.code);
    const bool integer =
        code == nb::dlpack::dtype_code::Int || code == nb::dlpack::dtype_code::UInt;
    const bool whole = type.bits == 8 || type.bits == 16 || type.bits == 32 || type.bits == 64;
    return (integer && whole) ||
           (code == nb::dlpack::dtype_code::Float && (type.bits == 32 || type.bits == 64));
  }

  /// Writes `count` elements of type `T` from `in` to `out` as floats, scaled. Loads and
  /// stores by `memcpy`: `out` lies in a batch buffer after other columns (any alignment).
  template <class T>
  void convert(const std::byte* in, std::size_t count, std::byte* out) const {
    const float mul = scale_;
    const float add = offset_;
    for (std::size_t k = 0; k < count; ++k) {
      T value;
      std::memcpy(&value, in + k * sizeof(T), sizeof(T));
      const float scaled = static_cast<float>(value) * mul + add;
      std::memcpy(out + k * sizeof(float), &scaled, sizeof(float));
    }
  }

  std::shared_ptr<Column> source_;
  float scale_;
  float offset_;
};

}  // namespace stoke_python
