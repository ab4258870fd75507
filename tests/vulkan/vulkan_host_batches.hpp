#pragma once
/// @file
/// Test support for the Vulkan learner suites: host batches made by loader workers, which
/// `prefetch_to_device`'s default stage (`UploadClassification`) uploads to a Vulkan device in
/// the shape the shader batcher gives, so the same model reads both.

#include <utility>
#include <vector>

#include <stoke/stoke.hpp>
#include <stoke/vulkan.hpp>

namespace stoke::testing {

/// The CPU batcher, for loaders whose batches are uploaded to a Vulkan device afterwards.
struct HostClassification {
  cpu::ImageBatcher inner;
  cpu::ClassificationBatch batch(std::vector<LabeledImage> items, const vulkan::Device&) const {
    return inner.batch(std::move(items), cpu::Device{});
  }
};

}  // namespace stoke::testing
