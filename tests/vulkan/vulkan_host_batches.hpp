#pragma once
/// @file
/// Test support for the Vulkan learner suites: host batches made by loader workers and the
/// prefetcher's stage that uploads them to a Vulkan device, in the shape the shader batcher
/// gives, so the same model reads both.

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

/// The prefetcher's stage: uploads a host batch's normalised inputs; the labels stay on the
/// host. The result has the shape the shader batcher gives, so the same model reads both.
struct UploadClassification {
  Staged<vulkan::ImageBatch, vulkan::Fence> operator()(vulkan::Stager& stager,
                                                       cpu::ClassificationBatch host) const {
    const auto shape = host.inputs.shape();
    auto staged = stager.upload(std::as_bytes(host.inputs.values()));
    return {vulkan::ImageBatch{std::move(staged.value), std::move(host.labels), shape[0], shape[1],
                               staged.fence},
            staged.fence};
  }
};

}  // namespace stoke::testing
