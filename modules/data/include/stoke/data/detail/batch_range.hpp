#pragma once
/// @file
/// The input range every loader's `iter()` returns: batches pulled one at a time from a
/// source function, with a hook that runs when the range is dropped (to cancel workers).

#include <cstddef>
#include <functional>
#include <iterator>
#include <optional>
#include <utility>

namespace stoke::detail {

/// A single-pass range of `Value`s pulled from `next` until it returns `std::nullopt`.
/// Dropping the range (also mid-epoch) runs `on_drop`.
template <class Value>
class BatchRange {
 public:
  /// Pulls values from `next`; calls `on_drop` (if set) when destroyed.
  BatchRange(std::function<std::optional<Value>()> next, std::function<void()> on_drop = {})
      : next_(std::move(next)), on_drop_(std::move(on_drop)) {}
  BatchRange(const BatchRange&) = delete;
  BatchRange& operator=(const BatchRange&) = delete;
  BatchRange(BatchRange&& other) noexcept
      : next_(std::move(other.next_)),
        on_drop_(std::exchange(other.on_drop_, {})),
        current_(std::move(other.current_)),
        started_(other.started_) {}
  BatchRange& operator=(BatchRange&&) = delete;
  ~BatchRange() {
    if (on_drop_) on_drop_();
  }

  /// The range's iterator: `*it` is the current batch, `++it` pulls the next one.
  class iterator {
   public:
    using value_type = Value;
    using difference_type = std::ptrdiff_t;
    using iterator_concept = std::input_iterator_tag;

    iterator() = default;
    explicit iterator(BatchRange* range) : range_(range) {}
    Value& operator*() const { return *range_->current_; }
    Value* operator->() const { return &*range_->current_; }
    iterator& operator++() {
      range_->advance();
      return *this;
    }
    void operator++(int) { ++*this; }
    bool operator==(std::default_sentinel_t) const {
      return range_ == nullptr || !range_->current_.has_value();
    }

   private:
    BatchRange* range_ = nullptr;
  };

  /// Starts the pass (pulls the first value); call once.
  iterator begin() {
    if (!started_) {
      started_ = true;
      advance();
    }
    return iterator(this);
  }
  std::default_sentinel_t end() const noexcept { return {}; }

 private:
  void advance() {
    current_.reset();
    current_ = next_();
  }

  std::function<std::optional<Value>()> next_;
  std::function<void()> on_drop_;
  std::optional<Value> current_;
  bool started_ = false;
};

}  // namespace stoke::detail
