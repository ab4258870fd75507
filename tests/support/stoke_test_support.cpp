#include "stoke_test_support.hpp"

#include <fstream>
#include <string>
#include <thread>

namespace stoke::testing {

std::size_t thread_count() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Threads:", 0) == 0) return std::stoul(line.substr(8));
  }
  throw std::runtime_error("no Threads: line in /proc/self/status");
}

std::size_t baseline_thread_count() {
  std::thread([] {}).join();
  return thread_count();
}

}  // namespace stoke::testing
