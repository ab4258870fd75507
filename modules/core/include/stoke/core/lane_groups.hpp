#pragma once
/// @file
/// `LaneGroups`: how the participants of a collective fall into groups that share one device
/// (the lanes of one GPU), which participant leads each group, and the fixed order in which a
/// group sums.

#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include <stoke/core/error.hpp>

namespace stoke {

/// The participants of a collective grouped by a key they share (the GPU of each lane).
/// Group `g` holds its participants in participant order; the first of them leads it: it sums
/// the group's values, speaks for the group among the groups, and hands the result back to
/// the others. Groups are numbered in the order of their leaders, so a collective among the
/// leaders has leader `g` as its participant `g`. A group sums its members' values in member
/// order, left to right (`((v0 + v1) + v2) + ...`), the order in which
/// `SharedMemoryCollective` sums all participants: with one group the two give the same bits.
class LaneGroups {
 public:
  /// Groups participant `k` by `keys[k]` (such as its GPU's ordinal): equal keys share a
  /// group. Throws `UsageError` without a participant.
  explicit LaneGroups(std::span<const int> keys) : group_of_(keys.size()) {
    if (keys.empty()) throw UsageError("stoke: a collective needs a participant");
    std::vector<int> seen;
    for (std::size_t k = 0; k < keys.size(); ++k) {
      const auto found = std::find(seen.begin(), seen.end(), keys[k]);
      const auto group = static_cast<std::size_t>(found - seen.begin());
      if (found == seen.end()) {
        seen.push_back(keys[k]);
        members_.emplace_back();
      }
      group_of_[k] = group;
      position_.push_back(members_[group].size());
      members_[group].push_back(k);
    }
  }

  /// Groups `items` by `key(item)` (an `int`), participant `k` being `items[k]`.
  template <class Item, class Key>
  [[nodiscard]] static LaneGroups of(const std::vector<Item>& items, Key key) {
    std::vector<int> keys;
    keys.reserve(items.size());
    for (const Item& item : items) keys.push_back(static_cast<int>(key(item)));
    return LaneGroups(keys);
  }

  /// Number of participants.
  [[nodiscard]] std::size_t participants() const noexcept { return group_of_.size(); }
  /// Number of groups.
  [[nodiscard]] std::size_t groups() const noexcept { return members_.size(); }
  /// The group of participant `k`.
  [[nodiscard]] std::size_t group_of(std::size_t k) const { return group_of_.at(k); }
  /// Where participant `k` stands in its group (0 for its leader): the place of its values
  /// in the group's sum.
  [[nodiscard]] std::size_t position(std::size_t k) const { return position_.at(k); }
  /// The participants of group `g`, in participant order: the order its sum takes.
  [[nodiscard]] std::span<const std::size_t> members(std::size_t g) const { return members_.at(g); }
  /// The participant that leads group `g` (its first).
  [[nodiscard]] std::size_t leader(std::size_t g) const { return members_.at(g).front(); }
  /// Whether participant `k` leads its group.
  [[nodiscard]] bool leads(std::size_t k) const { return position(k) == 0; }
  /// The most members of any group.
  [[nodiscard]] std::size_t largest_group() const noexcept {
    std::size_t most = 0;
    for (const auto& group : members_) most = std::max(most, group.size());
    return most;
  }

 private:
  std::vector<std::size_t> group_of_;
  std::vector<std::size_t> position_;
  std::vector<std::vector<std::size_t>> members_;
};

}  // namespace stoke
