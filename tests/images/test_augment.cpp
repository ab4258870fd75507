// Tests of the augmentations of stoke::images: the draws from the per-sample generator
// (random_resized_crop, center_crop, resize, horizontal_flip, color_jitter), the bilinear
// render, colour jitter and normalisation against naive double-precision references, and
// the one-pass render against the two-step one.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <span>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stoke/core/error.hpp>
#include <stoke/core/rng.hpp>
#include <stoke/images/augment.hpp>
#include <stoke/images/detail/crop_draws.hpp>

#include "stoke_test_files.hpp"

namespace {

using stoke::SampleRng;
using stoke::testing::message_of;
using testing::AllOf;
using testing::HasSubstr;
namespace img = stoke::images;

// --- helpers and naive references -------------------------------------------------------

/// A `height` x `width` x `channels` image of random bytes.
img::Image random_image(std::uint32_t height, std::uint32_t width, std::uint32_t channels,
                        std::uint32_t seed) {
  img::Image image;
  image.shape = {height, width, channels};
  image.pixels.resize(image.shape.bytes());
  std::mt19937 engine(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  for (auto& value : image.pixels) value = static_cast<std::uint8_t>(byte(engine));
  return image;
}

/// A smooth image (a gradient with a little noise), where bilinear weights matter.
img::Image smooth_image(std::uint32_t height, std::uint32_t width, std::uint32_t channels) {
  img::Image image = random_image(height, width, channels, 99);
  for (std::uint32_t y = 0; y < height; ++y) {
    for (std::uint32_t x = 0; x < width; ++x) {
      for (std::uint32_t c = 0; c < channels; ++c) {
        auto& value = image.pixels[(std::size_t{y} * width + x) * channels + c];
        value = static_cast<std::uint8_t>((y * 7 + x * 5 + c * 40 + value % 9) % 256);
      }
    }
  }
  return image;
}

/// The `n`-th uniform (from 0) of the stream of (seed, epoch, index).
float nth_uniform(std::uint64_t seed, std::uint64_t epoch, std::uint64_t index, int n) {
  SampleRng rng(seed, epoch, index);
  float value = 0.0F;
  for (int i = 0; i <= n; ++i) value = rng.uniform();
  return value;
}

/// A byte from a double: round half up, clamp to [0, 255].
double byte_of(double value) {
  return std::clamp(std::floor(value + 0.5), 0.0, 255.0);
}

/// One sampling position along an axis, as documented: position, then clamps.
struct Sample {
  std::uint32_t first;
  std::uint32_t second;
  double fraction;  // of `second`, exact
};
Sample sample_at(double start, double extent, std::uint32_t count, std::uint32_t size,
                 std::uint32_t o) {
  double s = start + (o + 0.5) * (extent / count) - 0.5;
  const double last = size - 1.0;
  const double low = std::min(std::max(start, 0.0), last);
  const double high = std::min(std::max(start + extent - 1.0, low), last);
  s = std::min(std::max(s, low), high);
  const double below = std::floor(s);
  const auto first = static_cast<std::uint32_t>(below);
  return {first, std::min(first + 1, size - 1), s - below};
}

/// The naive bilinear sampler, in double: with the documented weights quantised to 1/2048
/// when `quantised`, exact fractional weights otherwise.
std::vector<double> reference_bilinear(const img::Image& source, img::CropBox box,
                                       img::ImageShape out, bool quantised) {
  std::vector<double> result(out.bytes());
  const auto weight = [&](double fraction) {
    return quantised ? std::floor(fraction * 2048.0 + 0.5) / 2048.0 : fraction;
  };
  for (std::uint32_t y = 0; y < out.height; ++y) {
    const Sample sy = sample_at(box.top, box.height, out.height, source.shape.height, y);
    const double wy = weight(sy.fraction);
    for (std::uint32_t x = 0; x < out.width; ++x) {
      const Sample sx = sample_at(box.left, box.width, out.width, source.shape.width, x);
      const double wx = weight(sx.fraction);
      for (std::uint32_t c = 0; c < out.channels; ++c) {
        const img::ImageView view = source.view();
        const double top =
            (1 - wx) * view.at(sy.first, sx.first, c) + wx * view.at(sy.first, sx.second, c);
        const double bottom =
            (1 - wx) * view.at(sy.second, sx.first, c) + wx * view.at(sy.second, sx.second, c);
        result[(std::size_t{y} * out.width + x) * out.channels + c] =
            byte_of((1 - wy) * top + wy * bottom);
      }
    }
  }
  return result;
}

/// The grey of an RGB pixel as a byte, rounded half up.
double reference_grey(double r, double g, double b) {
  return std::floor((299 * r + 587 * g + 114 * b) / 1000.0 + 0.5);
}

/// Naive colour jitter: brightness, contrast (mean grey), saturation (grey), in double.
std::vector<std::uint8_t> reference_jitter(std::vector<std::uint8_t> pixels, std::uint32_t channels,
                                           double brightness, double contrast, double saturation) {
  for (auto& v : pixels) v = static_cast<std::uint8_t>(byte_of(brightness * v));
  const std::size_t count = pixels.size() / channels;
  double sum = 0;
  for (std::size_t p = 0; p < count; ++p) {
    sum += channels == 3 ? reference_grey(pixels[3 * p], pixels[3 * p + 1], pixels[3 * p + 2])
                         : pixels[p];
  }
  const double mean = sum / static_cast<double>(count);
  for (auto& v : pixels) {
    v = static_cast<std::uint8_t>(byte_of(contrast * v + (1.0 - contrast) * mean));
  }
  if (channels == 3) {
    for (std::size_t p = 0; p < count; ++p) {
      const double grey = reference_grey(pixels[3 * p], pixels[3 * p + 1], pixels[3 * p + 2]);
      for (std::size_t c = 0; c < 3; ++c) {
        auto& v = pixels[3 * p + c];
        v = static_cast<std::uint8_t>(byte_of(saturation * v + (1.0 - saturation) * grey));
      }
    }
  }
  return pixels;
}

/// `render` into a new vector.
std::vector<std::uint8_t> rendered(const img::Image& source, const img::AugmentDraw& draw,
                                   img::ImageShape out) {
  std::vector<std::uint8_t> bytes(out.bytes());
  img::render(source.view(), draw, out, bytes);
  return bytes;
}

img::AugmentDraw box_draw(img::CropBox box) {
  img::AugmentDraw draw;
  draw.box = box;
  return draw;
}

/// Whether `a | b` compiles.
template <class A, class B>
concept Pipeable = requires(A a, B b) { a | b; };

// --- composition ------------------------------------------------------------------------

static_assert(Pipeable<img::RandomResizedCrop, img::HorizontalFlip>);
static_assert(Pipeable<img::Resize, img::ColorJitter>);
static_assert(Pipeable<img::Augmentation, img::HorizontalFlip>);
// exactly one geometric step, and first
static_assert(!Pipeable<img::RandomResizedCrop, img::Resize>);
static_assert(!Pipeable<img::CenterCrop, img::RandomResizedCrop>);
static_assert(!Pipeable<img::Augmentation, img::CenterCrop>);
static_assert(!Pipeable<img::HorizontalFlip, img::Resize>);
static_assert(!Pipeable<img::HorizontalFlip, img::ColorJitter>);
static_assert(!Pipeable<img::ColorJitter, img::HorizontalFlip>);

TEST(AugmentPipe, GeometryGivesTheOutputSize) {
  const img::Augmentation a = img::random_resized_crop(224, 160) | img::horizontal_flip();
  EXPECT_EQ(a.height(), 224U);
  EXPECT_EQ(a.width(), 160U);
  const img::Augmentation b = img::center_crop(32, 48);
  EXPECT_EQ(b.height(), 32U);
  EXPECT_EQ(b.width(), 48U);
  const img::Augmentation c = img::resize(7, 9) | img::color_jitter(0.1F, 0.0F, 0.0F);
  EXPECT_EQ(c.height(), 7U);
  EXPECT_EQ(c.width(), 9U);
}

TEST(AugmentPipe, DrawOrderIsBoxThenFlipThenJitterWhateverTheOrderOfThePipe) {
  const img::Augmentation flip_first =
      img::resize(8, 8) | img::horizontal_flip(0.5F) | img::color_jitter(0.4F, 0.3F, 0.2F);
  const img::Augmentation jitter_first =
      img::resize(8, 8) | img::color_jitter(0.4F, 0.3F, 0.2F) | img::horizontal_flip(0.5F);
  int flips = 0;
  for (std::uint64_t index = 0; index < 64; ++index) {
    SampleRng a(5, 1, index);
    SampleRng b(5, 1, index);
    const img::AugmentDraw draw = flip_first.draw(20, 30, a);
    EXPECT_EQ(draw, jitter_first.draw(20, 30, b));
    EXPECT_EQ(draw.box, (img::CropBox{0, 0, 20, 30}));  // resize draws nothing
    EXPECT_EQ(draw.flip, nth_uniform(5, 1, index, 0) < 0.5F);
    EXPECT_FLOAT_EQ(draw.brightness, 0.6F + 0.8F * nth_uniform(5, 1, index, 1));
    EXPECT_FLOAT_EQ(draw.contrast, 0.7F + 0.6F * nth_uniform(5, 1, index, 2));
    EXPECT_FLOAT_EQ(draw.saturation, 0.8F + 0.4F * nth_uniform(5, 1, index, 3));
    EXPECT_EQ(a.uniform(), nth_uniform(5, 1, index, 4));  // four draws used, no more
    flips += draw.flip ? 1 : 0;
  }
  EXPECT_GT(flips, 0);
  EXPECT_LT(flips, 64);
}

TEST(AugmentPipe, RandomResizedCropDrawsItsBoxBeforeTheFlip) {
  const img::Augmentation a = img::random_resized_crop(16, 16) | img::horizontal_flip(0.5F);
  for (std::uint64_t index = 0; index < 32; ++index) {
    SampleRng rng(11, 0, index);
    const img::AugmentDraw draw = a.draw(120, 90, rng);
    SampleRng replay(11, 0, index);
    const img::CropBox box =
        img::detail::random_resized_crop_box(120, 90, {0.08F, 1.0F}, {0.75F, 4.0F / 3}, replay);
    EXPECT_EQ(draw.box, box);
    EXPECT_EQ(draw.flip, replay.uniform() < 0.5F);
  }
}

TEST(AugmentPipe, AFlipOrAJitterGivenTwiceIsRefused) {
  EXPECT_THAT(
      message_of<stoke::UsageError>([] {
        (void)(img::resize(4, 4) | img::horizontal_flip(0.25F) | img::horizontal_flip(0.75F));
      }),
      AllOf(HasSubstr("horizontal_flip is given twice"), HasSubstr("0.25"), HasSubstr("0.75")));
  EXPECT_THAT(message_of<stoke::UsageError>([] {
                (void)(img::resize(4, 4) | img::color_jitter(0.1F, 0.1F, 0.1F) |
                       img::horizontal_flip() | img::color_jitter(0.2F, 0.2F, 0.2F));
              }),
              HasSubstr("color_jitter is given twice"));
}

// --- argument checks --------------------------------------------------------------------

TEST(AugmentArguments, BuildersNameTheAugmentationAndTheValue) {
  using stoke::UsageError;
  EXPECT_THAT(message_of<UsageError>([] { (void)img::random_resized_crop(0, 5); }),
              AllOf(HasSubstr("random_resized_crop"), HasSubstr("0x5")));
  EXPECT_THAT(message_of<UsageError>([] { (void)img::random_resized_crop(4, 4, {0.0F, 1.0F}); }),
              AllOf(HasSubstr("random_resized_crop"), HasSubstr("scale {0, 1}")));
  EXPECT_THAT(message_of<UsageError>([] { (void)img::random_resized_crop(4, 4, {0.5F, 1.5F}); }),
              HasSubstr("scale {0.5, 1.5}"));
  EXPECT_THAT(message_of<UsageError>([] { (void)img::random_resized_crop(4, 4, {0.9F, 0.5F}); }),
              HasSubstr("scale {0.9, 0.5}"));
  EXPECT_THAT(message_of<UsageError>(
                  [] { (void)img::random_resized_crop(4, 4, {0.5F, 1.0F}, {-1.0F, 2.0F}); }),
              AllOf(HasSubstr("random_resized_crop"), HasSubstr("ratio {-1, 2}")));
  EXPECT_THAT(message_of<UsageError>(
                  [] { (void)img::random_resized_crop(4, 4, {0.5F, 1.0F}, {0.0F, 1.0F}); }),
              HasSubstr("ratio {0, 1}"));
  EXPECT_THAT(message_of<UsageError>([] { (void)img::center_crop(3, 0); }),
              AllOf(HasSubstr("center_crop"), HasSubstr("3x0")));
  EXPECT_THAT(message_of<UsageError>([] { (void)img::resize(0, 0); }),
              AllOf(HasSubstr("resize"), HasSubstr("0x0")));
  EXPECT_THAT(message_of<UsageError>([] { (void)img::horizontal_flip(1.5F); }),
              AllOf(HasSubstr("horizontal_flip"), HasSubstr("probability 1.5")));
  EXPECT_THAT(message_of<UsageError>([] { (void)img::horizontal_flip(-0.25F); }),
              HasSubstr("probability -0.25"));
  EXPECT_THAT(message_of<UsageError>([] { (void)img::color_jitter(-0.5F, 0.0F, 0.0F); }),
              AllOf(HasSubstr("color_jitter"), HasSubstr("brightness -0.5")));
  EXPECT_THAT(message_of<UsageError>([] { (void)img::color_jitter(0.0F, NAN, 0.0F); }),
              HasSubstr("contrast nan"));
  EXPECT_THAT(message_of<UsageError>([] { (void)img::color_jitter(0.0F, 0.0F, -2.0F); }),
              HasSubstr("saturation -2"));
}

TEST(AugmentArguments, StepsMadeByHandAreCheckedToo) {
  EXPECT_THAT(message_of<stoke::UsageError>(
                  [] { (void)img::Augmentation(img::RandomResizedCrop{4, 4, {0.5F, 2.0F}}); }),
              HasSubstr("scale {0.5, 2}"));
  EXPECT_THAT(
      message_of<stoke::UsageError>([] { (void)(img::resize(2, 2) | img::HorizontalFlip{2.0F}); }),
      HasSubstr("probability 2"));
}

TEST(AugmentArguments, NormalizationNamesTheChannelAndTheValue) {
  EXPECT_THAT(message_of<stoke::UsageError>(
                  [] { (void)img::Normalization({0.5F, 0.5F, 0.5F}, {0.2F, 0.0F, 0.2F}); }),
              AllOf(HasSubstr("Normalization"), HasSubstr("std[1] 0")));
  EXPECT_THAT(message_of<stoke::UsageError>([] { (void)img::Normalization(INFINITY, 1.0F); }),
              HasSubstr("mean[0] inf"));
  EXPECT_THAT(message_of<stoke::UsageError>([] { (void)img::Normalization(0.5F, 1.0F).table(1); }),
              HasSubstr("channel 1"));
}

TEST(AugmentArguments, ACenterCropLargerThanTheImageIsAnInputErrorNamingTheSizes) {
  const img::Augmentation a = img::center_crop(224, 224);
  SampleRng rng(1, 0, 0);
  EXPECT_THAT(message_of<stoke::InputError>([&] { (void)a.draw(100, 150, rng); }),
              AllOf(HasSubstr("center_crop"), HasSubstr("224x224"), HasSubstr("100x150")));
  EXPECT_THAT(message_of<stoke::InputError>([&] { (void)a.draw(0, 150, rng); }),
              HasSubstr("0x150"));
}

TEST(AugmentArguments, RenderRefusesMismatchedBuffersAndBoxes) {
  const img::Image source = random_image(8, 8, 3, 1);
  const img::AugmentDraw draw = box_draw({0, 0, 8, 8});
  std::vector<std::uint8_t> bytes(4 * 4 * 3);
  EXPECT_THAT(message_of<stoke::UsageError>(
                  [&] { img::render(source.view(), draw, {4, 4, 3}, std::span(bytes).first(47)); }),
              AllOf(HasSubstr("render"), HasSubstr("47 values"), HasSubstr("4x4x3")));
  EXPECT_THAT(message_of<stoke::UsageError>(
                  [&] { img::render(source.view(), draw, {4, 4, 1}, std::span(bytes).first(16)); }),
              AllOf(HasSubstr("output 4x4x1"), HasSubstr("8x8x3 source")));
  EXPECT_THAT(message_of<stoke::UsageError>(
                  [&] { img::render(source.view(), box_draw({0, 0, 8, 0}), {4, 4, 3}, bytes); }),
              HasSubstr("width 0"));
  EXPECT_THAT(message_of<stoke::UsageError>([&] {
                img::render(img::ImageView{std::span(source.pixels).first(10), source.shape}, draw,
                            {4, 4, 3}, bytes);
              }),
              HasSubstr("with 10 bytes"));
  std::vector<float> floats(4 * 4 * 3);
  EXPECT_THAT(message_of<stoke::UsageError>([&] {
                img::normalize_into(img::ImageView{bytes, {4, 4, 3}}, false,
                                    img::Normalization(0.5F, 0.5F), floats);
              }),
              AllOf(HasSubstr("normalize_into"), HasSubstr("1 channels")));
  img::AugmentDraw jittered = draw;
  jittered.contrast = 1.25F;
  EXPECT_THAT(message_of<stoke::UsageError>([&] {
                img::render_normalized(source.view(), jittered, {4, 4, 3},
                                       img::Normalization({0, 0, 0}, {1, 1, 1}), floats);
              }),
              AllOf(HasSubstr("render_normalized"), HasSubstr("contrast 1.25")));
}

// --- random_resized_crop draws ----------------------------------------------------------

TEST(RandomResizedCropDraw, AreaAndPositionFollowTheirDistributions) {
  // ratio {1, 1} on a square image: the first attempt always fits (four draws).
  constexpr int kDraws = 4000;
  double fractions = 0;
  double positions = 0;
  double lowest = 1;
  double highest = 0;
  bool top_edge = false;
  bool bottom_edge = false;
  for (int i = 0; i < kDraws; ++i) {
    SampleRng rng(3, 0, static_cast<std::uint64_t>(i));
    const img::CropBox box =
        img::detail::random_resized_crop_box(100, 100, {0.25F, 0.5F}, {1.0F, 1.0F}, rng);
    EXPECT_EQ(rng.uniform(), nth_uniform(3, 0, static_cast<std::uint64_t>(i), 4));
    ASSERT_EQ(box.height, box.width);
    ASSERT_EQ(box.top, std::floor(box.top));
    ASSERT_EQ(box.left, std::floor(box.left));
    ASSERT_GE(box.top, 0.0F);
    ASSERT_LE(box.top + box.height, 100.0F);
    ASSERT_LE(box.left + box.width, 100.0F);
    const double fraction = box.height * box.width / 10000.0;
    fractions += fraction;
    lowest = std::min(lowest, fraction);
    highest = std::max(highest, fraction);
    positions += box.top / (100.0 - box.height);
    top_edge = top_edge || box.top == 0.0F;
    bottom_edge = bottom_edge || box.top + box.height == 100.0F;
  }
  EXPECT_NEAR(fractions / kDraws, 0.375, 0.01);
  EXPECT_NEAR(lowest, 0.25, 0.01);
  EXPECT_NEAR(highest, 0.5, 0.01);
  EXPECT_NEAR(positions / kDraws, 0.5, 0.03);
  EXPECT_TRUE(top_edge);
  EXPECT_TRUE(bottom_edge);
}

TEST(RandomResizedCropDraw, AspectRatioIsLogUniformAndBoxesStayInside) {
  constexpr int kDraws = 4000;
  double log_ratios = 0;
  for (int i = 0; i < kDraws; ++i) {
    SampleRng rng(4, 2, static_cast<std::uint64_t>(i));
    const img::CropBox box =
        img::detail::random_resized_crop_box(256, 256, {0.08F, 1.0F}, {0.75F, 4.0F / 3}, rng);
    ASSERT_GE(box.top, 0.0F);
    ASSERT_GE(box.left, 0.0F);
    ASSERT_LE(box.top + box.height, 256.0F);
    ASSERT_LE(box.left + box.width, 256.0F);
    // The sides are the drawn real sides rounded, so +-0.5 bounds the drawn ratio and area.
    EXPECT_LE((box.width - 0.5) / (box.height + 0.5), 4.0 / 3 + 1e-9);
    EXPECT_GE((box.width + 0.5) / (box.height - 0.5), 0.75 - 1e-9);
    EXPECT_GE((box.width + 0.5) * (box.height + 0.5), 0.08 * 256 * 256);
    log_ratios += std::log(box.width / box.height);
  }
  EXPECT_NEAR(log_ratios / kDraws, 0.0, 0.015);
}

TEST(RandomResizedCropDraw, FallsBackToTheCentralCropClampedToTheRatio) {
  // The whole area at a ratio the image cannot hold: every attempt fails (20 draws).
  SampleRng wide(1, 0, 0);
  EXPECT_EQ(img::detail::random_resized_crop_box(100, 100, {1.0F, 1.0F}, {2.0F, 3.0F}, wide),
            (img::CropBox{25, 0, 50, 100}));
  EXPECT_EQ(wide.uniform(), nth_uniform(1, 0, 0, 20));
  SampleRng tall(1, 0, 1);
  EXPECT_EQ(img::detail::random_resized_crop_box(100, 100, {1.0F, 1.0F}, {0.2F, 0.3F}, tall),
            (img::CropBox{0, 35, 100, 30}));
  SampleRng thin(1, 0, 2);  // height round(5 / 2) = 2: halves to even, as Python
  EXPECT_EQ(img::detail::random_resized_crop_box(100, 5, {1.0F, 1.0F}, {2.0F, 2.0F}, thin),
            (img::CropBox{49, 0, 2, 5}));
  SampleRng portrait(1, 0, 3);
  EXPECT_EQ(img::detail::random_resized_crop_box(300, 100, {1.0F, 1.0F}, {2.0F, 3.0F}, portrait),
            (img::CropBox{125, 0, 50, 100}));
  // A ratio range holding the image's: the whole image when nothing fits.
  for (std::uint64_t index = 0; index < 200; ++index) {
    SampleRng rng(1, 1, index);
    const img::CropBox box =
        img::detail::random_resized_crop_box(100, 100, {1.0F, 1.0F}, {0.5F, 2.0F}, rng);
    EXPECT_GE(box.top, 0.0F);
    EXPECT_GE(box.left, 0.0F);
    EXPECT_LE(box.top + box.height, 100.0F);
    EXPECT_LE(box.left + box.width, 100.0F);
    EXPECT_GE(box.height * box.width, 99.0F * 99.0F);
  }
}

TEST(RandomResizedCropDraw, OneByOneImage) {
  SampleRng rng(9, 9, 9);
  EXPECT_EQ(img::detail::random_resized_crop_box(1, 1, {0.08F, 1.0F}, {0.75F, 4.0F / 3}, rng),
            (img::CropBox{0, 0, 1, 1}));
}

// --- the draw is a pure function of (seed, epoch, index) --------------------------------

TEST(AugmentDraw, IsAPureFunctionOfSeedEpochAndIndex) {
  const img::Augmentation a = img::random_resized_crop(32, 32) | img::horizontal_flip() |
                              img::color_jitter(0.4F, 0.4F, 0.4F);
  const auto draw = [&](std::uint64_t seed, std::uint64_t epoch, std::uint64_t index) {
    SampleRng rng(seed, epoch, index);
    return a.draw(480, 640, rng);
  };
  for (std::uint64_t index = 0; index < 50; ++index) {
    EXPECT_EQ(draw(17, 2, index), draw(17, 2, index));
    EXPECT_NE(draw(17, 2, index), draw(17, 2, index + 1));
    EXPECT_NE(draw(17, 2, index), draw(17, 3, index));
    EXPECT_NE(draw(17, 2, index), draw(18, 2, index));
  }
}

TEST(AugmentDraw, CenterCropAndResizeBoxes) {
  SampleRng rng(1, 0, 0);
  EXPECT_EQ(img::Augmentation(img::center_crop(4, 6)).draw(10, 10, rng).box,
            (img::CropBox{3, 2, 4, 6}));
  // (11 - 4) / 2 = 3.5 rounds to 4 and (9 - 4) / 2 = 2.5 to 2: halves to even, as torchvision
  EXPECT_EQ(img::Augmentation(img::center_crop(4, 4)).draw(11, 9, rng).box,
            (img::CropBox{4, 2, 4, 4}));
  EXPECT_EQ(img::Augmentation(img::resize(3, 3)).draw(9, 11, rng).box, (img::CropBox{0, 0, 9, 11}));
  EXPECT_EQ(rng.uniform(), nth_uniform(1, 0, 0, 0));  // nothing drawn
}

TEST(AugmentDraw, FlipProbability) {
  const auto flips = [](float probability) {
    const img::Augmentation a = img::resize(4, 4) | img::horizontal_flip(probability);
    int count = 0;
    for (std::uint64_t index = 0; index < 10000; ++index) {
      SampleRng rng(8, 0, index);
      count += a.draw(10, 10, rng).flip ? 1 : 0;
    }
    return count;
  };
  EXPECT_EQ(flips(0.0F), 0);
  EXPECT_EQ(flips(1.0F), 10000);
  EXPECT_NEAR(flips(0.3F) / 10000.0, 0.3, 0.02);
}

TEST(AugmentDraw, JitterFactorsSpanTheirRanges) {
  const img::Augmentation a = img::resize(4, 4) | img::color_jitter(0.4F, 1.5F, 0.0F);
  EXPECT_TRUE(a.has_color_jitter());
  float low_b = 2;
  float high_b = 0;
  float low_c = 3;
  float high_c = 0;
  for (std::uint64_t index = 0; index < 4000; ++index) {
    SampleRng rng(2, 0, index);
    const img::AugmentDraw draw = a.draw(10, 10, rng);
    low_b = std::min(low_b, draw.brightness);
    high_b = std::max(high_b, draw.brightness);
    low_c = std::min(low_c, draw.contrast);
    high_c = std::max(high_c, draw.contrast);
    EXPECT_EQ(draw.saturation, 1.0F);
  }
  EXPECT_GE(low_b, 0.6F);
  EXPECT_LT(low_b, 0.61F);
  EXPECT_LE(high_b, 1.4F);
  EXPECT_GT(high_b, 1.39F);
  EXPECT_GE(low_c, 0.0F);
  EXPECT_LT(low_c, 0.01F);
  EXPECT_LE(high_c, 2.5F);
  EXPECT_GT(high_c, 2.49F);
}

TEST(AugmentDraw, ZeroJitterIsNoJitter) {
  const img::Augmentation a = img::resize(4, 4) | img::color_jitter(0.0F, 0.0F, 0.0F);
  EXPECT_FALSE(a.has_color_jitter());
  EXPECT_FALSE(img::Augmentation(img::resize(4, 4)).has_color_jitter());
  for (std::uint64_t index = 0; index < 100; ++index) {
    SampleRng rng(2, 0, index);
    const img::AugmentDraw draw = a.draw(10, 10, rng);
    EXPECT_FALSE(draw.has_color_jitter());
    EXPECT_EQ(draw.brightness, 1.0F);
    EXPECT_EQ(draw.contrast, 1.0F);
    EXPECT_EQ(draw.saturation, 1.0F);
  }
}

TEST(AugmentDraw, ScaledBoxFollowsTheDecodedSize) {
  EXPECT_EQ(img::scaled_box({10, 20, 100, 200}, {400, 800, 3}, {200, 400, 3}),
            (img::CropBox{5, 10, 50, 100}));
  EXPECT_EQ(
      img::scaled_box({3, 6, 30, 60}, {300, 600, 3}, {38, 75, 3}),
      (img::CropBox{static_cast<float>(3 * 38 / 300.0), static_cast<float>(6 * 75 / 600.0),
                    static_cast<float>(30 * 38 / 300.0), static_cast<float>(60 * 75 / 600.0)}));
  EXPECT_THROW((void)img::scaled_box({0, 0, 1, 1}, {0, 4, 3}, {0, 2, 3}), stoke::UsageError);
}

// --- bilinear render --------------------------------------------------------------------

TEST(Render, KnownValuesAndRoundingHalfUp) {
  img::Image two{{0, 255}, {1, 2, 1}};
  // upsampling 2 -> 4: positions -0.25 (clamped to 0), 0.25, 0.75, 1.25 (clamped to 1)
  EXPECT_EQ(rendered(two, box_draw({0, 0, 1, 2}), {1, 4, 1}),
            (std::vector<std::uint8_t>{0, 64, 191, 255}));
  img::Image four{{0, 255, 100, 51}, {1, 4, 1}};
  // downsampling 4 -> 2: positions 0.5 and 2.5, 127.5 -> 128 and 75.5 -> 76
  EXPECT_EQ(rendered(four, box_draw({0, 0, 1, 4}), {1, 2, 1}),
            (std::vector<std::uint8_t>{128, 76}));
}

TEST(Render, SameSizeAndCentreCropCopyThePixels) {
  const img::Image source = random_image(13, 17, 3, 5);
  EXPECT_EQ(rendered(source, box_draw({0, 0, 13, 17}), source.shape), source.pixels);
  SampleRng rng(0, 0, 0);
  const img::AugmentDraw draw = img::Augmentation(img::center_crop(5, 6)).draw(13, 17, rng);
  const std::vector<std::uint8_t> crop = rendered(source, draw, {5, 6, 3});
  for (std::uint32_t y = 0; y < 5; ++y) {
    for (std::uint32_t x = 0; x < 6; ++x) {
      for (std::uint32_t c = 0; c < 3; ++c) {
        ASSERT_EQ(crop[(y * 6 + x) * 3 + c], source.view().at(y + 4, x + 6, c));
      }
    }
  }
}

TEST(Render, EqualsTheNaiveBilinearSamplerOnFixedBoxes) {
  struct Case {
    std::uint32_t channels;
    img::CropBox box;
    img::ImageShape out;
  };
  const std::vector<Case> cases{
      {3, {0, 0, 37, 29}, {64, 64, 3}},               // up, whole image
      {3, {0, 0, 37, 29}, {11, 7, 3}},                // down, whole image
      {1, {5, 3, 20, 17}, {56, 40, 1}},               // up, integer box
      {1, {5, 3, 20, 17}, {9, 13, 1}},                // down, integer box
      {3, {2.5F, 1.25F, 30.3F, 20.7F}, {23, 31, 3}},  // fractional box (reduced decode)
      {3, {0.1F, 0.2F, 0.7F, 0.9F}, {3, 4, 3}},       // box under a pixel
      {3, {30, 20, 10, 12}, {7, 5, 3}},               // box reaching past the bottom right
      {1, {36, 28, 1, 1}, {4, 4, 1}},                 // the last pixel alone
  };
  const img::Image rgb = smooth_image(37, 29, 3);
  const img::Image grey = smooth_image(37, 29, 1);
  for (const Case& test : cases) {
    const img::Image& source = test.channels == 3 ? rgb : grey;
    const std::vector<std::uint8_t> out = rendered(source, box_draw(test.box), test.out);
    const std::vector<double> exact = reference_bilinear(source, test.box, test.out, true);
    const std::vector<double> real = reference_bilinear(source, test.box, test.out, false);
    for (std::size_t i = 0; i < out.size(); ++i) {
      ASSERT_EQ(out[i], exact[i]) << "value " << i << " of box " << test.box.top << ","
                                  << test.box.left << "," << test.box.height << ","
                                  << test.box.width;
      ASSERT_LE(std::abs(out[i] - real[i]), 1.0) << "value " << i;
    }
  }
}

TEST(Render, EqualsTheNaiveBilinearSamplerOnRandomDraws) {
  const img::Image source = random_image(48, 64, 3, 7);
  const img::Augmentation a = img::random_resized_crop(24, 20);
  for (std::uint64_t index = 0; index < 100; ++index) {
    SampleRng rng(21, 0, index);
    img::AugmentDraw draw = a.draw(48, 64, rng);
    if (index % 2 == 1) draw.box = img::scaled_box(draw.box, {96, 128, 3}, source.shape);
    const std::vector<std::uint8_t> out = rendered(source, draw, {24, 20, 3});
    const std::vector<double> exact = reference_bilinear(source, draw.box, {24, 20, 3}, true);
    for (std::size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], exact[i]) << index;
  }
}

TEST(Render, AnIntegerBoxIsCroppingThenResizing) {
  // Sampling positions are clamped at the box's edge pixels, as cropping first would.
  const img::Image source = random_image(30, 40, 3, 8);
  const img::CropBox box{4, 7, 12, 19};
  img::Image crop;
  crop.shape = {12, 19, 3};
  for (std::uint32_t y = 0; y < 12; ++y) {
    for (std::uint32_t x = 0; x < 19; ++x) {
      for (std::uint32_t c = 0; c < 3; ++c)
        crop.pixels.push_back(source.view().at(y + 4, x + 7, c));
    }
  }
  for (const img::ImageShape out : {img::ImageShape{25, 33, 3}, img::ImageShape{5, 8, 3}}) {
    EXPECT_EQ(rendered(source, box_draw(box), out), rendered(crop, box_draw({0, 0, 12, 19}), out));
  }
}

TEST(Render, RendersAreNotFlipped) {
  const img::Image source = random_image(10, 12, 3, 4);
  img::AugmentDraw draw = box_draw({0, 0, 10, 12});
  const std::vector<std::uint8_t> straight = rendered(source, draw, {8, 8, 3});
  draw.flip = true;
  EXPECT_EQ(rendered(source, draw, {8, 8, 3}), straight);
}

// --- colour jitter ----------------------------------------------------------------------

TEST(ColorJitter, EqualsTheNaiveJitter) {
  const img::Image source = random_image(17, 23, 3, 12);
  const std::vector<std::array<float, 3>> factors{{1.3F, 1.0F, 1.0F}, {1.0F, 0.6F, 1.0F},
                                                  {1.0F, 1.0F, 1.7F}, {0.7F, 1.4F, 0.3F},
                                                  {1.9F, 0.2F, 2.0F}, {0.55F, 1.85F, 0.05F}};
  for (const auto& [b, c, s] : factors) {
    std::vector<std::uint8_t> pixels = source.pixels;
    img::apply_color_jitter(source.shape, pixels, b, c, s);
    EXPECT_EQ(pixels, reference_jitter(source.pixels, 3, b, c, s)) << b << " " << c << " " << s;
  }
  const img::Image grey = random_image(9, 31, 1, 13);
  std::vector<std::uint8_t> pixels = grey.pixels;
  img::apply_color_jitter(grey.shape, pixels, 0.8F, 1.3F, 1.0F);
  EXPECT_EQ(pixels, reference_jitter(grey.pixels, 1, 0.8, 1.3, 1.0));
}

TEST(ColorJitter, ExtremeFactors) {
  const img::Image source = random_image(6, 7, 3, 14);
  std::vector<std::uint8_t> black = source.pixels;
  img::apply_color_jitter(source.shape, black, 0.0F, 1.0F, 1.0F);
  EXPECT_EQ(black, std::vector<std::uint8_t>(black.size(), 0));
  // contrast 0: every byte the mean grey, rounded half up
  std::vector<std::uint8_t> flat = source.pixels;
  img::apply_color_jitter(source.shape, flat, 1.0F, 0.0F, 1.0F);
  double sum = 0;
  for (std::size_t p = 0; p < 42; ++p) {
    sum += reference_grey(source.pixels[3 * p], source.pixels[3 * p + 1], source.pixels[3 * p + 2]);
  }
  EXPECT_EQ(flat, std::vector<std::uint8_t>(flat.size(),
                                            static_cast<std::uint8_t>(std::floor(sum / 42 + 0.5))));
  // saturation 0: the grey image
  std::vector<std::uint8_t> grey = source.pixels;
  img::apply_color_jitter(source.shape, grey, 1.0F, 1.0F, 0.0F);
  for (std::size_t p = 0; p < 42; ++p) {
    const double g =
        reference_grey(source.pixels[3 * p], source.pixels[3 * p + 1], source.pixels[3 * p + 2]);
    for (std::size_t c = 0; c < 3; ++c) ASSERT_EQ(grey[3 * p + c], g);
  }
  // brightness 3 saturates at 255
  std::vector<std::uint8_t> bright{100, 0, 85};
  img::apply_color_jitter({1, 1, 3}, bright, 3.0F, 1.0F, 1.0F);
  EXPECT_EQ(bright, (std::vector<std::uint8_t>{255, 0, 255}));
}

TEST(ColorJitter, SaturationIsANoOpOnGreyImages) {
  const img::Image source = random_image(8, 8, 1, 15);
  std::vector<std::uint8_t> pixels = source.pixels;
  img::apply_color_jitter(source.shape, pixels, 1.0F, 1.0F, 0.0F);
  EXPECT_EQ(pixels, source.pixels);
}

TEST(ColorJitter, RenderAppliesTheDrawnJitterAfterResampling) {
  const img::Image source = smooth_image(40, 30, 3);
  img::AugmentDraw draw = box_draw({3, 2, 30, 25});
  const std::vector<std::uint8_t> plain = rendered(source, draw, {16, 12, 3});
  draw.brightness = 1.2F;
  draw.contrast = 0.8F;
  draw.saturation = 1.5F;
  EXPECT_EQ(rendered(source, draw, {16, 12, 3}), reference_jitter(plain, 3, 1.2F, 0.8F, 1.5F));
  EXPECT_NE(rendered(source, draw, {16, 12, 3}), plain);
}

// --- normalisation ----------------------------------------------------------------------

TEST(Normalization, TablesAreTheSharedExpression) {
  const std::array<float, 3> mean{0.485F, 0.456F, 0.406F};
  const std::array<float, 3> std{0.229F, 0.224F, 0.225F};
  const img::Normalization normalization(mean, std);
  EXPECT_EQ(normalization.channels(), 3U);
  for (std::uint32_t c = 0; c < 3; ++c) {
    for (int b = 0; b < 256; ++b) {
      ASSERT_EQ(normalization.table(c)[static_cast<std::size_t>(b)],
                (static_cast<float>(b) / 255.0F - mean[c]) / std[c]);
    }
  }
  const img::Normalization grey(0.5F, 0.25F);
  EXPECT_EQ(grey.channels(), 1U);
  EXPECT_EQ(grey.table(0)[255], (255.0F / 255.0F - 0.5F) / 0.25F);
}

TEST(Normalization, NormalizeIntoWritesChwAndFlipsExactly) {
  const img::Image source = random_image(5, 7, 3, 16);
  const img::Normalization normalization({0.1F, 0.2F, 0.3F}, {0.5F, 0.6F, 0.7F});
  std::vector<float> straight(source.shape.bytes());
  std::vector<float> flipped(source.shape.bytes());
  img::normalize_into(source.view(), false, normalization, straight);
  img::normalize_into(source.view(), true, normalization, flipped);
  for (std::uint32_t c = 0; c < 3; ++c) {
    for (std::uint32_t y = 0; y < 5; ++y) {
      for (std::uint32_t x = 0; x < 7; ++x) {
        const std::size_t at = (std::size_t{c} * 5 + y) * 7 + x;
        ASSERT_EQ(straight[at], normalization.table(c)[source.view().at(y, x, c)]);
        ASSERT_EQ(flipped[at], straight[(std::size_t{c} * 5 + y) * 7 + (6 - x)]);
      }
    }
  }
}

// --- one pass against two steps ---------------------------------------------------------

TEST(RenderNormalized, EqualsRenderThenNormalizeBitForBit) {
  for (const std::uint32_t channels : {3U, 1U}) {
    const img::Image source = random_image(57, 83, channels, 17 + channels);
    const img::Normalization normalization =
        channels == 3 ? img::Normalization({0.485F, 0.456F, 0.406F}, {0.229F, 0.224F, 0.225F})
                      : img::Normalization(0.45F, 0.27F);
    const img::Augmentation a = img::random_resized_crop(29, 37) | img::horizontal_flip();
    int flips = 0;
    for (std::uint64_t index = 0; index < 200; ++index) {
      SampleRng rng(31, 1, index);
      img::AugmentDraw draw = a.draw(57, 83, rng);
      if (index % 3 == 0) draw.box = img::scaled_box(draw.box, {114, 166, channels}, source.shape);
      const img::ImageShape out{29, 37, channels};
      std::vector<std::uint8_t> bytes(out.bytes());
      img::render(source.view(), draw, out, bytes);
      std::vector<float> two_steps(out.bytes());
      img::normalize_into(img::ImageView{bytes, out}, draw.flip, normalization, two_steps);
      std::vector<float> one_pass(out.bytes(), -1000.0F);
      img::render_normalized(source.view(), draw, out, normalization, one_pass);
      ASSERT_EQ(std::memcmp(one_pass.data(), two_steps.data(), one_pass.size() * sizeof(float)), 0)
          << "channels " << channels << ", index " << index;
      flips += draw.flip ? 1 : 0;
    }
    EXPECT_GT(flips, 0);
    EXPECT_LT(flips, 200);
  }
}

}  // namespace
