#pragma once
/// @file
/// Conformance hooks of the backends every build has: the CPU backend, and the test-only
/// delayed backend (a user's own staging backend with a slow copy engine).

#include <cstddef>
#include <string>
#include <vector>

#include <stoke/stoke.hpp>

#include "conformance_traits.hpp"
#include "delayed_backend.hpp"

namespace stoke::testing {

template <>
struct ConformanceTraits<cpu::Backend> {
  static std::vector<cpu::Device> devices(std::size_t count) {
    return cpu::Backend::devices(count);
  }
  static std::string skip_reason() { return {}; }
  static void set_up() {}
  static void tear_down() {}
  static bool uploaded(const HostRows<cpu::Device>&) { return true; }
};

template <>
struct ConformanceTraits<delayed::Backend> {
  static std::vector<delayed::Device> devices(std::size_t count) {
    auto all = delayed::Backend::devices();
    all.resize(count);
    return all;
  }
  static std::string skip_reason() { return {}; }
  static void set_up() { delayed::settings() = {}; }
  static void tear_down() { delayed::settings() = {}; }
  static bool uploaded(const delayed::Buffer& buffer) { return buffer.written().ready(); }
  static void fail_copy(std::size_t copy) { delayed::settings().fail_copy = copy; }
};

}  // namespace stoke::testing
