#pragma once
/// @file
/// stoke's exception types: one base carrying the source location; misuse of the API
/// (`UsageError`, `StateError`), bad input (`InputError`), failed samples (`DataError`) and
/// batches that hang (`TimeoutError`).
///
/// Every exception stoke raises derives from `stoke::Error` (the backends and process groups
/// add their own: `vulkan::DeviceError`, `cuda::DeviceError`, `dist::GroupError`), so one
/// `catch (const stoke::Error&)` takes them all. What can come through a stoke call without
/// deriving from it:
/// - `std::bad_alloc` when memory runs out, and `std::system_error` when the system refuses
///   a thread or a lock (the loaders, `prefetch_to_device`, the collectives and `Learner`
///   start threads);
/// - `std::filesystem::filesystem_error` from `Learner`'s checkpoint directory and metrics
///   log (creating the directory, looking at the files);
/// - `nlohmann::json::type_error` when a name or metadata value written to a safetensors
///   file (`save_safetensors`, a checkpoint) is not valid UTF-8;
/// - whatever your own code throws (a model's step, an optimizer, a backend of your own),
///   unchanged, except from `Dataset::get`, `Batcher::batch` and the uploads and fences of
///   `prefetch_to_device`, which stoke wraps in a `DataError`.

#include <cstddef>
#include <exception>
#include <source_location>
#include <stdexcept>
#include <string>
#include <utility>

namespace stoke {

/// Base of every exception stoke throws; remembers where in stoke it was thrown.
class Error : public std::runtime_error {
 public:
  /// An error with a message; `where` defaults to the throwing call site.
  explicit Error(const std::string& message,
                 std::source_location where = std::source_location::current())
      : std::runtime_error(message), where_(where) {}

  /// The place in the source that raised the error.
  [[nodiscard]] const std::source_location& where() const noexcept { return where_; }

 private:
  std::source_location where_;
};

/// Misuse of the API: an argument that breaks a call's contract (a zero size, an index out
/// of range, sizes that do not match, a buffer of another device) or a call an object does
/// not support. A bug in the calling code, not in the data.
class UsageError : public Error {
 public:
  using Error::Error;
};

/// A call made in a state that does not allow it: after the point it had to come before, on
/// an `iter()` range a later `iter()` replaced, on split shares that are not in lockstep.
class StateError : public UsageError {
 public:
  using UsageError::UsageError;
};

/// Bad input: a file, a record or a value that cannot be used, named with path and offset.
class InputError : public Error {
 public:
  using Error::Error;
};

/// Where a failed sample was being loaded: which epoch, step, dataset index, activity, worker
/// and device.
struct DataErrorContext {
  std::size_t epoch = 0;  ///< the epoch being loaded
  std::size_t step = 0;   ///< the batch's step within the loader's epoch
  std::size_t index = 0;  ///< the dataset index being read, or the batch's first index
  /// The old name of `activity`, kept (in its place, for code that initialises the context by
  /// position) so that code written against it still compiles; a `DataError` or `TimeoutError`
  /// sets whichever of the two was left empty to the other. New code uses `activity`.
  std::string stage{};
  std::string worker{};  ///< `"caller"`, `"worker N"` or `"consumer"` (a chunk it filled)
  std::string device{};  ///< the device the batch was for
  /// For a failed transfer (activity `"fetch"`): the address read, without credentials; `index`
  /// is then the shard.
  std::string url{};
  /// What the thread was doing: `"get"` or `"get_many"` (reading samples), `"batch"` (the
  /// batcher), `"plan"` (a planned epoch's walk, such as a mixture's), `"fetch"` (a shard's
  /// transfer), `"upload"` or `"fence"` (the device's copy).
  std::string activity{};
};

namespace detail {
/// `context` with `activity` and its old name `stage` both set, to whichever of them was set.
inline DataErrorContext with_activity_names(DataErrorContext context) {
  if (context.activity.empty()) {
    context.activity = context.stage;
  } else if (context.stage.empty()) {
    context.stage = context.activity;
  }
  return context;
}
}  // namespace detail

/// An exception from `Dataset::get` or `Batcher::batch`, rethrown in the consumer's thread, or
/// a transfer of a shard that failed after its retries (`context().url` names it).
///
/// The original exception is nested (`std::rethrow_if_nested`); `what()` names the dataset
/// index, the worker and the device, then the original message.
class DataError : public Error, public std::nested_exception {
 public:
  /// Wraps the exception in flight (call from a `catch` block).
  DataError(DataErrorContext context, const std::string& cause)
      : Error(describe(detail::with_activity_names(context), cause)),
        context_(detail::with_activity_names(std::move(context))) {}

  /// Where the failure happened.
  [[nodiscard]] const DataErrorContext& context() const noexcept { return context_; }

 private:
  static std::string describe(const DataErrorContext& c, const std::string& cause) {
    if (!c.url.empty()) {
      return "stoke: " + c.activity + " of shard " + std::to_string(c.index) + " from " + c.url +
             " failed (epoch " + std::to_string(c.epoch) + ", step " + std::to_string(c.step) +
             "): " + cause;
    }
    return "stoke: " + c.activity + " failed at dataset index " + std::to_string(c.index) +
           " (epoch " + std::to_string(c.epoch) + ", step " + std::to_string(c.step) + ", " +
           c.worker + ", device " + c.device + "): " + cause;
  }
  DataErrorContext context_;
};

/// A batch that was not ready within the loader's `batch_timeout`: a `get` or `batch` that does
/// not return (a stalled network file system, a deadlock in user code).
///
/// `context()` names the thread that is stuck and what it is doing: its activity (`"get"`,
/// `"get_many"`, `"batch"`), the dataset index it reads (for `"batch"` and `"get_many"`, the
/// batch's first index), the epoch, step and device of the batch the consumer waits for.
/// `what()` says the same, with every busy worker and how long it has been busy.
class TimeoutError : public Error {
 public:
  /// A timeout at `context`, with the whole report in `message`.
  TimeoutError(DataErrorContext context, const std::string& message)
      : Error(message), context_(detail::with_activity_names(std::move(context))) {}

  /// The stuck thread and the batch waited for.
  [[nodiscard]] const DataErrorContext& context() const noexcept { return context_; }

 private:
  DataErrorContext context_;
};

/// A wait for a batch that `BatchRange::interrupt()` (or the Python package, on Ctrl-C) cut
/// short. Nothing is lost: the batch waited for is the next one the range hands out.
class InterruptedError : public Error {
 public:
  using Error::Error;
};

namespace detail {

/// The message of the exception in flight (call from a `catch` block).
inline std::string current_exception_message() {
  try {
    throw;
  } catch (const std::exception& error) {
    return error.what();
  } catch (...) {
    return "unknown exception";
  }
}

}  // namespace detail

}  // namespace stoke
