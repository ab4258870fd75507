// NCCL bootstrapped over MPI: rank 0 makes an ncclUniqueId, the process group broadcasts it,
// every rank joins one communicator with its local GPU, and an all_reduce across the ranks
// sums every rank's buffer. Without a CUDA device every rank exits 77 (CTest: skipped) and
// says why.
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include <stoke/cuda.hpp>
#include <stoke/cuda/nccl.hpp>
#include <stoke/dist/mpi_group.hpp>
#include <stoke/dist/run_rank.hpp>

int main(int argc, char** argv) {
  stoke::dist::MpiEnvironment environment(argc, argv);
  stoke::dist::MpiGroup group(environment);
  const std::string why = stoke::cuda::unavailable_reason();
  const auto visible = stoke::cuda::Backend::devices();
  if (!why.empty() || visible.size() < group.local_size()) {
    std::printf("rank %zu: SKIPPED: %s\n", group.rank(),
                why.empty() ? "fewer CUDA devices than ranks on this machine" : why.c_str());
    return 77;
  }
  return stoke::dist::run_rank(group, [&] {
    const stoke::cuda::Device device = visible[group.local_rank()];
    stoke::cuda::NcclCollective collective({device},
                                           stoke::cuda::make_rank_communicators(group, {device}));
    // Rank r holds r + 1 in every element; the sum over the ranks is n (n + 1) / 2.
    const std::size_t length = 1024;
    std::vector<float> host(length, static_cast<float>(group.rank() + 1));
    const auto stager = stoke::cuda::Backend::make_stager(device, 1);
    auto staged = stager->upload(std::as_bytes(std::span(host)));
    staged.fence.wait();
    collective.all_reduce_sum(0, std::span(static_cast<float*>(staged.value.data()), length));
    const auto bytes = stager->download(staged.value);
    std::memcpy(host.data(), bytes.data(), bytes.size());
    const float expected = static_cast<float>(group.size() * (group.size() + 1) / 2);
    for (const float value : host) {
      if (value != expected) {
        std::printf("rank %zu: FAILED: got %f, expected %f\n", group.rank(), value, expected);
        return 1;
      }
    }
    std::printf("rank %zu: all_reduce across %zu ranks gave %f everywhere\n", group.rank(),
                group.size(), expected);
    return 0;
  });
}
