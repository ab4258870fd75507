#pragma once
/// @file
/// Every dataset source: in-memory samples and memory-mapped record files.

#include <stoke/data/sources/in_memory.hpp>
#include <stoke/data/sources/mmap_records.hpp>
