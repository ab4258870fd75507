#pragma once
/// @file
/// `FirstFitRows`: the free room of a window's open rows, kept in a tournament tree so that
/// first-fit finds the first row with room for a piece in O(log rows), not by a scan.

#include <algorithm>
#include <cstddef>
#include <vector>

namespace stoke::detail {

/// The free slots of each open row, in order of opening, with a max-tree over them: a leaf per
/// row (unused leaves hold 0), each inner node the largest room below it.
class FirstFitRows {
 public:
  /// Number of rows opened.
  [[nodiscard]] std::size_t size() const noexcept { return count_; }

  /// The first row (in order of opening) with at least `need` free slots, or `size()` if none;
  /// `need` is at least 1.
  [[nodiscard]] std::size_t first_with(std::size_t need) const noexcept {
    if (count_ == 0 || tree_[1] < need) return count_;
    std::size_t node = 1;
    while (node < leaves_) {
      node *= 2;                          // the left child first: rows in order of opening
      if (tree_[node] < need) node += 1;  // the right child has the room, since the parent has
    }
    return node - leaves_;
  }

  /// The free slots of row `row`.
  [[nodiscard]] std::size_t room(std::size_t row) const noexcept { return tree_[leaves_ + row]; }

  /// Opens a row with `room` free slots, after the others.
  void open(std::size_t room) {
    if (count_ == leaves_) grow();
    ++count_;
    set(count_ - 1, room);
  }

  /// Sets row `row`'s free slots to `room`.
  void set(std::size_t row, std::size_t room) noexcept {
    std::size_t node = leaves_ + row;
    tree_[node] = room;
    for (node /= 2; node >= 1; node /= 2) {
      tree_[node] = std::max(tree_[2 * node], tree_[2 * node + 1]);
    }
  }

 private:
  /// Doubles the leaves (at least 64) and rebuilds the inner nodes.
  void grow() {
    const std::size_t leaves = std::max<std::size_t>(64, 2 * leaves_);
    std::vector<std::size_t> tree(2 * leaves, 0);
    std::copy_n(tree_.begin() + static_cast<std::ptrdiff_t>(leaves_), count_,
                tree.begin() + static_cast<std::ptrdiff_t>(leaves));
    for (std::size_t node = leaves - 1; node >= 1; --node) {
      tree[node] = std::max(tree[2 * node], tree[2 * node + 1]);
    }
    tree_ = std::move(tree);
    leaves_ = leaves;
  }

  std::vector<std::size_t> tree_;  ///< node 1 is the root; leaves at [leaves_, 2 * leaves_)
  std::size_t leaves_ = 0;
  std::size_t count_ = 0;
};

}  // namespace stoke::detail
