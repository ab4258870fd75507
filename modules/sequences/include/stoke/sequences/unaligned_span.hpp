#pragma once
/// @file
/// `UnalignedSpan<T>`: a read-only view of `T` values stored back to back at any address, such
/// as the int32 lengths of a Megatron `.idx` file, which start at byte 34 of the file.

#include <bit>
#include <compare>
#include <cstddef>
#include <cstring>
#include <iterator>
#include <span>
#include <type_traits>
#include <utility>

namespace stoke {

static_assert(std::endian::native == std::endian::little,
              "stoke: the token store reads little-endian files in place");

/// A view of `size()` values of type `T` stored back to back from any address, read with
/// `std::memcpy` (which compiles to a plain load): a typed `std::span` of values that are not
/// aligned for `T` would be undefined behaviour. A random-access range whose elements are
/// values, not references; valid while what it views lives.
template <class T>
  requires std::is_trivially_copyable_v<T>
class UnalignedSpan {
 public:
  /// A random-access iterator over the values.
  class iterator {
   public:
    using iterator_concept = std::random_access_iterator_tag;  ///< the C++20 category
    using iterator_category = std::input_iterator_tag;  ///< for C++17 algorithms: values, not refs
    using value_type = T;                               ///< what dereferencing gives
    using difference_type = std::ptrdiff_t;             ///< distance between iterators

    iterator() = default;
    /// An iterator at `bytes`.
    explicit iterator(const std::byte* bytes) noexcept : at_(bytes) {}

    /// The value here.
    T operator*() const noexcept { return load(at_); }
    /// The value `n` places on.
    T operator[](difference_type n) const noexcept { return load(at_ + n * stride); }
    /// Steps one on.
    iterator& operator++() noexcept { return *this += 1; }
    /// Steps one on, returning the old position.
    iterator operator++(int) noexcept { return std::exchange(*this, *this + 1); }
    /// Steps one back.
    iterator& operator--() noexcept { return *this -= 1; }
    /// Steps one back, returning the old position.
    iterator operator--(int) noexcept { return std::exchange(*this, *this - 1); }
    /// Steps `n` on.
    iterator& operator+=(difference_type n) noexcept {
      at_ += n * stride;
      return *this;
    }
    /// Steps `n` back.
    iterator& operator-=(difference_type n) noexcept { return *this += -n; }
    /// `n` places on.
    friend iterator operator+(iterator it, difference_type n) noexcept { return it += n; }
    /// `n` places on.
    friend iterator operator+(difference_type n, iterator it) noexcept { return it += n; }
    /// `n` places back.
    friend iterator operator-(iterator it, difference_type n) noexcept { return it -= n; }
    /// Places from `b` to `a`.
    friend difference_type operator-(const iterator& a, const iterator& b) noexcept {
      return (a.at_ - b.at_) / stride;
    }
    /// Same position.
    friend bool operator==(const iterator&, const iterator&) = default;
    /// Position order.
    friend auto operator<=>(const iterator&, const iterator&) = default;

   private:
    const std::byte* at_ = nullptr;
  };

  /// No values.
  UnalignedSpan() = default;
  /// The `size` values stored from `bytes` on.
  UnalignedSpan(const std::byte* bytes, std::size_t size) noexcept : bytes_(bytes), size_(size) {}

  /// Number of values.
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  /// Whether there are none.
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
  /// Value `i` (`i < size()`).
  [[nodiscard]] T operator[](std::size_t i) const noexcept { return load(bytes_ + i * stride); }
  /// The first value's position.
  [[nodiscard]] iterator begin() const noexcept { return iterator(bytes_); }
  /// One past the last value.
  [[nodiscard]] iterator end() const noexcept { return iterator(bytes_ + size_ * stride); }
  /// The values' bytes, for a copy with `std::memcpy`.
  [[nodiscard]] std::span<const std::byte> bytes() const noexcept {
    return {bytes_, size_ * stride};
  }
  /// Values `[first, first + count)` (within `size()`).
  [[nodiscard]] UnalignedSpan subspan(std::size_t first, std::size_t count) const noexcept {
    return {bytes_ + first * stride, count};
  }

 private:
  static constexpr std::ptrdiff_t stride = sizeof(T);
  static T load(const std::byte* at) noexcept {
    T value;
    std::memcpy(&value, at, sizeof(T));
    return value;
  }

  const std::byte* bytes_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace stoke
