#pragma once
/// @file
/// What stoke does when a process with live loaders forks (`fork()`, Python's `os.fork`, a
/// `multiprocessing` or PyTorch `DataLoader` worker started with the fork method).
///
/// A child has only the thread that forked: every worker, I/O and upload thread of the parent is
/// gone, and a mutex one of them held at that moment stays locked for good. So:
/// - an object that owns threads remembers the process it was made in (`OwnerProcess`); in a
///   child it is never used again: its threads are not joined (they do not exist there), its
///   mutexes are not locked, its memory is kept (`abandon`). A loader starts new workers in the
///   child at its next `iter()`; an epoch begun before the fork throws `StateError` saying so;
/// - state that worker threads lock and that a child uses again (the host buffer pools) is
///   locked around the fork by `ForkGuarded`, so that the child finds it consistent and free.

#include <pthread.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace stoke::detail {

/// How many forks separate this process from the process that loaded stoke: bumped in every
/// child (a `pthread_atfork` handler), so that an object can tell it was inherited.
inline std::atomic<std::size_t>& fork_generation() noexcept {
  static std::atomic<std::size_t> generation{0};
  return generation;
}

/// Mutexes locked while a process forks, in the order they were registered (see `ForkGuarded`).
class ForkLocks {
 public:
  /// The process-wide registry; registers its `pthread_atfork` handlers on first use.
  static ForkLocks& instance() {
    static ForkLocks* const locks = [] {
      auto* made = new ForkLocks();  // never destroyed: handlers may run during static exit
      ::pthread_atfork(&prepare, &parent, &child);
      return made;
    }();
    return *locks;
  }

  /// Locks `mutex` around every fork from now on, until `remove`.
  void add(std::mutex* mutex) {
    const std::lock_guard lock(registry_);
    mutexes_.push_back(mutex);
  }
  /// Stops locking `mutex` around forks.
  void remove(std::mutex* mutex) {
    const std::lock_guard lock(registry_);
    mutexes_.erase(std::remove(mutexes_.begin(), mutexes_.end(), mutex), mutexes_.end());
  }

 private:
  ForkLocks() = default;

  // The forking thread takes the registry, then every registered mutex (each is held only for
  // short bookkeeping by its owner, which takes no other lock meanwhile); the parent and the
  // child release them all. The child also counts the fork.
  static void prepare() {
    ForkLocks& self = instance();
    self.registry_.lock();
    for (std::mutex* mutex : self.mutexes_) mutex->lock();
  }
  static void release() {
    ForkLocks& self = instance();
    for (auto it = self.mutexes_.rbegin(); it != self.mutexes_.rend(); ++it) (*it)->unlock();
    self.registry_.unlock();
  }
  static void parent() { release(); }
  static void child() {
    fork_generation().fetch_add(1, std::memory_order_relaxed);
    release();
  }

  std::mutex registry_;
  std::vector<std::mutex*> mutexes_;
};

/// A mutex that is locked around every fork (`ForkLocks`), so that a child never inherits it
/// locked by a thread that does not exist there. For short critical sections that take no
/// other lock.
class ForkGuarded {
 public:
  ForkGuarded() { ForkLocks::instance().add(&mutex_); }
  ForkGuarded(const ForkGuarded&) = delete;
  ForkGuarded& operator=(const ForkGuarded&) = delete;
  ~ForkGuarded() { ForkLocks::instance().remove(&mutex_); }

  void lock() { mutex_.lock(); }
  void unlock() { mutex_.unlock(); }
  bool try_lock() { return mutex_.try_lock(); }

 private:
  std::mutex mutex_;
};

/// The process an object that owns threads was made in.
class OwnerProcess {
 public:
  OwnerProcess() noexcept
      : pid_(::getpid()), generation_(fork_generation().load(std::memory_order_relaxed)) {
    (void)ForkLocks::instance();  // counts forks from now on
  }

  /// Whether this is a child forked after the object was made: its threads are not here.
  [[nodiscard]] bool inherited() const noexcept {
    return fork_generation().load(std::memory_order_relaxed) != generation_;
  }
  /// The id of the process the object was made in.
  [[nodiscard]] pid_t pid() const noexcept { return pid_; }

  /// What to do with an object of `what` used after a fork (for a `StateError`).
  [[nodiscard]] std::string after_fork_message(const std::string& what) const {
    return "stoke: " + what + " belongs to process " + std::to_string(pid_) +
           ", whose threads a fork did not copy into this process (" + std::to_string(::getpid()) +
           "): begin a new epoch with iter() (the loader starts its threads anew here), make the "
           "object in this process, or start processes with the 'spawn' or 'forkserver' method";
  }

 private:
  pid_t pid_;
  std::size_t generation_;
};

/// Keeps `object` for the rest of the process without destroying it: what a child does with an
/// inherited object whose threads are gone (its destructor would join threads that do not
/// exist here and lock mutexes they may hold). Costs the object's memory, once per fork.
template <class T>
void abandon(T&& object) noexcept {
  // NOLINTNEXTLINE(cppcoreguidelines-owning-memory): deliberately never freed
  (void)new std::decay_t<T>(std::forward<T>(object));
}

}  // namespace stoke::detail
