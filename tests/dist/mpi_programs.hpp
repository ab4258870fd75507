#pragma once
/// @file
/// The programs that the distributed tests run under mpirun. They are commands of one executable,
/// `stoke_mpi_programs <program> [--option value]...`: their files instantiate the same learner
/// and loaders, which one (unity) build compiles once instead of once a program.

namespace stoke::testing {

/// Every sample of an epoch seen exactly once across ranks and devices, and training equal to
/// one process's (mpi_training.cpp).
int mpi_training(int argc, char** argv);
/// The ranks refuse loaders that differ (mpi_agreement.cpp).
int mpi_agreement(int argc, char** argv);
/// A failing or killed rank ends the job with its reason (mpi_failure.cpp).
int mpi_failure(int argc, char** argv);
/// A checkpoint saved under one shape resumes under another (mpi_elastic.cpp).
int mpi_elastic(int argc, char** argv);

}  // namespace stoke::testing
