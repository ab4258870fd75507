#pragma once
/// @file
/// `dist::MpiEnvironment` and `dist::MpiGroup`: the `ProcessGroup` of a job started with
/// `mpirun` or `srun`, over MPI (target `stoke::mpi`). Also tells each process its rank on
/// its own machine, which picks the machine's devices for it.

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <span>
#include <string>

#include <stoke/core/error.hpp>
#include <stoke/dist/error.hpp>
#include <stoke/dist/process_group.hpp>

namespace stoke::dist {

namespace detail {
/// Throws a `stoke::Error` naming `call` and MPI's message when `code` is not success.
inline void check_mpi(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw Error(std::string("stoke: ") + call + " failed: " + std::string(text, length));
}

/// The MPI datatype of `T`.
template <class T>
MPI_Datatype mpi_type();
template <>
inline MPI_Datatype mpi_type<float>() {
  return MPI_FLOAT;
}
template <>
inline MPI_Datatype mpi_type<double>() {
  return MPI_DOUBLE;
}
template <>
inline MPI_Datatype mpi_type<std::uint64_t>() {
  return MPI_UINT64_T;
}

/// An unsigned number from the environment variable `name`, if it is set.
inline bool env_number(const char* name, std::size_t& out) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return false;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text, &end, 10);
  if (*end != '\0') return false;
  out = static_cast<std::size_t>(value);
  return true;
}
}  // namespace detail

/// Starts MPI for this process and ends it (RAII); make one at the top of `main`, before any
/// `MpiGroup`. Asks for `MPI_THREAD_MULTIPLE` (the learner calls the group from a device
/// thread) and accepts `MPI_THREAD_SERIALIZED`, since `MpiGroup` serialises its calls.
class MpiEnvironment {
 public:
  /// Initialises MPI with the program's arguments (MPI may remove its own).
  MpiEnvironment(int& argc, char**& argv) { init(&argc, &argv); }
  /// Initialises MPI without arguments.
  MpiEnvironment() { init(nullptr, nullptr); }
  MpiEnvironment(const MpiEnvironment&) = delete;
  MpiEnvironment& operator=(const MpiEnvironment&) = delete;

  /// Finalises MPI if this object initialised it. While an exception unwinds the stack it
  /// aborts the job instead: finalising would wait for ranks that may never arrive.
  ~MpiEnvironment() {
    if (!owner_) return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized != 0) return;
    if (std::uncaught_exceptions() > 0) MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Finalize();
  }

  /// The thread support MPI provides (`MPI_THREAD_SERIALIZED` or `MPI_THREAD_MULTIPLE`).
  [[nodiscard]] int thread_level() const noexcept { return provided_; }

 private:
  void init(int* argc, char*** argv) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized != 0) {
      MPI_Query_thread(&provided_);
    } else {
      detail::check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided_),
                        "MPI_Init_thread");
      owner_ = true;
    }
    if (provided_ < MPI_THREAD_SERIALIZED) {
      throw Error("stoke: MPI provides thread level " + std::to_string(provided_) +
                  "; stoke needs MPI_THREAD_SERIALIZED or MPI_THREAD_MULTIPLE");
    }
  }

  int provided_ = MPI_THREAD_SINGLE;
  bool owner_ = false;
};

/// The ranks of an MPI communicator (by default every process of the job). Models
/// `ProcessGroup`. Holds its own duplicate of the communicator, whose errors are returned
/// and thrown as `stoke::Error`, and serialises its calls with a mutex.
class MpiGroup {
 public:
  /// The group of `parent`'s ranks; `environment` must outlive it.
  explicit MpiGroup(const MpiEnvironment& environment, MPI_Comm parent = MPI_COMM_WORLD) {
    (void)environment;
    detail::check_mpi(MPI_Comm_dup(parent, &comm_), "MPI_Comm_dup");
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    int value = 0;
    detail::check_mpi(MPI_Comm_rank(comm_, &value), "MPI_Comm_rank");
    rank_ = static_cast<std::size_t>(value);
    detail::check_mpi(MPI_Comm_size(comm_, &value), "MPI_Comm_size");
    size_ = static_cast<std::size_t>(value);
    find_local_rank();
  }
  MpiGroup(const MpiGroup&) = delete;
  MpiGroup& operator=(const MpiGroup&) = delete;
  /// Frees the communicator.
  ~MpiGroup() { MPI_Comm_free(&comm_); }

