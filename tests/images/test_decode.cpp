// Tests of JPEG and PNG decoding (stoke/images/decode.hpp, jpeg.hpp, png.hpp): the pixels equal
// Pillow's for the images write_image_fixtures.py writes (run once per test process into a
// directory of its own), reduced JPEG decodes equal Pillow's draft, and bad input is refused
// with a message naming it.
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <span>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stoke/core/error.hpp>
#include <stoke/data/sources/npy.hpp>
#include <stoke/images/decode.hpp>
#include <stoke/images/jpeg.hpp>
#include <stoke/images/png.hpp>

#include "python_fixtures.hpp"
#include "stoke_test_files.hpp"

namespace {

namespace img = stoke::images;
using img::ImageShape;
using stoke::testing::message_of;
using testing::AllOf;
using testing::HasSubstr;

using Bytes = std::vector<std::uint8_t>;

/// The JPEGs with references, and the PNGs.
const std::vector<std::string> kJpegs = {"rgb420",      "rgb444", "rgb422",   "greyscale",
                                         "progressive", "odd",    "square64", "photo200x150"};
const std::vector<std::string> kPngs = {"rgb",          "grey",       "grey1bit",       "palette",
                                        "palette_trns", "rgba",       "grey_alpha",     "rgb16",
                                        "grey16",       "interlaced", "interlaced_grey"};

/// The pixels Pillow decoded.
struct Reference {
  ImageShape shape;
  Bytes pixels;
};

Bytes read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// The script that writes the test images and Pillow's pixels.
struct PillowFixtureScript {
  static constexpr const char* python = STOKE_TEST_PYTHON;
  static constexpr const char* path = STOKE_IMAGE_FIXTURE_SCRIPT;
  static constexpr const char* prefix = "stoke-image-fixtures";
  static constexpr const char* needs = "Pillow or numpy";
};

/// The test images and Pillow's pixels; skipped, saying why, when the interpreter lacks Pillow.
class ImageDecodeVsPillow : public stoke::testing::PythonFixtureSuite<PillowFixtureScript> {
 protected:
  /// The bytes of the file `name`.
  static Bytes file(const std::string& name) { return read_bytes(fixture_dir() / name); }

