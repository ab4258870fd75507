#pragma once
/// @file
/// The process-wide `VkInstance`: created lazily on first use (thread-safe), optionally with
/// the Khronos validation layer and a debug-utils messenger that reports what it finds.

#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <vulkan/vulkan_core.h>

#include <stoke/core/error.hpp>
#include <stoke/vulkan/error.hpp>

namespace stoke::vulkan {

/// A warning or error reported through `VK_EXT_debug_utils` (by the validation layer).
struct DebugMessage {
  VkDebugUtilsMessageSeverityFlagBitsEXT severity{};  ///< warning or error
  VkDebugUtilsMessageTypeFlagsEXT types{};            ///< general, validation, performance
  std::string id;                                     ///< such as `"VUID-vkCmdCopyBuffer-..."`
  std::string text;                                   ///< the message
};

/// How the process-wide instance is made (see `configure_instance`).
struct InstanceOptions {
  /// Enables `VK_LAYER_KHRONOS_validation` with synchronization validation. Without
  /// `configure_instance` it is on when the environment sets `STOKE_VULKAN_VALIDATION=1`.
  bool validation = false;
  /// Receives every warning and error of the validation layer, possibly from several threads
  /// at once. If empty they are printed to `std::cerr`. A requested layer that is not
  /// installed is reported here as an error too.
  std::function<void(const DebugMessage&)> on_message;
};

namespace detail {

/// The options the instance will be (or was) created with.
struct InstanceConfig {
  std::mutex mutex;
  InstanceOptions options;
  bool configured = false;
  bool created = false;
};

inline InstanceConfig& instance_config() {
  static InstanceConfig config;
  return config;
}

inline constexpr const char* validation_layer = "VK_LAYER_KHRONOS_validation";

inline bool layer_available(const char* name) {
  std::uint32_t count = 0;
  if (vkEnumerateInstanceLayerProperties(&count, nullptr) < 0) return false;
  std::vector<VkLayerProperties> layers(count);
  if (vkEnumerateInstanceLayerProperties(&count, layers.data()) < 0) return false;
  for (const auto& layer : layers) {
    if (std::strcmp(layer.layerName, name) == 0) return true;
  }
  return false;
}

inline bool extension_available(const char* layer, const char* name) {
  std::uint32_t count = 0;
  if (vkEnumerateInstanceExtensionProperties(layer, &count, nullptr) < 0) return false;
  std::vector<VkExtensionProperties> extensions(count);
  if (vkEnumerateInstanceExtensionProperties(layer, &count, extensions.data()) < 0) return false;
  for (const auto& extension : extensions) {
    if (std::strcmp(extension.extensionName, name) == 0) return true;
  }
  return false;
}

/// The `VkInstance` (Vulkan 1.2) and its debug messenger.
class Instance {
 public:
  /// Creates the instance; throws `DeviceError` when Vulkan is unusable here.
  explicit Instance(InstanceOptions options) : options_(std::move(options)) {
    std::vector<const char*> layers;
    std::vector<const char*> extensions;
    bool validation_features = false;
    if (options_.validation) {
      if (layer_available(validation_layer)) {
        layers.push_back(validation_layer);
        validation_features =
            extension_available(validation_layer, VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
        if (validation_features) extensions.push_back(VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
      } else {
        report(DebugMessage{VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
                            VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT, "stoke-no-validation",
                            "validation was requested but VK_LAYER_KHRONOS_validation is not "
                            "installed (Debian: vulkan-validationlayers)"});
      }
      debug_utils_ = extension_available(nullptr, VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
      if (debug_utils_) extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    }
    const VkApplicationInfo app{
        VK_STRUCTURE_TYPE_APPLICATION_INFO, nullptr, "stoke", 1, "stoke", 1, VK_API_VERSION_1_2};
    const VkDebugUtilsMessengerCreateInfoEXT messenger_info = messenger_create_info();
    const VkValidationFeatureEnableEXT enables[] = {
        VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
    const VkValidationFeaturesEXT features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT,
                                           debug_utils_ ? &messenger_info : nullptr,
                                           1,
                                           enables,
                                           0,
                                           nullptr};
    const void* next = validation_features ? static_cast<const void*>(&features)
                       : debug_utils_      ? static_cast<const void*>(&messenger_info)
                                           : nullptr;
    const VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                                    next,
                                    0,
                                    &app,
                                    static_cast<std::uint32_t>(layers.size()),
                                    layers.data(),
                                    static_cast<std::uint32_t>(extensions.size()),
                                    extensions.data()};
    STOKE_VK_CHECK(vkCreateInstance(&info, nullptr, &handle_));
    if (debug_utils_) {
      auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
          vkGetInstanceProcAddr(handle_, "vkCreateDebugUtilsMessengerEXT"));
      if (create == nullptr || create(handle_, &messenger_info, nullptr, &messenger_) < 0) {
        vkDestroyInstance(handle_, nullptr);
        throw DeviceError(VK_ERROR_EXTENSION_NOT_PRESENT, "vkCreateDebugUtilsMessengerEXT");
      }
    }
  }
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;
  ~Instance() {
    if (messenger_ != VK_NULL_HANDLE) {
      auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
          vkGetInstanceProcAddr(handle_, "vkDestroyDebugUtilsMessengerEXT"));
      if (destroy != nullptr) destroy(handle_, messenger_, nullptr);
    }
    vkDestroyInstance(handle_, nullptr);
  }

