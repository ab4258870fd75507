#include "vulkan_validation.hpp"

#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <stoke/vulkan/backend.hpp>
#include <stoke/vulkan/instance.hpp>

namespace stoke::testing {
namespace {

struct Recorder {
  std::mutex mutex;
  std::vector<std::string> messages;
};

/// Constructed before the instance, so it outlives it (messages at exit still land here).
Recorder& recorder() {
  static Recorder recorder;
  return recorder;
}

}  // namespace

void enable_vulkan_validation() {
  static const bool enabled = [] {
    Recorder& messages = recorder();
    vulkan::InstanceOptions options;
    options.validation = true;
    options.on_message = [&messages](const vulkan::DebugMessage& message) {
      std::lock_guard lock(messages.mutex);
      messages.messages.push_back(message.id + ": " + message.text);
    };
    vulkan::configure_instance(std::move(options));
    return true;
  }();
  (void)enabled;
}

std::vector<std::string> take_vulkan_messages() {
  Recorder& messages = recorder();
  std::lock_guard lock(messages.mutex);
  return std::exchange(messages.messages, {});
}

void expect_no_vulkan_messages() {
  for (const std::string& message : take_vulkan_messages()) {
    ADD_FAILURE() << "the Vulkan validation layer reported: " << message;
  }
}

std::string vulkan_skip_reason() {
  enable_vulkan_validation();
  if (!vulkan::Backend::devices().empty()) return {};
  return "no Vulkan device: " + vulkan::Backend::unavailable_reason();
}

void VulkanTest::SetUp() {
  const std::string reason = vulkan_skip_reason();
  if (!reason.empty()) {
    std::string said;  // the loader's own words on why, reported by the skip, not as failures
    for (const std::string& message : take_vulkan_messages()) said += "; " + message;
    GTEST_SKIP() << reason << said;
  }
  expect_no_vulkan_messages();  // nothing may be left from making the instance
}

void VulkanTest::TearDown() {
  expect_no_vulkan_messages();
}

}  // namespace stoke::testing
