#pragma once
/// @file
/// Every dataset source: in-memory samples, memory-mapped record files, IDX files.

#include <stoke/data/sources/idx.hpp>
#include <stoke/data/sources/in_memory.hpp>
#include <stoke/data/sources/mmap_records.hpp>
