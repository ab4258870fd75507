#pragma once
/// @file
/// The dist module without MPI: the `ProcessGroup` concept, the in-process group, the
/// collective across ranks, the agreement check and `run_rank`. The MPI group is in
/// `<stoke/dist/mpi_group.hpp>` (target `stoke::mpi`).

#include <stoke/dist/agreement.hpp>
#include <stoke/dist/error.hpp>
#include <stoke/dist/group_collective.hpp>
#include <stoke/dist/in_process_group.hpp>
#include <stoke/dist/process_group.hpp>
#include <stoke/dist/run_rank.hpp>