  /// This process's rank.
  [[nodiscard]] std::size_t rank() const noexcept { return rank_; }
  /// Number of ranks.
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  /// This process's rank among the ranks on its machine (shared memory): which of the
  /// machine's devices are its own.
  [[nodiscard]] std::size_t local_rank() const noexcept { return local_rank_; }
  /// Number of ranks on this machine.
  [[nodiscard]] std::size_t local_size() const noexcept { return local_size_; }
  /// The communicator (for calls stoke does not wrap).
  [[nodiscard]] MPI_Comm communicator() const noexcept { return comm_; }

  /// See `ProcessGroup`: `MPI_Allreduce` with `MPI_SUM`, in place.
  void all_reduce_sum(std::span<float> values) { reduce(values); }
  /// See `ProcessGroup`.
  void all_reduce_sum(std::span<double> values) { reduce(values); }
  /// See `ProcessGroup`.
  void all_reduce_sum(std::span<std::uint64_t> values) { reduce(values); }

  /// See `ProcessGroup`: `MPI_Bcast` from `root`.
  void broadcast(std::span<std::byte> bytes, std::size_t root) {
    std::lock_guard lock(mutex_);
    for (std::size_t done = 0; done < bytes.size();) {
      const int count = chunk(bytes.size() - done);
      detail::check_mpi(
          MPI_Bcast(bytes.data() + done, count, MPI_BYTE, static_cast<int>(root), comm_),
          "MPI_Bcast");
      done += static_cast<std::size_t>(count);
    }
  }

  /// See `ProcessGroup`: `MPI_Barrier`.
  void barrier() {
    std::lock_guard lock(mutex_);
    detail::check_mpi(MPI_Barrier(comm_), "MPI_Barrier");
  }

  /// See `ProcessGroup`: prints `stoke: rank R of N: <reason>` on stderr and ends every
  /// process of the job with `MPI_Abort` (exit code 1).
  [[noreturn]] void abort(const std::string& reason) {
    std::fprintf(stderr, "stoke: %s\n", detail::on_rank(rank_, size_, reason).c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::_Exit(1);  // MPI_Abort does not return; this is in case it does
  }

 private:
  static int chunk(std::size_t remaining) {
    return static_cast<int>(std::min<std::size_t>(remaining, INT_MAX));
  }

  template <class T>
  void reduce(std::span<T> values) {
    std::lock_guard lock(mutex_);
    for (std::size_t done = 0; done < values.size();) {
      const int count = chunk(values.size() - done);
      detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, values.data() + done, count,
                                      detail::mpi_type<T>(), MPI_SUM, comm_),
                        "MPI_Allreduce");
      done += static_cast<std::size_t>(count);
    }
  }

  /// The ranks sharing this machine's memory (`MPI_COMM_TYPE_SHARED`); failing that, what
  /// the launcher says (Open MPI's `OMPI_COMM_WORLD_LOCAL_*`, Slurm's `SLURM_LOCALID`).
  void find_local_rank() {
    MPI_Comm node = MPI_COMM_NULL;
    if (MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, static_cast<int>(rank_), MPI_INFO_NULL,
                            &node) == MPI_SUCCESS &&
        node != MPI_COMM_NULL) {
      int value = 0;
      MPI_Comm_rank(node, &value);
      local_rank_ = static_cast<std::size_t>(value);
      MPI_Comm_size(node, &value);
      local_size_ = static_cast<std::size_t>(value);
      MPI_Comm_free(&node);
      return;
    }
    if (detail::env_number("OMPI_COMM_WORLD_LOCAL_RANK", local_rank_)) {
      if (!detail::env_number("OMPI_COMM_WORLD_LOCAL_SIZE", local_size_)) local_size_ = 1;
    } else if (detail::env_number("SLURM_LOCALID", local_rank_)) {
      if (!detail::env_number("SLURM_NTASKS_PER_NODE", local_size_)) local_size_ = 1;
    }
    local_size_ = std::max(local_size_, local_rank_ + 1);
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  std::size_t rank_ = 0;
  std::size_t size_ = 1;
  std::size_t local_rank_ = 0;
  std::size_t local_size_ = 1;
  std::mutex mutex_;
};

}  // namespace stoke::dist
