// Under mpirun: the ranks check that they split the same loader. With --differ size|seed|batch
// rank 1 builds another one, and every rank must refuse it naming the mismatch.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include <stoke/dist/agreement.hpp>
#include <stoke/dist/mpi_group.hpp>
#include <stoke/dist/run_rank.hpp>

#include "args.hpp"
#include "mpi_programs.hpp"
#include "toy_data.hpp"

int stoke::testing::mpi_agreement(int argc, char** argv) {
  stoke::dist::MpiEnvironment environment(argc, argv);
  stoke::dist::MpiGroup group(environment);
  return stoke::dist::run_rank(group, [&] {
    const std::string differ = stoke::testing::option(argc, argv, "--differ", "none");
    const bool odd_one = group.rank() == 1;
    const std::size_t size = odd_one && differ == "size" ? 601 : 600;
    const std::uint64_t seed = odd_one && differ == "seed" ? 8 : 7;
    const std::size_t batch = odd_one && differ == "batch" ? 16 : 8;
    const stoke::testing::ToyImages data(size);
    const auto loader = stoke::testing::toy_train_loader(data, batch, seed);
    stoke::dist::check_agreement(group, loader);
    std::printf("rank %zu of %zu: the ranks agree\n", group.rank(), group.size());
  });
}
