#pragma once
/// @file
/// The planners a Python sequence loader runs, behind one type: `AnyPlanner` (a `WindowPlanner`
/// over a `ConcatPlanner`, `FitPlanner`, `BucketPlanner`, `PadPlanner` or a `MixturePlanner` of
/// one of them, whose account in the loader's state it passes on), and `PadPlanner`,
/// batches of a fixed number of whole sequences padded to the longest (or a multiple of N).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <type_traits>
#include <utility>

#include <nlohmann/json.hpp>

#include <stoke/core/error.hpp>
#include <stoke/sequences/planned_epoch.hpp>
#include <stoke/sequences/sequence_plan.hpp>
#include <stoke/sequences/window_documents.hpp>

namespace stoke_python {

/// The parameters of a `PadPlanner`.
struct PadOptions {
  std::size_t batch_size = 1;  ///< sequences (rows) of every batch; the epoch's last may have fewer
  std::size_t multiple = 1;    ///< a batch's width is its longest rounded up to this
  std::size_t window_batches = 64;  ///< batches per plan window
  bool shuffle = true;              ///< shuffle the order of the sequences under (seed, epoch)
  std::uint64_t seed = 0;           ///< key of the order
};

/// Batches `batch_size` consecutive sequences of the epoch's order, one a row, each batch as
/// wide as its longest (rounded up to `multiple`); padding follows each row's tokens. A pure
/// function of (seed, epoch, lengths, options); plan windows of `window_batches` batches.
class PadPlanner {
 public:
  /// A planner over `lengths` with `options`.
  PadPlanner(stoke::DocumentLengths lengths, PadOptions options)
      : lengths_(std::move(lengths)), options_(options) {
    if (options_.batch_size == 0) throw stoke::UsageError("stoke_loader: pad needs a batch size");
    if (options_.window_batches == 0) throw stoke::UsageError("stoke_loader: pad needs a window");
    fingerprint_ =
        stoke::plan_fingerprint(0x70616450616464ull, lengths_,
                                {options_.batch_size, options_.multiple, options_.window_batches,
                                 std::uint64_t{options_.shuffle}, options_.seed});
  }

  /// The plan of the window at `start` of `epoch`.
  [[nodiscard]] stoke::WindowPlan plan_window(std::size_t epoch,
                                              const stoke::WindowStart& start) const {
    const auto order =
        stoke::document_order(lengths_.size(), options_.shuffle, options_.seed, epoch);
    const stoke::WindowDocuments read = stoke::read_window_documents(
        lengths_, order, options_.batch_size * options_.window_batches, start);
    stoke::WindowPlan out;
    for (std::size_t first = 0; first < read.documents.size(); first += options_.batch_size) {
      const std::size_t end = std::min(read.documents.size(), first + options_.batch_size);
      stoke::PlannedBatch batch;
      for (std::size_t d = first; d < end; ++d) {
        const stoke::WindowDocument& document = read.documents[d];
        batch.width = std::max(batch.width, document.length);
        batch.rows.push_back(stoke::PlannedRow{{{document.document, 0, document.length}}});
      }
      batch.width = stoke::round_up_to_multiple(batch.width, options_.multiple);
      out.batches.push_back(std::move(batch));
    }
    out.next = read.next;
    out.last = read.last;
    return out;
  }

  /// Identifies the plan: its kind, options and lengths.
  [[nodiscard]] std::uint64_t fingerprint() const noexcept { return fingerprint_; }

 private:
  stoke::DocumentLengths lengths_;
  PadOptions options_;
  std::uint64_t fingerprint_ = 0;
};

/// Any `WindowPlanner`, behind one type: what lets one loader type run every kind of plan.
class AnyPlanner {
 public:
  /// Runs `planner` (any planner but another `AnyPlanner`, which is copied).
  template <class P>
    requires(!std::is_same_v<P, AnyPlanner>) && stoke::WindowPlanner<P>
  explicit AnyPlanner(P planner) : fingerprint_(planner.fingerprint()) {
    if constexpr (requires { planner.options().shifted; }) shifted_ = planner.options().shifted;
    auto shared = std::make_shared<const P>(std::move(planner));
    plan_ = [shared](std::size_t epoch, const stoke::WindowStart& start) {
      return shared->plan_window(epoch, start);
    };
    if constexpr (stoke::ReportingPlanner<P>) {
      describe_ = [shared](const stoke::PlanPoint& point) { return shared->describe_state(point); };
      check_parameters_ = [shared](const nlohmann::json& saved) {
        shared->check_parameters(saved);
      };
      check_state_ = [shared](const nlohmann::json& saved, const stoke::PlanPoint& point) {
        shared->check_state(saved, point);
      };
    }
  }

  /// The plan of the window at `start` of `epoch`.
  [[nodiscard]] stoke::WindowPlan plan_window(std::size_t epoch,
                                              const stoke::WindowStart& start) const {
    return plan_(epoch, start);
  }
  /// The planner's fingerprint.
  [[nodiscard]] std::uint64_t fingerprint() const noexcept { return fingerprint_; }
  /// Whether its rows overlap by one slot (concatenation with shifted targets).
  [[nodiscard]] bool shifted() const noexcept { return shifted_; }

  /// Whether the planner gives an account in the loader's state (a mixture's).
  [[nodiscard]] bool reports_state() const noexcept { return static_cast<bool>(describe_); }
  /// Its account of `point` (null when it gives none).
  [[nodiscard]] nlohmann::json describe_state(const stoke::PlanPoint& point) const {
    return describe_ ? describe_(point) : nlohmann::json{};
  }
  /// Refuses `saved` unless saved under its parameters (for a planner that gives no account, a
  /// saved account is refused: it came from a mixture).
  void check_parameters(const nlohmann::json& saved) const {
    if (check_parameters_) {
      check_parameters_(saved);
    } else if (!saved.is_null()) {
      throw stoke::InputError(
          "stoke: cannot restore loader state: it holds a mixture's account, and this loader's "
          "plan is not a mixture");
    }
  }
  /// Refuses `saved` unless it is its account of `point`.
  void check_state(const nlohmann::json& saved, const stoke::PlanPoint& point) const {
    if (check_state_) check_state_(saved, point);
  }

 private:
  std::uint64_t fingerprint_;
  bool shifted_ = false;
  std::function<stoke::WindowPlan(std::size_t, const stoke::WindowStart&)> plan_;
  std::function<nlohmann::json(const stoke::PlanPoint&)> describe_;
  std::function<void(const nlohmann::json&)> check_parameters_;
  std::function<void(const nlohmann::json&, const stoke::PlanPoint&)> check_state_;
};

}  // namespace stoke_python
