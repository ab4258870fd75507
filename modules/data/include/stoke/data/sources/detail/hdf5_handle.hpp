#pragma once
/// @file
/// How stoke calls libhdf5: one process-wide lock where the library is not thread-safe, its
/// error printing kept off, its `hid_t`s closed by handles, and its failures thrown as
/// `InputError` carrying libhdf5's own message.

#include <hdf5.h>

#include <cstddef>
#include <filesystem>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <stoke/core/error.hpp>

namespace stoke::detail {

/// Whether the libhdf5 of this process serialises its own calls (built with
/// `--enable-threadsafe`, as Debian's is). Asked once.
inline bool hdf5_threadsafe() noexcept {
  static const bool threadsafe = [] {
    hbool_t answer = 0;
    return H5is_library_threadsafe(&answer) >= 0 && answer != 0;
  }();
  return threadsafe;
}

/// The process-wide lock of every HDF5 call where libhdf5 is not thread-safe. Recursive: a
/// handle closed while its thread holds the lock (an error unwinding a read) takes it again.
inline std::recursive_mutex& hdf5_mutex() noexcept {
  static std::recursive_mutex mutex;
  return mutex;
}

/// The scope of one or more libhdf5 calls: holds `hdf5_mutex()` unless libhdf5 is thread-safe,
/// and turns libhdf5's printing of its error stack to stderr off for its lifetime, restoring
/// the caller's setting after (the setting is per thread in a thread-safe libhdf5).
class Hdf5Call {
 public:
  Hdf5Call() : lock_(hdf5_mutex(), std::defer_lock) {
    if (!hdf5_threadsafe()) lock_.lock();
    if (H5Eget_auto2(H5E_DEFAULT, &saved_function_, &saved_data_) < 0) {
      saved_function_ = nullptr;
      saved_data_ = nullptr;
    }
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  Hdf5Call(const Hdf5Call&) = delete;
  Hdf5Call& operator=(const Hdf5Call&) = delete;
  ~Hdf5Call() { H5Eset_auto2(H5E_DEFAULT, saved_function_, saved_data_); }

 private:
  std::unique_lock<std::recursive_mutex> lock_;
  H5E_auto2_t saved_function_ = nullptr;
  void* saved_data_ = nullptr;
};

/// An open libhdf5 identifier (file, group, dataset, dataspace, datatype, property list) that
/// closes itself. Move-only.
class Hdf5Handle {
 public:
  /// How an identifier is closed (`H5Fclose`, `H5Oclose`, `H5Sclose`, ...).
  using Close = herr_t (*)(hid_t);

  Hdf5Handle() = default;
  /// Owns `id` (none when negative), closed with `close`.
  Hdf5Handle(hid_t id, Close close) noexcept : id_(id), close_(close) {}
  Hdf5Handle(Hdf5Handle&& other) noexcept
      : id_(std::exchange(other.id_, H5I_INVALID_HID)), close_(other.close_) {}
  Hdf5Handle& operator=(Hdf5Handle&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, H5I_INVALID_HID);
      close_ = other.close_;
    }
    return *this;
  }
  Hdf5Handle(const Hdf5Handle&) = delete;
  Hdf5Handle& operator=(const Hdf5Handle&) = delete;
  ~Hdf5Handle() { reset(); }

  /// The identifier (negative when none).
  [[nodiscard]] hid_t get() const noexcept { return id_; }
  /// Whether it holds an identifier.
  [[nodiscard]] explicit operator bool() const noexcept { return id_ >= 0; }

  /// Closes the identifier, if any.
  void reset() noexcept {
    if (id_ >= 0 && close_ != nullptr) {
      const Hdf5Call call;
      close_(id_);
    }
    id_ = H5I_INVALID_HID;
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
  Close close_ = nullptr;
};

/// What libhdf5's error stack of this thread says: the outermost description (the call that
/// failed) and the innermost (the cause), `""` when it is empty; `not_hdf5` tells whether
/// libhdf5 found no HDF5 signature. Clears the stack.
struct Hdf5Failure {
  std::string text;       ///< e.g. `"unable to open file: file signature not found"`
  bool not_hdf5 = false;  ///< the minor error "Not an HDF5 file" is on the stack
};

/// Reads (and clears) the error stack of this thread; call it right after the failed call,
/// before any other libhdf5 call replaces the stack.
inline Hdf5Failure hdf5_failure() {
  struct Entry {
    std::string description;
    hid_t minor = H5I_INVALID_HID;
  };
  std::vector<Entry> entries;
  // No exception may cross libhdf5's C frames: a failed push_back stops the walk.
  const auto collect = [](unsigned, const H5E_error2_t* error, void* out) noexcept -> herr_t {
    try {
      static_cast<std::vector<Entry>*>(out)->push_back(
          {error->desc != nullptr ? error->desc : "", error->min_num});
      return 0;
    } catch (...) {
      return -1;
    }
  };
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect, &entries);
  H5Eclear2(H5E_DEFAULT);
  Hdf5Failure failure;
  for (const Entry& entry : entries) failure.not_hdf5 |= entry.minor == H5E_NOTHDF5;
  if (!entries.empty()) {
    failure.text = entries.front().description;
    const std::string& cause = entries.back().description;
    if (entries.size() > 1 && cause != failure.text) failure.text += ": " + cause;
  }
  return failure;
}

/// `stoke: HDF5 file '<path>', variable '<variable>': <what>`, the start of every HDF5 error.
inline std::string hdf5_context(const std::filesystem::path& path, std::string_view variable) {
  return "stoke: HDF5 file '" + path.string() + "', variable '" + std::string(variable) + "': ";
}

/// Throws `InputError` "stoke: HDF5 file '<path>', variable '<variable>': <what>", followed by
/// what libhdf5's error stack says, if anything (read first, so call it right after the failed
/// call).
[[noreturn]] inline void hdf5_fail(const std::filesystem::path& path, std::string_view variable,
                                   const std::string& what) {
  const Hdf5Failure failure = hdf5_failure();
  throw InputError(hdf5_context(path, variable) + what +
                   (failure.text.empty() ? "" : " (libhdf5: " + failure.text + ")"));
}

/// `id` as a handle closed with `close`, or `hdf5_fail(path, variable, what)` when it is
/// negative (libhdf5 failed).
inline Hdf5Handle hdf5_checked(hid_t id, Hdf5Handle::Close close, const std::filesystem::path& path,
                               std::string_view variable, const char* what) {
  if (id < 0) hdf5_fail(path, variable, what);
  return {id, close};
}

}  // namespace stoke::detail
