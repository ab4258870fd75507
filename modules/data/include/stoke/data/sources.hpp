#pragma once
/// @file
/// Every dataset source: in-memory samples, memory-mapped record files, IDX files, array
/// files (npy, npz), and many array files as one sharded dataset.

#include <stoke/data/sources/idx.hpp>
#include <stoke/data/sources/in_memory.hpp>
#include <stoke/data/sources/mmap_records.hpp>
#include <stoke/data/sources/npy.hpp>
#include <stoke/data/sources/npy_write.hpp>
#include <stoke/data/sources/npz.hpp>
#include <stoke/data/sources/sharded_arrays.hpp>