  /// The instance handle.
  [[nodiscard]] VkInstance handle() const noexcept { return handle_; }
  /// Whether the validation layer was requested.
  [[nodiscard]] bool validation() const noexcept { return options_.validation; }

  /// Every physical device, in the loader's order.
  [[nodiscard]] std::vector<VkPhysicalDevice> physical_devices() const {
    std::uint32_t count = 0;
    STOKE_VK_CHECK(vkEnumeratePhysicalDevices(handle_, &count, nullptr));
    std::vector<VkPhysicalDevice> devices(count);
    STOKE_VK_CHECK(vkEnumeratePhysicalDevices(handle_, &count, devices.data()));
    devices.resize(count);
    return devices;
  }

 private:
  VkDebugUtilsMessengerCreateInfoEXT messenger_create_info() {
    return VkDebugUtilsMessengerCreateInfoEXT{
        VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        nullptr,
        0,
        VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
            VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
            VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
            VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
        &Instance::on_message,
        this};
  }

  static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                   VkDebugUtilsMessageTypeFlagsEXT types,
                                                   const VkDebugUtilsMessengerCallbackDataEXT* data,
                                                   void* self) {
    static_cast<const Instance*>(self)->report(
        DebugMessage{severity, types,
                     data != nullptr && data->pMessageIdName != nullptr ? data->pMessageIdName : "",
                     data != nullptr && data->pMessage != nullptr ? data->pMessage : ""});
    return VK_FALSE;
  }

  void report(const DebugMessage& message) const noexcept {
    try {
      if (options_.on_message) {
        options_.on_message(message);
      } else {
        std::cerr << "stoke: vulkan: " << message.id << ": " << message.text << '\n';
      }
    } catch (...) {  // never throw through the Vulkan loader
    }
  }

  InstanceOptions options_;
  bool debug_utils_ = false;
  VkInstance handle_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
};

/// The instance, or why there is none.
struct InstanceSlot {
  std::shared_ptr<const Instance> instance;
  std::string error;
};

/// The process-wide instance, created on the first call (thread-safe); stays null with an
/// error message when Vulkan cannot be used on this machine.
inline const InstanceSlot& shared_instance() {
  static const InstanceSlot slot = [] {
    InstanceConfig& config = instance_config();
    InstanceOptions options;
    {
      std::lock_guard lock(config.mutex);
      config.created = true;
      options = config.options;
      if (!config.configured) {
        const char* env = std::getenv("STOKE_VULKAN_VALIDATION");
        options.validation = env != nullptr && std::string_view(env) == "1";
      }
    }
    InstanceSlot made;
    try {
      made.instance = std::make_shared<const Instance>(std::move(options));
    } catch (const std::exception& error) {
      made.error = error.what();
    }
    return made;
  }();
  return slot;
}

}  // namespace detail

/// Sets how the process-wide instance is made. Call it before any other Vulkan use of stoke
/// (tests call it first); afterwards it throws `StateError`.
inline void configure_instance(InstanceOptions options) {
  detail::InstanceConfig& config = detail::instance_config();
  std::lock_guard lock(config.mutex);
  if (config.created) {
    throw StateError("stoke: vulkan: configure_instance after the instance was created");
  }
  config.options = std::move(options);
  config.configured = true;
}

}  // namespace stoke::vulkan
