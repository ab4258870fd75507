#pragma once
/// @file
/// `proc_status_bytes`: a memory field of /proc/self/status, for the benchmarks that measure
/// resident memory (loader_bench, sequence_bench).

#include <cstddef>
#include <cstring>
#include <fstream>
#include <string>

/// A field of /proc/self/status in bytes (the kernel reports kB), such as "RssAnon"; 0 when
/// the field is absent.
inline std::size_t proc_status_bytes(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::size_t length = std::strlen(field);
  while (std::getline(in, line)) {
    if (line.compare(0, length, field) == 0 && line.size() > length && line[length] == ':') {
      return std::stoull(line.substr(length + 1)) * 1024;
    }
  }
  return 0;
}
