#pragma once
/// @file
/// The GIL, from any thread, at any time: `GilRelease` and `without_gil` release it around
/// waits and joins and take it back safely; `released_safely` lets any thread drop a Python
/// reference (a column passed to a loader) held by C++ code.
///
/// A loader's worker thread may hold the last reference to a column's NumPy array (it finishes
/// a batch after its loader and epoch were dropped). Taking the GIL in a thread once the
/// interpreter finalizes is fatal before CPython 3.14: the thread is ended with `pthread_exit`,
/// whose forced unwinding aborts the process at the first `noexcept` frame ("terminate called
/// without an active exception"; reproduced by tests/python/test_shutdown.py's
/// `worker_drops_the_last_array_at_exit`, whose backtrace ends in a worker's
/// `shared_ptr` release taking the GIL). So:
/// - a thread that holds the GIL drops the reference at once;
/// - a Python thread that released the GIL (the main thread joining workers) takes it back;
/// - any other thread (a worker, a consumer library's thread) never takes it: it hands the
///   reference to the interpreter's main thread (`Py_AddPendingCall`), which drops it between
///   two bytecodes; once the interpreter finalizes, the reference is left to the process's end
///   (and nanobind's report of objects left at exit is turned off: this one is on purpose).

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include <nanobind/nanobind.h>

#if defined(__GLIBCXX__)
#include <cxxabi.h>
#endif

#include <stoke/core/fork.hpp>

namespace stoke_python {

namespace nb = nanobind;

namespace detail {

/// Whether the interpreter is finalizing (or gone): no thread but the finalizing one may take
/// the GIL then.
inline bool interpreter_finalizing() noexcept {
  if (!nb::is_alive()) return true;
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;
#else
  return _Py_IsFinalizing() != 0;
#endif
}

/// A reference waiting to be dropped with the GIL.
struct PendingRelease {
  virtual ~PendingRelease() = default;
};

template <class T>
struct PendingValue final : PendingRelease {
  explicit PendingValue(T held) : value(std::move(held)) {}
  T value;
};

/// References handed over by threads that must not take the GIL, dropped by the main thread.
class ReleaseQueue {
 public:
  static ReleaseQueue& instance() {
    static auto* const queue = new ReleaseQueue();  // never destroyed: threads may outlive exit
    return *queue;
  }

  /// Queues `pending` and asks the main thread to drop it; leaves it (never dropped) when the
  /// interpreter cannot run the request.
  void hand_over(std::unique_ptr<PendingRelease> pending) noexcept {
    bool schedule = false;
    {
      const std::lock_guard lock(mutex_);
      pending_.push_back(std::move(pending));
      schedule = !scheduled_;
      scheduled_ = true;
    }
    if (schedule && (interpreter_finalizing() || Py_AddPendingCall(&drain, nullptr) != 0)) {
      const std::lock_guard lock(mutex_);
      scheduled_ = false;  // a later hand-over tries again; these stay queued meanwhile
    }
  }

 private:
  ReleaseQueue() = default;

  /// Runs in the main thread with the GIL: drops every queued reference.
  static int drain(void* /*unused*/) {
    ReleaseQueue& self = instance();
    std::vector<std::unique_ptr<PendingRelease>> batch;
    {
      const std::lock_guard lock(self.mutex_);
      batch.swap(self.pending_);
      self.scheduled_ = false;
    }
    batch.clear();
    return 0;
  }

  stoke::detail::ForkGuarded mutex_;  ///< free in a child too (held briefly, by any thread)
  std::vector<std::unique_ptr<PendingRelease>> pending_;
  bool scheduled_ = false;
};

/// Runs `take`, a call that takes the GIL. CPython before 3.14 ends a thread that takes it after
/// the interpreter began to finalize (a daemon thread) with `pthread_exit`, having let go of
/// the GIL; its forced unwinding would abort the process at a `noexcept` frame or nanobind's
/// `catch (...)`. Such a thread parks here for good instead, as CPython 3.14 makes it do.
template <class Take>
auto park_if_ended(Take take) {
#if defined(__GLIBCXX__)
  try {
    return take();
  } catch (abi::__forced_unwind&) {
    for (;;) std::this_thread::sleep_for(std::chrono::hours(24));
  }
#else
  return take();
#endif
}

/// Holds the GIL for its lifetime in a Python thread that released it (`park_if_ended`).
class GilTaken {
 public:
  GilTaken() : state_(park_if_ended([] { return PyGILState_Ensure(); })) {}
  GilTaken(const GilTaken&) = delete;
  GilTaken& operator=(const GilTaken&) = delete;
  ~GilTaken() { PyGILState_Release(state_); }

 private:
  PyGILState_STATE state_;
};

}  // namespace detail

/// Releases the GIL for its lifetime, like `nb::gil_scoped_release`, but takes it back safely
/// (`detail::park_if_ended`).
class GilRelease {
 public:
  GilRelease() : state_(PyEval_SaveThread()) {}
  GilRelease(const GilRelease&) = delete;
  GilRelease& operator=(const GilRelease&) = delete;
  ~GilRelease() {
    detail::park_if_ended([this] { PyEval_RestoreThread(state_); });
  }

 private:
  PyThreadState* state_;
};

/// Runs `destroy` with the GIL released, if this thread holds it: an object that joins worker
/// threads is destroyed so, since a worker may need the GIL to drop a Python reference first.
template <class F>
void without_gil(F&& destroy) {
  if (PyGILState_Check() != 0) {
    GilRelease release;
    destroy();
  } else {
    destroy();
  }
}

/// Drops `value` (a nanobind object, array or pointer to a Python-owned object) the safe way for
/// the calling thread (see the file comment).
template <class T>
void release_safely(T value) noexcept {
  if (PyGILState_Check() != 0) return;  // dropped here, with the GIL
  if (nb::is_alive() && PyGILState_GetThisThreadState() != nullptr) {
    const detail::GilTaken gil;  // a Python thread without the GIL: the finalizing one may
    T dropped = std::move(value);
    return;
  }
  if (detail::interpreter_finalizing()) {
    // Left to the process's end, deliberately; nanobind would report it as a leak at exit.
    nb::set_leak_warnings(false);
    (void)new T(std::move(value));
    return;
  }
  detail::ReleaseQueue::instance().hand_over(
      std::make_unique<detail::PendingValue<T>>(std::move(value)));
}

/// `from_python` as a shared pointer that any thread may drop last. nanobind's pointer to a
/// Python-owned object (a column passed to a loader) drops a Python reference, with the GIL,
/// in whichever thread lets go of it last; this one hands that over to `release_safely`.
template <class T>
std::shared_ptr<const T> released_safely(std::shared_ptr<T> from_python) {
  const T* raw = from_python.get();
  return std::shared_ptr<const T>(
      raw, [held = std::move(from_python)](const T*) mutable { release_safely(std::move(held)); });
}

}  // namespace stoke_python
