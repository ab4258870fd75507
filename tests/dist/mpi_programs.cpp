// stoke_mpi_programs <program> [--option value]...: runs one of the distributed test programs
// (mpi_programs.hpp) with the options that follow its name.
#include "mpi_programs.hpp"

#include <cstdio>
#include <string_view>

namespace {

/// A program's name and its entry.
struct Program {
  std::string_view name;
  int (*run)(int argc, char** argv);
};

constexpr Program programs[] = {{"mpi_training", stoke::testing::mpi_training},
                                {"mpi_agreement", stoke::testing::mpi_agreement},
                                {"mpi_failure", stoke::testing::mpi_failure},
                                {"mpi_elastic", stoke::testing::mpi_elastic}};

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2) {
    for (const Program& program : programs) {
      // The program sees its options after argv[0], as if it were an executable of its own.
      if (argv[1] == program.name) return program.run(argc - 1, argv + 1);
    }
  }
  std::fprintf(stderr, "usage: %s mpi_training|mpi_agreement|mpi_failure|mpi_elastic [options]\n",
               argc > 0 ? argv[0] : "stoke_mpi_programs");
  return 2;
}
