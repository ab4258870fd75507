// Under mpirun: rank 1's dataset fails in the middle of training. The job must stop on every
// rank with that reason (MPI_Abort through run_rank), never hang. With `--die 1`, rank 1 is
// killed instead (SIGKILL, as by the OOM killer): the job must still end, naming rank 1.
#include <cstddef>

#include <stoke/dist/group_collective.hpp>
#include <stoke/dist/mpi_group.hpp>
#include <stoke/dist/run_rank.hpp>

#include "args.hpp"
#include "mpi_programs.hpp"
#include "toy_data.hpp"

int stoke::testing::mpi_failure(int argc, char** argv) {
  stoke::dist::MpiEnvironment environment(argc, argv);
  stoke::dist::MpiGroup group(environment);
  return stoke::dist::run_rank(group, [&] {
    const std::size_t devices = stoke::testing::number_option(argc, argv, "--devices", 1);
    stoke::testing::ToyImages train(2000);
    if (group.rank() == 1) {
      train.fail_after_reads = 700;  // in the first epoch, mid-way
      train.die_on_failure = stoke::testing::number_option(argc, argv, "--die", 0) != 0;
    }
    const stoke::testing::ToyImages valid(64, 9);
    auto learner = stoke::testing::toy_learner(
        devices,
        {.epochs = 3, .make_collective = stoke::dist::make_group_collective_factory(group)});
    (void)learner.fit(
        stoke::rank_share(stoke::testing::toy_train_loader(train, 8, 4), group.rank(),
                          group.size()),
        stoke::rank_share(stoke::testing::toy_valid_loader(valid), group.rank(), group.size()));
    throw std::runtime_error("training finished although rank 1's data failed");
  });
}
