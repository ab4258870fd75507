// The augmenting image batcher in a loader: every row is its sample decoded and augmented with
// the sample's own stream, whatever the workers, chunks or resumes; bad samples end the run
// naming the file, or are replaced, logged and counted under the opt-in policy.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stoke/images/decode.hpp>
#include <stoke/images/encode.hpp>
#include <stoke/images/image_batcher.hpp>
#include <stoke/images/render_row.hpp>
#include <stoke/stoke.hpp>

#include "test_jpegs.hpp"

namespace {

namespace images = stoke::images;
using testing::HasSubstr;
using Builder = stoke::DataLoaderBuilder<stoke::cpu::Backend, images::ImageBatcher>;
using Dataset = stoke::InMemoryDataset<images::EncodedImage>;

using stoke::testing::encoded;
using stoke::testing::jpegs;
using stoke::testing::pattern;
using stoke::testing::truncated;

images::ImageBatcher batcher(bool jitter = false) {
  images::Augmentation augmentation =
      images::random_resized_crop(24, 20) | images::horizontal_flip();
  if (jitter) augmentation = augmentation | images::color_jitter(0.4F, 0.4F, 0.4F);
  return {.augmentation = augmentation,
          .normalization = images::Normalization({0.5F, 0.4F, 0.3F}, {0.2F, 0.25F, 0.3F}),
          .decoding = {.channels = 3, .reduced_decode = false}};
}

/// Every row of every batch of one epoch of `loader`, in order, and the labels.
template <class Loader>
std::pair<std::vector<float>, std::vector<std::int32_t>> epoch_rows(Loader& loader) {
  std::pair<std::vector<float>, std::vector<std::int32_t>> out;
  for (auto& batch : loader.iter()) {
    const auto values = batch.data.inputs.values();
    out.first.insert(out.first.end(), values.begin(), values.end());
    out.second.insert(out.second.end(), batch.data.labels.begin(), batch.data.labels.end());
  }
  return out;
}

/// What row `index` of `epoch` must hold: decoded at full size, drawn from its own stream,
/// rendered, then flipped and normalised.
std::vector<float> expected_row(const images::ImageBatcher& batcher,
                                const images::EncodedImage& item, std::uint64_t seed,
                                std::size_t epoch, std::size_t index) {
  const images::Image decoded = images::decode_image(item);  // full size
  stoke::SampleRng rng(seed, epoch, index);
  const images::AugmentDraw draw =
      batcher.augmentation.draw(decoded.shape.height, decoded.shape.width, rng);
  const images::ImageShape out = batcher.output_shape();
  std::vector<std::uint8_t> rendered(out.bytes());
  images::render(decoded.view(), draw, out, rendered);
  std::vector<float> row(out.bytes());
  images::normalize_into(images::ImageView{rendered, out}, draw.flip, batcher.normalization, row);
  return row;
}

TEST(ImageBatcher, EachRowIsItsSampleDecodedAndAugmentedWithItsOwnStream) {
  const auto items = jpegs(23);
  for (const bool jitter : {false, true}) {
    const images::ImageBatcher augmenting = batcher(jitter);
    auto loader = Builder(augmenting).batch_size(5).shuffle(5).build_batch_loader(Dataset(items));
    loader.set_epoch(3);
    std::size_t rows = 0;
    for (auto& batch : loader.iter()) {
      for (std::size_t k = 0; k < batch.size(); ++k) {
        const std::size_t index = batch.indices[k];
        const auto row = batch.data.inputs.row(k);
        const auto expected = expected_row(augmenting, items[index], 5, 3, index);
        ASSERT_TRUE(std::equal(row.begin(), row.end(), expected.begin(), expected.end()))
            << "index " << index << (jitter ? " with" : " without") << " colour jitter";
        EXPECT_EQ(batch.data.labels[k], static_cast<std::int32_t>(items[index].label));
        ++rows;
      }
    }
    EXPECT_EQ(rows, items.size());
  }
}

TEST(ImageBatcher, OneAndSeveralWorkersGiveTheSameBatches) {
  const auto items = jpegs(41);
  for (const bool jitter : {false, true}) {
    auto single =
        Builder(batcher(jitter)).batch_size(4).shuffle(9).build_batch_loader(Dataset(items));
    auto threaded =
        Builder(batcher(jitter)).batch_size(4).shuffle(9).num_workers(3).build(Dataset(items));
    EXPECT_EQ(epoch_rows(single), epoch_rows(threaded));
    EXPECT_EQ(epoch_rows(single), epoch_rows(threaded)) << "the second epoch";
  }
}

TEST(ImageBatcher, ABatchFilledInChunksOnTwoThreadsEqualsTheWholeBatch) {
  const auto items = jpegs(12);
  const images::ImageBatcher augmenting = batcher();
  const std::vector<std::size_t> indices{7, 3, 11, 0, 5, 9, 1, 2, 4, 6, 8, 10};
  std::vector<images::EncodedImage> batch_items;
  for (const std::size_t index : indices) batch_items.push_back(items[index]);
  const stoke::SampleContext context{.seed = 4, .epoch = 2, .indices = indices};
  const stoke::detail::SampleContextScope scope(context);
  const auto whole = augmenting.batch(batch_items, stoke::cpu::Device{});
  auto pending = augmenting.begin_batch(batch_items, stoke::cpu::Device{});
  std::thread other([&] {
    const stoke::detail::SampleContextScope other_scope(context);
    pending.fill(6, 12);
  });
  pending.fill(0, 6);
  other.join();
  const auto chunked = std::move(pending).finish();
  EXPECT_TRUE(std::ranges::equal(whole.inputs.values(), chunked.inputs.values()));
  EXPECT_EQ(whole.labels, chunked.labels);
}

TEST(ImageBatcher, AResumedEpochRepeatsTheAugmentationOfTheUnbrokenOne) {
  const auto items = jpegs(30);
  auto unbroken = Builder(batcher()).batch_size(4).shuffle(2).num_workers(2).build(Dataset(items));
  unbroken.set_epoch(1);
  std::vector<std::vector<float>> all;
  for (auto& batch : unbroken.iter()) {
    all.emplace_back(batch.data.inputs.values().begin(), batch.data.inputs.values().end());
  }
  auto first = Builder(batcher()).batch_size(4).shuffle(2).num_workers(2).build(Dataset(items));
  first.set_epoch(1);
  stoke::LoaderState state;
  {
    std::size_t step = 0;
    for (auto& batch : first.iter()) {
      ASSERT_TRUE(std::ranges::equal(batch.data.inputs.values(), all[step]));
      if (++step == 3) break;
    }
    state = first.state();
  }
  auto resumed = Builder(batcher()).batch_size(4).shuffle(2).num_workers(2).build(Dataset(items));
  resumed.restore(state);
  std::size_t step = 3;
  for (auto& batch : resumed.iter()) {
    ASSERT_LT(step, all.size());
    EXPECT_TRUE(std::ranges::equal(batch.data.inputs.values(), all[step])) << "step " << step;
    ++step;
  }
  EXPECT_EQ(step, all.size());
}

TEST(ImageBatcher, ACorruptImageEndsTheRunNamingItsFileAndIndex) {
  auto items = jpegs(10);
  items[6] = truncated(items[6], "shard-0.tar:broken-6");
  auto loader = Builder(batcher()).batch_size(5).num_workers(2).build(Dataset(items));
  try {
    for ([[maybe_unused]] auto& batch : loader.iter()) {
    }
    FAIL() << "a truncated JPEG was accepted";
  } catch (const stoke::DataError& error) {
    EXPECT_THAT(error.what(), HasSubstr("shard-0.tar:broken-6"));
    // The batch's first index, or that of the chunk the failing thread filled.
    EXPECT_THAT(error.what(), testing::ContainsRegex("dataset index [56] "));
  }
}

TEST(ImageBatcher, BadSamplesAreReplacedByTheNextGoodOneLoggedAndCountedPerEpoch) {
  auto items = jpegs(12);
  items[2] = truncated(items[2], "bad-2.jpg");
  items[3] = truncated(items[3], "bad-3.jpg");
  items[3].label = 9;
  images::ImageBatcher tolerant = batcher();
  tolerant.bad_samples.max_per_epoch = 2;
  auto loader = Builder(tolerant).batch_size(6).build_batch_loader(Dataset(items));
  for (std::size_t epoch = 0; epoch < 2; ++epoch) {
    for (auto& batch : loader.iter()) {
      ASSERT_EQ(batch.size(), 6U);
      for (std::size_t k = 0; k < batch.size(); ++k) {
        const std::size_t index = batch.indices[k];
        // Rows 2 and 3 take image 4 (the next one that decodes), drawn with their own stream.
        const std::size_t source = (index == 2 || index == 3) ? 4 : index;
        const auto expected = expected_row(tolerant, items[source], 0, epoch, index);
        const auto row = batch.data.inputs.row(k);
        EXPECT_TRUE(std::equal(row.begin(), row.end(), expected.begin(), expected.end()))
            << "index " << index;
        EXPECT_EQ(batch.data.labels[k], static_cast<std::int32_t>(items[source].label));
      }
    }
    EXPECT_EQ(tolerant.log->count(epoch), 2U);
  }
  const auto logged = tolerant.log->samples();
  ASSERT_EQ(logged.size(), 4U);
  EXPECT_EQ(logged[0].epoch, 0U);
  EXPECT_EQ(logged[0].index, 2U);
  EXPECT_EQ(logged[0].source, "bad-2.jpg");
  EXPECT_EQ(logged[0].replacement, 4U);
  EXPECT_THAT(logged[0].reason, HasSubstr("bad-2.jpg"));
  EXPECT_EQ(logged[1].index, 3U);
  EXPECT_EQ(logged[3].epoch, 1U);
}

TEST(ImageBatcher, BadSamplesAreReplacedTheSameWayForOneAndSeveralWorkers) {
  auto items = jpegs(40);
  for (const std::size_t bad : {3, 4, 5, 17, 30}) {
    items[bad] = truncated(items[bad], "bad-" + std::to_string(bad) + ".jpg");
  }
  images::ImageBatcher tolerant = batcher();
  tolerant.bad_samples.max_per_epoch = 5;
  tolerant.decoding = {.channels = 1, .reduced_decode = true};
  tolerant.normalization = images::Normalization(0.5F, 0.25F);
  images::ImageBatcher threaded_tolerant = tolerant;
  threaded_tolerant.log = std::make_shared<images::BadSampleLog>();
  auto single = Builder(tolerant).batch_size(8).shuffle(3).build_batch_loader(Dataset(items));
  auto threaded =
      Builder(threaded_tolerant).batch_size(8).shuffle(3).num_workers(3).build(Dataset(items));
  for (int epoch = 0; epoch < 3; ++epoch) {
    EXPECT_EQ(epoch_rows(single), epoch_rows(threaded)) << "epoch " << epoch;
  }
}

TEST(ImageBatcher, OneBadSampleMoreThanThePolicyAllowsEndsTheRunNamingThemAll) {
  auto items = jpegs(9);
  for (const std::size_t bad : {1, 4, 7}) {
    items[bad] = truncated(items[bad], "bad-" + std::to_string(bad) + ".jpg");
  }
  images::ImageBatcher tolerant = batcher();
  tolerant.bad_samples.max_per_epoch = 2;
  auto loader = Builder(tolerant).batch_size(9).build_batch_loader(Dataset(items));
  try {
    for ([[maybe_unused]] auto& batch : loader.iter()) {
    }
    FAIL() << "three bad samples passed a policy of two";
  } catch (const stoke::DataError& error) {
    for (const char* name : {"bad-1.jpg", "bad-4.jpg", "bad-7.jpg", "more than the 2"}) {
      EXPECT_THAT(error.what(), HasSubstr(name));
    }
  }
}

TEST(ImageBatcher, ABadSampleMetTwiceInAnEpochCountsOnce) {
  auto items = jpegs(5);
  items[0] = truncated(items[0], "bad-0.jpg");
  images::ImageBatcher tolerant = batcher();
  tolerant.bad_samples.max_per_epoch = 1;
  // Batches of 4 padded by wrapping around: index 0 is read again as padding.
  auto loader = Builder(tolerant).batch_size(4).pad().build_batch_loader(Dataset(items));
  std::size_t zeros = 0;
  for (auto& batch : loader.iter()) zeros += std::ranges::count(batch.indices, 0U);
  EXPECT_EQ(zeros, 2U);
  EXPECT_EQ(tolerant.log->count(0), 1U);
  EXPECT_EQ(tolerant.log->samples().size(), 1U);
}

TEST(ImageBatcher, ABatchOfOnlyBadSamplesCannotBeRepaired) {
  auto items = jpegs(2);
  items[0] = truncated(items[0], "bad-a.jpg");
  items[1] = truncated(items[1], "bad-b.jpg");
  images::ImageBatcher tolerant = batcher();
  tolerant.bad_samples.max_per_epoch = 10;
  auto loader = Builder(tolerant).batch_size(2).build_batch_loader(Dataset(items));
  EXPECT_THAT(
      [&] {
        for ([[maybe_unused]] auto& batch : loader.iter()) {
        }
      },
      testing::ThrowsMessage<stoke::DataError>(HasSubstr("could replace bad sample")));
}

TEST(ImageBatcher, ReducedSizeDecodingKeepsTheShapeAndStaysCloseToFullDecoding) {
  std::vector<images::EncodedImage> items;
  for (std::uint32_t i = 0; i < 6; ++i) {
    items.push_back(encoded(images::encode_jpeg(pattern(256, 256, i).view(), {.quality = 95}),
                            "big-" + std::to_string(i) + ".jpg", i));
  }
  images::ImageBatcher full{
      .augmentation = images::resize(32, 32),
      .normalization = images::Normalization({0.0F, 0.0F, 0.0F}, {1.0F, 1.0F, 1.0F}),
      .decoding = {.channels = 3, .reduced_decode = false}};
  images::ImageBatcher reduced = full;
  reduced.decoding.reduced_decode = true;
  auto a = Builder(full).batch_size(3).build_batch_loader(Dataset(items));
  auto b = Builder(reduced).batch_size(3).build_batch_loader(Dataset(items));
  const auto [full_rows, full_labels] = epoch_rows(a);
  const auto [reduced_rows, reduced_labels] = epoch_rows(b);
  ASSERT_EQ(full_rows.size(), reduced_rows.size());
  double difference = 0;
  bool any = false;
  for (std::size_t i = 0; i < full_rows.size(); ++i) {
    difference += std::abs(full_rows[i] - reduced_rows[i]);
    any = any || full_rows[i] != reduced_rows[i];
  }
  EXPECT_TRUE(any) << "a reduced decode of 256 pixels to 32 should differ somewhat";
  EXPECT_LT(difference / double(full_rows.size()), 0.08) << "mean difference in [0, 1] units";
}

TEST(ImageBatcher, AnImageOfTheOutputShapeTakenWholeIsDecodedStraightIntoTheRow) {
  const images::EncodedImage item = stoke::testing::encoded(
      images::encode_jpeg(stoke::testing::pattern(24, 20, 3).view()), "whole.jpg", 1);
  const images::Augmentation whole = images::resize(24, 20) | images::horizontal_flip(1.0F);
  const images::PrepareOptions options{.channels = 3, .reduced_decode = true};
  stoke::SampleRng rng(1, 0, 0);
  const images::DecodePlan plan = images::plan_decode(item, whole, options, rng);
  EXPECT_TRUE(images::renders_as_decoded(plan, {24, 20, 3}));
  std::vector<std::uint8_t> row(24 * 20 * 3);
  const images::AugmentDraw draw =
      images::render_row_bytes(item, whole, options, stoke::SampleRng(1, 0, 0), row);
  EXPECT_TRUE(draw.flip) << "the flip is left to the normalisation";
  EXPECT_EQ(row, images::decode_image(item).pixels);
  // Halving it: decoded at 1/2 by DCT scaling, that too is the output as decoded; without
  // reduced decoding it is resized.
  stoke::SampleRng again(1, 0, 0);
  EXPECT_TRUE(images::renders_as_decoded(
      images::plan_decode(item, images::resize(12, 10), options, again), {12, 10, 3}));
  stoke::SampleRng full(1, 0, 0);
  EXPECT_FALSE(images::renders_as_decoded(
      images::plan_decode(item, images::resize(12, 10), {.channels = 3, .reduced_decode = false},
                          full),
      {12, 10, 3}));
  // A jitter renders too.
  stoke::SampleRng jitter_rng(1, 0, 0);
  EXPECT_FALSE(images::renders_as_decoded(
      images::plan_decode(item, images::resize(24, 20) | images::color_jitter(0.5F, 0.0F, 0.0F),
                          options, jitter_rng),
      {24, 20, 3}));
}

TEST(ImageBatcher, ALabelAboveInt32IsRefusedNamingTheItem) {
  auto items = jpegs(3);
  items[1].label = 0x80000000u;
  auto loader = Builder(batcher()).batch_size(3).build_batch_loader(Dataset(items));
  EXPECT_THAT(
      [&] {
        for ([[maybe_unused]] auto& batch : loader.iter()) {
        }
      },
      testing::ThrowsMessage<stoke::DataError>(HasSubstr("img-1.jpg")));
}

}  // namespace