  /// Pillow's pixels in `name` (an .npy file of uint8, H x W or H x W x 3).
  static Reference reference(const std::string& name) {
    const stoke::ArrayShard shard = stoke::load_npy(fixture_dir() / name);
    const auto& shape = shard.info().shape;
    EXPECT_TRUE(shape.size() == 2 || shape.size() == 3) << name;
    Reference ref;
    ref.shape = {static_cast<std::uint32_t>(shape[0]), static_cast<std::uint32_t>(shape[1]),
                 shape.size() == 3 ? static_cast<std::uint32_t>(shape[2]) : 1U};
    const auto values = shard.values<std::uint8_t>(0, shard.rows());
    ref.pixels.assign(values.begin(), values.end());
    return ref;
  }
};

/// Expects `pixels` of `shape` to equal `expected` byte for byte; says how many differ.
void expect_pixels(const ImageShape& shape, std::span<const std::uint8_t> pixels,
                   const Reference& expected, const std::string& what) {
  ASSERT_EQ(shape, expected.shape) << what;
  ASSERT_EQ(pixels.size(), expected.pixels.size()) << what;
  std::size_t differing = 0;
  int largest = 0;
  std::size_t first = 0;
  for (std::size_t i = 0; i < pixels.size(); ++i) {
    const int diff = std::abs(int{pixels[i]} - int{expected.pixels[i]});
    if (diff != 0 && differing++ == 0) first = i;
    largest = std::max(largest, diff);
  }
  EXPECT_EQ(differing, 0U) << what << ": " << differing << " of " << pixels.size()
                           << " bytes differ from Pillow's, by up to " << largest
                           << ", the first at byte " << first;
}

/// Decodes `bytes` at full size to `channels` channels.
img::Image decode_full(const Bytes& bytes, const std::string& source, std::uint32_t channels) {
  const img::EncodedInfo info = img::read_image_info(bytes, source);
  return img::decode_image(bytes, source, {channels, info.height, info.width});
}

TEST_F(ImageDecodeVsPillow, JpegsDecodeToPillowsPixels) {
  for (const std::string& name : kJpegs) {
    const Bytes bytes = file(name + ".jpg");
    const img::Image rgb = decode_full(bytes, name, 3);
    expect_pixels(rgb.shape, rgb.pixels, reference(name + ".rgb.npy"), name + " as RGB");
    const img::Image grey = decode_full(bytes, name, 1);
    expect_pixels(grey.shape, grey.pixels, reference(name + ".l.npy"), name + " as grey");
  }
}

TEST_F(ImageDecodeVsPillow, PngsDecodeToPillowsPixels) {
  for (const std::string& name : kPngs) {
    const Bytes bytes = file(name + ".png");
    const img::Image rgb = decode_full(bytes, name, 3);
    expect_pixels(rgb.shape, rgb.pixels, reference(name + ".rgb.npy"), name + " as RGB");
    const img::Image grey = decode_full(bytes, name, 1);
    expect_pixels(grey.shape, grey.pixels, reference(name + ".l.npy"), name + " as grey");
  }
}

TEST_F(ImageDecodeVsPillow, ReducedJpegsEqualPillowsDraft) {
  for (const std::string& name : {"square64", "photo200x150", "odd", "progressive"}) {
    const Bytes bytes = file(std::string(name) + ".jpg");
    const img::JpegHeader header = img::read_jpeg_header(bytes, name);
    for (const std::uint32_t scale : {2U, 4U, 8U}) {
      for (const std::uint32_t channels : {3U, 1U}) {
        const std::string what = std::string(name) + " at 1/" + std::to_string(scale) + ", " +
                                 std::to_string(channels) + " channels";
        const Reference expected = reference(std::string(name) + (channels == 3 ? ".rgb" : ".l") +
                                             ".s" + std::to_string(scale) + ".npy");
        // Through the JPEG decoder at that scale.
        const ImageShape shape = img::jpeg_scaled_shape(header, {1, scale}, channels);
        Bytes pixels(shape.bytes());
        EXPECT_EQ(img::decode_jpeg_into(bytes, name, {1, scale}, channels, pixels), shape);
        expect_pixels(shape, pixels, expected, what + " (decode_jpeg_into)");
        // Through decode_image, with the minimum size Pillow's draft was asked for.
        const img::Image image =
            img::decode_image(bytes, name, {channels, expected.shape.height, expected.shape.width});
        expect_pixels(image.shape, image.pixels, expected, what + " (decode_image)");
      }
    }
  }
}

TEST(ImageDecode, JpegScalesRunFromOneToAnEighth) {
  const auto scales = img::jpeg_scales();
  ASSERT_EQ(scales.size(), 8U);
  EXPECT_EQ(scales.front(), (img::JpegScale{1, 1}));
  EXPECT_EQ(scales[4], (img::JpegScale{1, 2}));
  EXPECT_EQ(scales.back(), (img::JpegScale{1, 8}));
  EXPECT_EQ((img::JpegScale{3, 8}).scaled(150), 57U);
}

TEST(ImageDecode, DecodedShapeReducesAJpegAsFarAsTheMinimumAllows) {
  const img::EncodedInfo jpeg{img::ImageFormat::jpeg, 150, 200, 3};
  EXPECT_EQ(img::decoded_shape(jpeg, 3), (ImageShape{150, 200, 3}));      // the default: full size
  EXPECT_EQ(img::decoded_shape(jpeg, 3, 0, 0), (ImageShape{19, 25, 3}));  // 1/8
  EXPECT_EQ(img::decoded_shape(jpeg, 1, 19, 25), (ImageShape{19, 25, 1}));
  EXPECT_EQ(img::decoded_shape(jpeg, 3, 20, 0), (ImageShape{38, 50, 3}));     // 1/4
  EXPECT_EQ(img::decoded_shape(jpeg, 3, 38, 50), (ImageShape{38, 50, 3}));    // 1/4
  EXPECT_EQ(img::decoded_shape(jpeg, 3, 39, 0), (ImageShape{57, 75, 3}));     // 3/8
  EXPECT_EQ(img::decoded_shape(jpeg, 3, 100, 0), (ImageShape{113, 150, 3}));  // 3/4
  EXPECT_EQ(img::decoded_shape(jpeg, 3, 0, 160), (ImageShape{132, 175, 3}));  // 7/8
  EXPECT_EQ(img::decoded_shape(jpeg, 3, 150, 200), (ImageShape{150, 200, 3}));
  EXPECT_EQ(img::decoded_shape(jpeg, 3, 151, 0), (ImageShape{150, 200, 3}));  // full, not more
  const img::EncodedInfo png{img::ImageFormat::png, 150, 200, 4};
  EXPECT_EQ(img::decoded_shape(png, 3), (ImageShape{150, 200, 3}));
  EXPECT_EQ(img::decoded_shape(png, 1, 10, 10), (ImageShape{150, 200, 1}));
  EXPECT_THAT(message_of<stoke::UsageError>([&] { (void)img::decoded_shape(png, 4); }),
              HasSubstr("4 channels"));
}

TEST_F(ImageDecodeVsPillow, ReadsFormatSizeAndStoredChannels) {
  using img::EncodedInfo;
  using img::ImageFormat;
  const auto info = [](const std::string& name) { return img::read_image_info(file(name), name); };
  EXPECT_EQ(info("rgb420.jpg"), (EncodedInfo{ImageFormat::jpeg, 48, 64, 3}));
  EXPECT_EQ(info("greyscale.jpg"), (EncodedInfo{ImageFormat::jpeg, 40, 56, 1}));
  EXPECT_EQ(info("odd.jpg"), (EncodedInfo{ImageFormat::jpeg, 23, 37, 3}));
  EXPECT_EQ(info("cmyk.jpg"), (EncodedInfo{ImageFormat::jpeg, 8, 16, 4}));
  EXPECT_EQ(info("rgb.png"), (EncodedInfo{ImageFormat::png, 30, 41, 3}));
  EXPECT_EQ(info("rgba.png"), (EncodedInfo{ImageFormat::png, 30, 41, 4}));
  EXPECT_EQ(info("grey_alpha.png"), (EncodedInfo{ImageFormat::png, 30, 41, 2}));
  EXPECT_EQ(info("palette.png"), (EncodedInfo{ImageFormat::png, 30, 41, 3}));
  EXPECT_EQ(info("palette_trns.png"), (EncodedInfo{ImageFormat::png, 30, 41, 4}));
  EXPECT_EQ(info("grey16.png"), (EncodedInfo{ImageFormat::png, 19, 23, 1}));
  const img::JpegHeader header = img::read_jpeg_header(file("rgb420.jpg"), "rgb420.jpg");
  EXPECT_EQ(header.subsampling, img::JpegSubsampling::s420);
  EXPECT_EQ(header.colorspace, img::JpegColorspace::ycbcr);
  EXPECT_EQ(img::read_jpeg_header(file("rgb444.jpg"), "rgb444.jpg").subsampling,
            img::JpegSubsampling::s444);
  const img::PngHeader png = img::read_png_header(file("interlaced.png"), "interlaced.png");
  EXPECT_TRUE(png.interlaced);
  EXPECT_EQ(png.color_type, img::PngColorType::rgb);
  EXPECT_EQ(img::read_png_header(file("rgb16.png"), "rgb16.png").bit_depth, 16U);
}

/// The `InputError` message of decoding `bytes` named `source` at full size.
std::string refusal(const Bytes& bytes, const std::string& source) {
  return message_of<stoke::InputError>([&] { (void)img::decode_image(bytes, source); });
}

TEST_F(ImageDecodeVsPillow, RefusesTruncatedFilesNamingThem) {
  for (const std::string& name :
       {"rgb420.jpg", "progressive.jpg", "rgb.png", "interlaced.png", "palette.png"}) {
    const Bytes whole = file(name);
    for (const std::size_t cut : {std::size_t{1}, std::size_t{2}, std::size_t{5}, std::size_t{9},
                                  std::size_t{30}, std::size_t{100}, whole.size() / 2,
                                  whole.size() - 20, whole.size() - 2, whole.size() - 1}) {
      ASSERT_LT(cut, whole.size()) << name;
      const Bytes cut_bytes(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(cut));
      const std::string source = name + " cut at " + std::to_string(cut);
      const std::string message = refusal(cut_bytes, source);
      EXPECT_THAT(message, HasSubstr("'" + source + "'"));
      if (cut >= 8 && name.ends_with(".png")) {
        EXPECT_THAT(message,
                    AllOf(HasSubstr("PNG"), HasSubstr("libpng"), HasSubstr("byte offset")));
      }
      if (cut >= 3 && name.ends_with(".jpg")) {
        EXPECT_THAT(message, AllOf(HasSubstr("JPEG"), HasSubstr("TurboJPEG")));
      }
    }
  }
  // Without its end-of-image marker a JPEG is refused with libjpeg-turbo's warning.
  const Bytes jpeg = file("rgb420.jpg");
  EXPECT_THAT(refusal(Bytes(jpeg.begin(), jpeg.end() - 2), "no-eoi.jpg"),
              AllOf(HasSubstr("'no-eoi.jpg'"), HasSubstr("Premature end of JPEG file"),
                    HasSubstr("warning")));
}

TEST_F(ImageDecodeVsPillow, RefusesAFlippedHeaderByte) {
  // The JPEG's sample precision (in its SOF0 segment) set to 9 bits.
  Bytes jpeg = file("rgb420.jpg");
  std::size_t sof = 2;
  while (sof + 4 < jpeg.size() && !(jpeg[sof] == 0xff && jpeg[sof + 1] == 0xc0)) ++sof;
  ASSERT_LT(sof + 4, jpeg.size()) << "no SOF0 segment";
  ASSERT_EQ(jpeg[sof + 4], 8);
  jpeg[sof + 4] ^= 0x01;
  EXPECT_THAT(refusal(jpeg, "precision.jpg"),
              AllOf(HasSubstr("JPEG 'precision.jpg'"), HasSubstr("precision")));
  // A bit of the PNG's width (in IHDR, after the 8-byte signature and 8 bytes of chunk head).
  Bytes png = file("rgb.png");
  png[16 + 3] ^= 0x04;
  EXPECT_THAT(refusal(png, "width.png"),
              AllOf(HasSubstr("PNG 'width.png'"), HasSubstr("CRC"), HasSubstr("byte offset 33")));
}

TEST(ImageDecode, RefusesEmptyInputAndOtherFormatsNamingThem) {
  EXPECT_THAT(refusal({}, "nothing.jpg"), AllOf(HasSubstr("'nothing.jpg'"), HasSubstr("empty")));
  const std::string text = "hello, I am not an image";
  EXPECT_THAT(refusal(Bytes(text.begin(), text.end()), "notes.txt"),
              AllOf(HasSubstr("'notes.txt'"), HasSubstr("neither a JPEG nor a PNG"),
                    HasSubstr("68 65 6c 6c 6f 2c 20 49")));
  EXPECT_THAT(refusal(Bytes{0xff, 0xd8}, "two.jpg"),
              AllOf(HasSubstr("'two.jpg'"), HasSubstr("ff d8")));
  EXPECT_THAT(
      message_of<stoke::InputError>([] { (void)img::read_png_header(Bytes(20, 0), "zeros.png"); }),
      AllOf(HasSubstr("PNG 'zeros.png'"), HasSubstr("Not a PNG file")));
}

TEST_F(ImageDecodeVsPillow, RefusesOutputOfAnotherSizeOrShape) {
  const Bytes jpeg = file("rgb420.jpg");
  const img::EncodedInfo info = img::read_image_info(jpeg, "rgb420.jpg");
  const ImageShape shape = img::decoded_shape(info, 3, 20, 20);
  ASSERT_EQ(shape, (ImageShape{24, 32, 3}));
  Bytes out(shape.bytes() + 1);
  EXPECT_THAT(message_of<stoke::UsageError>([&] { img::decode_into(jpeg, "a.jpg", shape, out); }),
              AllOf(HasSubstr("'a.jpg'"), HasSubstr(std::to_string(shape.bytes() + 1))));
  out.resize(shape.bytes());
  img::decode_into(jpeg, "a.jpg", shape, out);  // the right size decodes
  Bytes small(10 * 10 * 3);
  EXPECT_THAT(
      message_of<stoke::UsageError>([&] { img::decode_into(jpeg, "b.jpg", {10, 10, 3}, small); }),
      AllOf(HasSubstr("'b.jpg'"), HasSubstr("decoded_shape")));
  Bytes four(shape.height * shape.width * 4);
  EXPECT_THAT(
      message_of<stoke::UsageError>([&] { img::decode_into(jpeg, "c.jpg", {24, 32, 4}, four); }),
      AllOf(HasSubstr("'c.jpg'"), HasSubstr("4 channels")));
  const Bytes png = file("rgb.png");
  Bytes half(15 * 21 * 3);
  EXPECT_THAT(
      message_of<stoke::UsageError>([&] { img::decode_into(png, "d.png", {15, 21, 3}, half); }),
      AllOf(HasSubstr("PNG 'd.png'"), HasSubstr("decoded_shape")));
  Bytes png_out(30 * 41 * 3 - 1);
  EXPECT_THAT(
      message_of<stoke::UsageError>([&] { img::decode_into(png, "e.png", {30, 41, 3}, png_out); }),
      HasSubstr("'e.png'"));
  EXPECT_THAT(message_of<stoke::UsageError>(
                  [&] { (void)img::decode_jpeg_into(jpeg, "f.jpg", {2, 3}, 3, out); }),
              AllOf(HasSubstr("'f.jpg'"), HasSubstr("2/3")));
}

TEST_F(ImageDecodeVsPillow, DecodingWithTheHeaderAlreadyReadGivesTheSamePixels) {
  // A batcher's row reads the header once, to draw the crop, and decodes with it.
  for (const std::string& name : {std::string("rgb420.jpg"), std::string("rgb.png")}) {
    const Bytes bytes = file(name);
    const img::EncodedInfo info = img::read_image_info(bytes, name);
    for (const std::uint32_t min_side : {img::full_size, 8U}) {
      const img::ImageShape shape = img::decoded_shape(info, 3, min_side, min_side);
      Bytes with_header(shape.bytes()), without(shape.bytes());
      img::decode_into(bytes, name, info, shape, with_header);
      img::decode_into(bytes, name, shape, without);
      EXPECT_EQ(with_header, without) << name << " at " << shape.height << "x" << shape.width;
    }
  }
  const Bytes cmyk = file("cmyk.jpg");
  const img::EncodedInfo cmyk_info = img::read_image_info(cmyk, "cmyk.jpg");
  Bytes out(img::decoded_shape(cmyk_info, 3).bytes());
  EXPECT_THAT(message_of<stoke::InputError>([&] {
                img::decode_into(cmyk, "cmyk.jpg", cmyk_info, img::decoded_shape(cmyk_info, 3),
                                 out);
              }),
              AllOf(HasSubstr("JPEG 'cmyk.jpg'"), HasSubstr("CMYK")));
}

TEST_F(ImageDecodeVsPillow, RefusesCmykJpegs) {
  EXPECT_THAT(refusal(file("cmyk.jpg"), "cmyk.jpg"),
              AllOf(HasSubstr("JPEG 'cmyk.jpg'"), HasSubstr("CMYK")));
}

/// A PNG chunk: length, type, data and CRC.
Bytes png_chunk(const std::string& type, const Bytes& data) {
  Bytes out{static_cast<std::uint8_t>(data.size() >> 24),
            static_cast<std::uint8_t>(data.size() >> 16),
            static_cast<std::uint8_t>(data.size() >> 8), static_cast<std::uint8_t>(data.size())};
  Bytes body(type.begin(), type.end());
  body.insert(body.end(), data.begin(), data.end());
  const auto crc =
      static_cast<std::uint32_t>(::crc32(0, body.data(), static_cast<uInt>(body.size())));
  out.insert(out.end(), body.begin(), body.end());
  for (const int shift : {24, 16, 8, 0}) out.push_back(static_cast<std::uint8_t>(crc >> shift));
  return out;
}

TEST_F(ImageDecodeVsPillow, RefusesImagesOverThePixelLimitBeforeDecoding) {
  // A JPEG whose SOF0 says 60000 x 60000 (3.6e9 pixels).
  Bytes jpeg = file("rgb420.jpg");
  std::size_t sof = 2;
  while (sof + 8 < jpeg.size() && !(jpeg[sof] == 0xff && jpeg[sof + 1] == 0xc0)) ++sof;
  ASSERT_LT(sof + 8, jpeg.size());
  for (const std::size_t at : {sof + 5, sof + 7}) {
    jpeg[at] = 60000 >> 8;
    jpeg[at + 1] = 60000 & 0xff;
  }
  EXPECT_THAT(
      refusal(jpeg, "bomb.jpg"),
      AllOf(HasSubstr("JPEG 'bomb.jpg'"), HasSubstr("60000x60000"), HasSubstr("max_image_pixels")));
  // A PNG of 20000 x 20000 grey pixels (4e8) whose IDAT would be a small zlib stream.
  Bytes png{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  const Bytes ihdr{0, 0, 0x4e, 0x20, 0, 0, 0x4e, 0x20, 8, 0, 0, 0, 0};
  for (const Bytes& chunk : {png_chunk("IHDR", ihdr), png_chunk("IDAT", {0x78, 0x9c, 0x03, 0x00}),
                             png_chunk("IEND", {})}) {
    png.insert(png.end(), chunk.begin(), chunk.end());
  }
  EXPECT_EQ(img::read_png_header(png, "bomb.png").width, 20000U);
  EXPECT_THAT(refusal(png, "bomb.png"),
              AllOf(HasSubstr("PNG 'bomb.png'"), HasSubstr("max_image_pixels")));
}

TEST_F(ImageDecodeVsPillow, DecodesAnEncodedImageNamingItsSource) {
  const auto bytes = std::make_shared<const Bytes>(file("palette.png"));
  img::EncodedImage encoded{*bytes, bytes, 4, "shard-0.tar:000042.png"};
  const img::Image image = img::decode_image(encoded);
  expect_pixels(image.shape, image.pixels, reference("palette.rgb.npy"), "EncodedImage");
  encoded.bytes = encoded.bytes.first(encoded.bytes.size() / 2);
  EXPECT_THAT(message_of<stoke::InputError>([&] { (void)img::decode_image(encoded); }),
              HasSubstr("'shard-0.tar:000042.png'"));
}

TEST_F(ImageDecodeVsPillow, DecodesTheSamePixelsInManyThreadsAtOnce) {
  struct Case {
    std::string file;
    std::uint32_t channels;
    std::uint32_t min_side;
    Reference expected;
  };
  std::vector<Case> cases;
  for (const std::string& name : kJpegs) {
    cases.push_back({name + ".jpg", 3, 100000, reference(name + ".rgb.npy")});
    cases.push_back({name + ".jpg", 1, 100000, reference(name + ".l.npy")});
  }
  cases.push_back({"photo200x150.jpg", 3, 0, reference("photo200x150.rgb.s8.npy")});
  for (const std::string& name : kPngs) {
    cases.push_back({name + ".png", 3, 0, reference(name + ".rgb.npy")});
    cases.push_back({name + ".png", 1, 0, reference(name + ".l.npy")});
  }
  std::vector<Bytes> files;
  for (const Case& c : cases) files.push_back(file(c.file));

  constexpr int kThreads = 8;
  constexpr int kRounds = 6;
  std::atomic<int> decoded{0};
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round) {
        for (std::size_t i = 0; i < cases.size(); ++i) {
          const Case& c = cases[(i + static_cast<std::size_t>(t) * 7) % cases.size()];
          const Bytes& bytes = files[(i + static_cast<std::size_t>(t) * 7) % cases.size()];
          try {
            const img::Image image =
                img::decode_image(bytes, c.file, {c.channels, c.min_side, c.min_side});
            if (image.shape != c.expected.shape || image.pixels != c.expected.pixels) ++wrong;
          } catch (...) {
            ++wrong;
          }
          ++decoded;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(decoded.load(), kThreads * kRounds * static_cast<int>(cases.size()));
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
