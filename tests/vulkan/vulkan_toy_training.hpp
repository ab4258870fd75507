#pragma once
/// @file
/// What the Vulkan learner suites train: the toy images (`toy_images.hpp`) through the shader
/// batcher, into a softmax classifier made from one seed.

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include <stoke/learner.hpp>
#include <stoke/stoke.hpp>
#include <stoke/vulkan.hpp>

#include "toy_images.hpp"

namespace stoke::testing {

/// The seed of the classifiers (and MLPs) that the Vulkan learner suites train.
inline constexpr std::uint64_t kToyModelSeed = 3;

/// The suites' training loader: `train` in batches of 8 made by the shader batcher, shuffled
/// by seed 5, the epoch's last rows dropped (or as `remainder` says).
inline auto shader_train_loader(const ToyImages& train, Remainder remainder = Remainder::drop) {
  return DataLoaderBuilder<vulkan::Backend, vulkan::ImageBatcher>(vulkan::ImageBatcher{})
      .batch_size(8)
      .shuffle(5)
      .remainder(remainder)
      .build(train);
}

/// The suites' validation loader: `valid` in order, in batches of `batch_size` made by the
/// shader batcher, the last one padded.
inline auto shader_valid_loader(const ToyImages& valid, std::size_t batch_size = 32) {
  return DataLoaderBuilder<vulkan::Backend, vulkan::ImageBatcher>(vulkan::ImageBatcher{})
      .batch_size(batch_size)
      .pad()
      .build(valid);
}

/// Expects a run stopped early (`before`) and resumed from its checkpoint (`after`, by
/// `resumed`) to equal the unbroken run (`full`, by `unbroken`) bit for bit: every step's loss,
/// the model's parameters (on the Vulkan device) and the optimizer's state.
template <class Learner>
void expect_resumed_exactly(const FitResult& before, const FitResult& after, Learner& resumed,
                            const FitResult& full, Learner& unbroken) {
  ASSERT_TRUE(before.stopped_early);
  ASSERT_TRUE(after.resumed);
  std::vector<float> stitched = before.step_losses;
  stitched.insert(stitched.end(), after.step_losses.begin(), after.step_losses.end());
  EXPECT_EQ(stitched, full.step_losses);  // bit for bit
  EXPECT_EQ(vulkan::Backend::download(resumed.model().parameters()),
            vulkan::Backend::download(unbroken.model().parameters()));
  EXPECT_EQ(resumed.optimizer().state(), unbroken.optimizer().state());
}

}  // namespace stoke::testing
