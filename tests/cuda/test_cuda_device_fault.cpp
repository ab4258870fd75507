// A real device fault: a kernel that executes `__trap()` on the copy stream a batch's upload
// runs on reaches the consumer of the prefetched loader as a stoke::DataError (at the batch's
// fence), and the loader then shuts down: no hang, no abort. The fault ends the CUDA context,
// so it runs in a child process (a death test), its own executable, and is left out of the
// sanitizer runs of scripts/gpu-check (a trap is what they report).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <span>
#include <vector>

#include <stoke/cuda.hpp>
#include <stoke/data/prefetch.hpp>
#include <stoke/stoke.hpp>

#include "cuda_skip.hpp"
#include "stoke_test_support.hpp"
#include "trap_kernel.hpp"

namespace {

/// Host rows of one batch: item `x` becomes `10x, 10x + 1, 10x + 2`.
struct Rows {
  std::vector<float> rows;
  /// What is uploaded.
  [[nodiscard]] std::span<const float> values() const { return rows; }
};

/// Makes `Rows`.
struct RowsBatcher {
  template <class Device>
  Rows batch(std::vector<std::size_t> items, const Device&) const {
    Rows out;
    for (const std::size_t item : items) {
      for (std::size_t k = 0; k < 3; ++k) out.rows.push_back(static_cast<float>(10 * item + k));
    }
    return out;
  }
};

/// In the child: prefetches batches of 4 of 40 items to the first GPU, the upload of step 1
/// (items 4..7) followed on the copy stream by a kernel that traps once the batch's fence is
/// recorded, and consumes them. Exits 0 once the consumer caught a DataError at the fence of
/// step 0 or 1 (whichever it waited on after the fault) and the loader shut down; a hang ends
/// in SIGALRM, an abort in SIGABRT, anything else in another exit code.
[[noreturn]] void consume_a_batch_behind_a_trap() {
  ::alarm(120);
  unsigned* gate = nullptr;
  STOKE_CUDA_CHECK(
      cudaHostAlloc(reinterpret_cast<void**>(&gate), sizeof(unsigned), cudaHostAllocMapped));
  *gate = 0;
  const auto stage = [gate](stoke::cuda::Stager& stager, const Rows& data) {
    auto staged = stager.upload(stoke::host_bytes(data));
    if (data.rows.front() == 40.0F) {
      const cudaStream_t copies = stager.context()->copy_stream();
      const stoke::cuda::DeviceGuard guard(stager.device());
      STOKE_CUDA_CHECK(stoke::testing::launch_trap(copies, gate));
      staged.fence = stoke::cuda::Fence(stager.device(), copies);
      staged.value.mark_written(staged.fence);
      __atomic_store_n(gate, 1U, __ATOMIC_RELEASE);  // the fault may come now
    }
    return staged;
  };
  int code = 0;
  {
    auto prefetched = stoke::prefetch_to_device<stoke::cuda::Backend>(
        stoke::DataLoaderBuilder<stoke::cuda::Backend, RowsBatcher>({})
            .batch_size(4)
            .num_workers(1)
            .build(stoke::testing::IotaDataset{40}),
        2, stage);
    std::vector<std::size_t> steps;
    try {
      for (auto& batch : prefetched.iter()) steps.push_back(batch.step);
      std::fprintf(stderr, "consumer: every batch arrived, no error\n");
      code = 2;
    } catch (const stoke::DataError& error) {
      std::fprintf(stderr, "consumer: DataError activity=%s step=%zu after %zu batches: %s\n",
                   error.context().activity.c_str(), error.context().step, steps.size(),
                   error.what());
      const bool at_fence = error.context().activity == "fence" && error.context().step <= 1;
      code = at_fence && steps.size() == error.context().step ? 0 : 3;
    } catch (const std::exception& error) {
      std::fprintf(stderr, "consumer: not a DataError: %s\n", error.what());
      code = 4;
    }
  }  // the loader's threads stop and its memory goes, on a device that faulted
  std::fprintf(stderr, "consumer: the loader shut down\n");
  std::fflush(stderr);
  std::_Exit(code);
}

TEST(CudaDeviceFault, ATrapOnTheCopyStreamReachesTheConsumerAsDataError) {
  STOKE_CUDA_REQUIRE_DEVICES(1);
  // A child that re-executes this binary: the parent's CUDA state is not forked.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(consume_a_batch_behind_a_trap(), ::testing::ExitedWithCode(0),
              "consumer: DataError activity=fence step=[01] .*consumer: the loader shut down");
}

}  // namespace
