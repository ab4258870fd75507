// Tests of JPEG and PNG decoding (stoke/images/decode.hpp, jpeg.hpp, png.hpp): the pixels equal
// Pillow's for the images write_image_fixtures.py writes (run once per test process into a
// directory of its own), reduced JPEG decodes equal Pillow's draft, and bad input is refused
// with a message naming it. The region decode (decode_jpeg_region, decode_region) against the
// full decode on JPEGs written here with libjpeg: every sampling, grey, progressive, restart
// markers, scaled and not; its renders equal the full decode's bit for bit.
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
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
#include <stoke/images/augment.hpp>
#include <stoke/images/decode.hpp>
#include <stoke/images/encode.hpp>
#include <stoke/images/jpeg.hpp>
#include <stoke/images/png.hpp>
#include <stoke/images/prepared_image.hpp>
#include <stoke/images/render_row.hpp>

// jpeglib.h after cstdio (FILE).
#include <jpeglib.h>

#include "python_fixtures.hpp"
#include "stoke_test_files.hpp"
#include "test_jpegs.hpp"

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

// --- The region decode -------------------------------------------------------------------

/// How a test JPEG is written with libjpeg.
struct JpegRecipe {
  std::string name;          ///< for messages
  int h = 2;                 ///< luma's horizontal sampling factor (chroma's is 1)
  int v = 2;                 ///< luma's vertical sampling factor
  bool grey = false;         ///< one component
  bool progressive = false;  ///< libjpeg's simple progression
  int restart_rows = 0;      ///< a restart marker every this many MCU rows (0: none)
  bool optimize = false;     ///< Huffman tables made for the image, not the standard ones
  int scans = 0;             ///< progressive: only the first this many scans (0: all of them)
};

/// The recipes: 4:4:4, 4:2:2, 4:2:0, 4:4:0, grey, progressive 4:2:0, 4:2:0 with restart markers,
/// progressive grey, and a progressive 4:2:0 of its first scan only (DC to one bit less than
/// whole, no AC: libjpeg then smooths blocks with their neighbours).
const std::vector<JpegRecipe> kRegionRecipes = {
    {"4:4:4", 1, 1},
    {"4:2:2", 2, 1},
    {"4:2:0", 2, 2},
    {"4:4:0", 1, 2},
    {"grey", 1, 1, true},
    {"progressive 4:2:0", 2, 2, false, true},
    {"restart 4:2:0", 2, 2, false, false, 1},
    {"progressive grey", 1, 1, true, true},
    {"progressive 4:2:0, first scan", 2, 2, false, true, 0, false, 1}};

/// A photograph-like RGB image: smooth shading, edges and fine texture, with chroma detail
/// (so that chroma upsampling matters).
img::Image photo_like(std::uint32_t height, std::uint32_t width, std::uint32_t seed) {
  img::Image image{Bytes(std::size_t{height} * width * 3), {height, width, 3}};
  for (std::uint32_t y = 0; y < height; ++y) {
    for (std::uint32_t x = 0; x < width; ++x) {
      std::uint32_t hash = (x * 73856093U) ^ (y * 19349663U) ^ (seed * 83492791U);
      hash ^= hash >> 13;
      hash *= 0x5bd1e995U;
      hash ^= hash >> 15;
      const bool edge = (x / 17 + y / 23 + seed) % 3 == 0;
      for (std::uint32_t c = 0; c < 3; ++c) {
        const int shade = static_cast<int>((x * (2 + c) + y * (3 + c * 2) + seed * 29) % 200);
        const int texture = static_cast<int>((hash >> (8 * c)) & 31U) - 16;
        const int value = shade + texture + (edge ? (c == 1 ? 60 : -40) : 0);
        image.pixels[(std::size_t{y} * width + x) * 3 + c] =
            static_cast<std::uint8_t>(std::clamp(value, 0, 255));
      }
    }
  }
  return image;
}

/// `image` (RGB) written by libjpeg as `recipe` says, quality 90.
Bytes encode_with_libjpeg(const img::Image& image, const JpegRecipe& recipe) {
  jpeg_compress_struct info{};
  jpeg_error_mgr error{};
  info.err = jpeg_std_error(&error);
  jpeg_create_compress(&info);
  unsigned char* buffer = nullptr;
  unsigned long size = 0;  // NOLINT(google-runtime-int): libjpeg's type
  jpeg_mem_dest(&info, &buffer, &size);
  info.image_width = image.shape.width;
  info.image_height = image.shape.height;
  info.input_components = 3;
  info.in_color_space = JCS_RGB;
  jpeg_set_defaults(&info);
  jpeg_set_quality(&info, 90, TRUE);
  if (recipe.grey) jpeg_set_colorspace(&info, JCS_GRAYSCALE);
  info.comp_info[0].h_samp_factor = recipe.h;
  info.comp_info[0].v_samp_factor = recipe.v;
  if (recipe.progressive) jpeg_simple_progression(&info);
  if (recipe.progressive && recipe.scans > 0) info.num_scans = recipe.scans;
  info.restart_in_rows = recipe.restart_rows;
  info.optimize_coding = recipe.optimize ? TRUE : FALSE;
  jpeg_start_compress(&info, TRUE);
  while (info.next_scanline < info.image_height) {
    auto* row = const_cast<JSAMPROW>(image.pixels.data() +
                                     std::size_t{info.next_scanline} * image.shape.width * 3);
    jpeg_write_scanlines(&info, &row, 1);
  }
  jpeg_finish_compress(&info);
  Bytes out(buffer, buffer + size);
  jpeg_destroy_compress(&info);
  std::free(buffer);  // NOLINT(cppcoreguidelines-no-malloc): libjpeg's buffer
  return out;
}

/// `jpeg` (as libjpeg writes it: one table a DHT segment) without the Huffman tables of
/// index `index`, as a Motion-JPEG frame leaves out the standard tables: a decoder then takes
/// the standard ones.
Bytes without_huffman_tables(const Bytes& jpeg, int index) {
  Bytes out(jpeg.begin(), jpeg.begin() + 2);  // start of image
  std::size_t at = 2;
  while (at + 4 <= jpeg.size() && jpeg[at] == 0xff && jpeg[at + 1] != 0xda) {
    const std::size_t length = (std::size_t{jpeg[at + 2]} << 8) | jpeg[at + 3];
    const bool dropped = jpeg[at + 1] == 0xc4 && (jpeg[at + 4] & 0x0f) == index;
    if (!dropped) out.insert(out.end(), jpeg.begin() + at, jpeg.begin() + at + 2 + length);
    at += 2 + length;
  }
  out.insert(out.end(), jpeg.begin() + at, jpeg.end());  // the scan and the end of image
  return out;
}

/// How a region decode differs from the full decode at the same place.
struct RegionDifference {
  int interior = 0;                ///< largest difference away from the region's cut edges
  int edge = 0;                    ///< largest difference on its outermost columns and rows
  std::size_t differing_edge = 0;  ///< bytes that differ there
  /// Largest difference on the left and right column, and the top and bottom row (corners
  /// with the columns).
  std::array<int, 4> sides{};
};

/// Decodes `wanted` of `bytes` at `scale` both ways and compares. A progressive JPEG's region
/// is the full rows that hold `wanted` (`whole_rows`); another's is cropped to whole iMCUs.
RegionDifference region_against_full(const Bytes& bytes, const std::string& what,
                                     img::JpegScale scale, std::uint32_t channels,
                                     img::PixelRegion wanted, bool whole_rows) {
  const img::JpegHeader header = img::read_jpeg_header(bytes, what);
  const ImageShape whole = img::jpeg_scaled_shape(header, scale, channels);
  Bytes full(whole.bytes());
  (void)img::decode_jpeg_into(bytes, what, scale, channels, full);
  Bytes scratch;
  const img::RegionView view =
      img::decode_jpeg_region(bytes, what, scale, channels, wanted, scratch);
  EXPECT_EQ(view.whole, whole) << what;
  EXPECT_TRUE(view.region().contains(wanted)) << what;
  EXPECT_EQ(view.top, wanted.top) << what;
  if (whole_rows) {
    EXPECT_EQ(view.left, 0U) << what;
    EXPECT_EQ(view.pixels.shape.width, whole.width) << what;
  } else {
    EXPECT_LE(wanted.left - view.left, 32U * scale.num / scale.denom + 1) << what;
  }
  RegionDifference difference;
  const ImageShape shape = view.pixels.shape;
  for (std::uint32_t y = 0; y < shape.height; ++y) {
    for (std::uint32_t x = 0; x < shape.width; ++x) {
      const std::array<bool, 4> on_side = {
          x == 0 && view.left > 0, x + 1 == shape.width && view.left + x + 1 < whole.width,
          y == 0 && view.top > 0, y + 1 == shape.height && view.top + y + 1 < whole.height};
      const bool corner = (on_side[0] || on_side[1]) && (on_side[2] || on_side[3]);
      const bool cut_edge = on_side[0] || on_side[1] || on_side[2] || on_side[3];
      for (std::uint32_t c = 0; c < channels; ++c) {
        const int a = view.pixels.at(y, x, c);
        const int b =
            full[(std::size_t{view.top + y} * whole.width + view.left + x) * channels + c];
        const int diff = std::abs(a - b);
        for (std::size_t side = 0; side < 4; ++side) {
          if (on_side[side] && (side < 2 || !corner)) {
            difference.sides[side] = std::max(difference.sides[side], diff);
          }
        }
        if (cut_edge) {
          difference.edge = std::max(difference.edge, diff);
          difference.differing_edge += diff != 0 ? 1 : 0;
        } else {
          difference.interior = std::max(difference.interior, diff);
        }
      }
    }
  }
  return difference;
}

/// Regions of every position class in an image of `shape`: the four corners, the four edges,
/// the whole image, the middle, a crop smaller than one MCU, one pixel.
std::vector<std::pair<std::string, img::PixelRegion>> region_classes(ImageShape shape) {
  const std::uint32_t h = shape.height;
  const std::uint32_t w = shape.width;
  return {{"top left", {0, 0, h / 3, w / 3}},
          {"top right", {0, w - w / 3, h / 3, w / 3}},
          {"bottom left", {h - h / 3, 0, h / 3, w / 3}},
          {"bottom right", {h - h / 4, w - w / 5, h / 4, w / 5}},
          {"top edge", {0, w / 4, h / 5, w / 2}},
          {"bottom edge", {h - h / 5, w / 4, h / 5, w / 2}},
          {"left edge", {h / 4, 0, h / 2, w / 5}},
          {"right edge", {h / 4, w - w / 5, h / 2, w / 5}},
          {"whole", {0, 0, h, w}},
          {"middle", {h / 3 + 1, w / 3 + 3, h / 3, w / 3}},
          {"smaller than an MCU", {h / 2 + 3, w / 2 + 5, 5, 7}},
          {"one pixel", {h / 2 + 1, w / 2 + 1, 1, 1}},
          {"full rows", {h / 3, 0, h / 4, w}},
          {"full columns", {0, w / 3, h, w / 4}}};
}

TEST(JpegRegionDecode, EqualsTheFullDecodeButOnTheRegionsCutEdges) {
  // The bound, measured: every row is the full decode's, and every column but the region's
  // outermost two where they are not the image's: there, fancy upsampling of horizontally
  // subsampled chroma repeats the edge sample (4:2:2 and 4:2:0; up to 53 on these images).
  int largest_edge = 0;
  std::size_t edge_bytes = 0;
  for (const JpegRecipe& recipe : kRegionRecipes) {
    std::array<int, 4> sides{};
    const Bytes bytes = encode_with_libjpeg(photo_like(173, 251, 7), recipe);
    for (const img::JpegScale scale :
         {img::JpegScale{1, 1}, img::JpegScale{7, 8}, img::JpegScale{1, 2}, img::JpegScale{3, 8},
          img::JpegScale{1, 8}}) {
      for (const std::uint32_t channels : {3U, 1U}) {
        const img::JpegHeader header = img::read_jpeg_header(bytes, recipe.name);
        const ImageShape whole = img::jpeg_scaled_shape(header, scale, channels);
        for (const auto& [where, wanted] : region_classes(whole)) {
          if (wanted.height == 0 || wanted.width == 0) continue;
          const std::string what = recipe.name + " at " + std::to_string(scale.num) + "/" +
                                   std::to_string(scale.denom) + ", " + std::to_string(channels) +
                                   " channels, " + where;
          const RegionDifference difference =
              region_against_full(bytes, what, scale, channels, wanted, recipe.progressive);
          EXPECT_EQ(difference.interior, 0) << what;
          EXPECT_EQ(difference.sides[2], 0) << what << ": the top row";
          EXPECT_EQ(difference.sides[3], 0) << what << ": the bottom row";
          if (recipe.grey || channels == 1 || recipe.h == 1) {
            EXPECT_EQ(difference.edge, 0) << what << ": no chroma upsampling, no edge";
          }
          largest_edge = std::max(largest_edge, difference.edge);
          edge_bytes += difference.differing_edge;
          for (std::size_t side = 0; side < 4; ++side) {
            sides[side] = std::max(sides[side], difference.sides[side]);
          }
        }
      }
    }
    std::printf(
        "region decode, %s: largest difference on the left %d, right %d, top %d, "
        "bottom %d\n",
        recipe.name.c_str(), sides[0], sides[1], sides[2], sides[3]);
  }
  std::printf("region decode: largest difference on a region's cut edge %d, %zu bytes differ\n",
              largest_edge, edge_bytes);
}

// libjpeg keeps the tables of the last image in its decompressor: a frame that leaves out its
// chroma Huffman tables must decode with the standard ones whatever the thread decoded before
// (an image with tables of its own), both ways, or its pixels would depend on the epoch's order.
TEST(JpegRegionDecode, PixelsDoNotDependOnTheImageTheThreadDecodedBefore) {
  const ImageShape shape{48, 64, 3};
  const Bytes with_tables = encode_with_libjpeg(photo_like(48, 64, 5), {"4:2:0", 2, 2});
  const Bytes frame = without_huffman_tables(with_tables, 1);
  ASSERT_LT(frame.size(), with_tables.size());
  JpegRecipe optimized{"optimized 4:2:0", 2, 2};
  optimized.optimize = true;
  const Bytes before = encode_with_libjpeg(photo_like(48, 64, 9), optimized);
  const img::PixelRegion wanted{16, 16, 16, 24};

  Bytes expected(shape.bytes());
  (void)img::decode_jpeg_into(with_tables, "with tables", {1, 1}, 3, expected);
  Bytes expected_region;
  (void)img::decode_jpeg_region(with_tables, "with tables", {1, 1}, 3, wanted, expected_region);
  for (int round = 0; round < 2; ++round) {
    Bytes scratch(shape.bytes());
    (void)img::decode_jpeg_into(before, "optimized", {1, 1}, 3, scratch);
    Bytes got(shape.bytes());
    ASSERT_NO_THROW((void)img::decode_jpeg_into(frame, "frame", {1, 1}, 3, got));
    EXPECT_EQ(got, expected) << "round " << round;

    (void)img::decode_jpeg_region(before, "optimized", {1, 1}, 3, wanted, scratch);
    Bytes region;
    ASSERT_NO_THROW((void)img::decode_jpeg_region(frame, "frame", {1, 1}, 3, wanted, region));
    EXPECT_EQ(region, expected_region) << "round " << round;
  }
}

TEST(JpegRegionDecode, RendersExactlyWhatTheFullDecodeRenders) {
  // The batcher's path: a draw, its region (one pixel more than the box reads on each side),
  // rendered; the same bytes as the full decode rendered, for random resized crops (scaled
  // and not), centre crops and resizes, RGB and grey.
  const std::vector<std::pair<std::string, img::Augmentation>> augmentations = {
      {"random resized crop 48x40", img::random_resized_crop(48, 40)},
      {"small random resized crop 16x16", img::random_resized_crop(16, 16, {0.002F, 0.02F})},
      {"random resized crop 96x128", img::random_resized_crop(96, 128)},
      {"centre crop", img::center_crop(30, 50)},
      {"resize", img::resize(40, 40)}};
  std::size_t in_part = 0;
  std::size_t renders = 0;
  std::uint64_t region_bytes = 0;
  std::uint64_t whole_bytes = 0;
  for (const JpegRecipe& recipe : kRegionRecipes) {
    for (const auto& [height, width] : {std::pair{173U, 251U}, std::pair{200U, 120U}}) {
      const img::EncodedImage item = stoke::testing::encoded(
          encode_with_libjpeg(photo_like(height, width, 3), recipe), recipe.name + ".jpg", 0);
      for (const auto& [name, augmentation] : augmentations) {
        for (const std::uint32_t channels : {3U, 1U}) {
          for (const bool reduced : {true, false}) {
            for (std::uint64_t index = 0; index < 12; ++index) {
              const std::string what =
                  recipe.name + " " + std::to_string(height) + "x" + std::to_string(width) + ", " +
                  name + ", " + std::to_string(channels) + " channels" +
                  (reduced ? ", reduced" : "") + ", sample " + std::to_string(index);
              const ImageShape out{augmentation.height(), augmentation.width(), channels};
              Bytes by_region(out.bytes());
              Bytes by_whole(out.bytes());
              const img::PrepareOptions region_options{channels, reduced, true};
              const img::PrepareOptions whole_options{channels, reduced, false};
              const stoke::SampleRng rng(17, 2, index);
              const img::AugmentDraw a =
                  img::render_row_bytes(item, augmentation, region_options, rng, by_region);
              const img::AugmentDraw b =
                  img::render_row_bytes(item, augmentation, whole_options, rng, by_whole);
              EXPECT_EQ(a, b) << what;
              ASSERT_EQ(by_region, by_whole) << what;
              stoke::SampleRng plan_rng = rng;
              const img::DecodePlan plan =
                  img::plan_decode(item, augmentation, region_options, plan_rng);
              in_part += plan.region.is_whole(plan.decoded) ? 0 : 1;
              region_bytes += std::uint64_t{plan.region.height} * plan.region.width * channels;
              whole_bytes += plan.decoded.bytes();
              ++renders;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(in_part, renders / 2);
  std::printf("region decode: %zu of %zu renders decoded in part, %.3f of the decoded bytes\n",
              in_part, renders,
              static_cast<double>(region_bytes) / static_cast<double>(whole_bytes));
}

TEST(JpegRegionDecode, PreparesTheRegionItRenders) {
  const img::EncodedImage item = stoke::testing::encoded(
      encode_with_libjpeg(photo_like(173, 251, 1), kRegionRecipes[2]), "a.jpg", 0);
  const img::Augmentation crop = img::center_crop(20, 30);
  stoke::SampleRng rng(1, 0, 0);
  Bytes scratch;
  const img::PreparedImage prepared = img::prepare_image(item, crop, {}, rng, scratch);
  // The centre 20x30 box at (76.5, 110.5) reads rows 76 to 96 and columns 110 to 140; one
  // column more on each side; the left widened to a whole iMCU (16 columns at 4:2:0).
  EXPECT_EQ(prepared.image.whole, (ImageShape{173, 251, 3}));
  EXPECT_EQ(prepared.image.top, 76U);
  EXPECT_EQ(prepared.image.left, 96U);
  EXPECT_EQ(prepared.image.pixels.shape, (ImageShape{21, 141 - 96 + 1, 3}));
  // Without the region option, the whole image.
  stoke::SampleRng again(1, 0, 0);
  const img::PreparedImage whole =
      img::prepare_image(item, crop, {.region_decode = false}, again, scratch);
  EXPECT_EQ(whole.image.region(), img::PixelRegion::whole({173, 251, 3}));
  // The option's old name turns it off too.
  stoke::SampleRng by_old_name(1, 0, 0);
  const img::PreparedImage old =
      img::prepare_image(item, crop, {.window_decode = false}, by_old_name, scratch);
  EXPECT_EQ(old.image.region(), img::PixelRegion::whole({173, 251, 3}));
  // A PNG has no region: decode_region decodes it whole.
  const img::Image pattern = photo_like(30, 40, 2);
  const Bytes png = img::encode_png(pattern.view());
  const img::EncodedInfo info = img::read_image_info(png, "b.png");
  const img::RegionView view =
      img::decode_region(png, "b.png", info, {30, 40, 3}, {3, 4, 5, 6}, scratch);
  EXPECT_EQ(view.region(), img::PixelRegion::whole({30, 40, 3}));
  EXPECT_TRUE(std::equal(pattern.pixels.begin(), pattern.pixels.end(), view.pixels.pixels.begin()));
  // Rendering from a region that misses pixels the box reads is refused.
  Bytes out(10 * 10 * 3);
  const img::AugmentDraw draw{{0.0F, 0.0F, 20.0F, 20.0F}};
  EXPECT_THAT(
      message_of<stoke::UsageError>([&] { img::render(prepared.image, draw, {10, 10, 3}, out); }),
      HasSubstr("does not hold rows"));
  EXPECT_THAT(message_of<stoke::UsageError>([&] {
                (void)img::decode_region(png, "c.png", info, {30, 40, 3}, {25, 0, 6, 6}, scratch);
              }),
              AllOf(HasSubstr("'c.png'"), HasSubstr("not inside")));
}

TEST(JpegRegionDecode, RefusesCorruptAndTruncatedFilesNamingThem) {
  for (const JpegRecipe& recipe : {kRegionRecipes[2], kRegionRecipes[5], kRegionRecipes[6]}) {
    const Bytes whole = encode_with_libjpeg(photo_like(120, 160, 5), recipe);
    const img::PixelRegion top_left{0, 0, 20, 30};
    const img::PixelRegion bottom{100, 60, 20, 40};
    for (const std::size_t cut :
         {std::size_t{3}, std::size_t{30}, std::size_t{400}, whole.size() / 3, whole.size() / 2,
          whole.size() - 20, whole.size() - 2, whole.size() - 1}) {
      const Bytes cut_bytes(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(cut));
      for (const img::PixelRegion& region : {top_left, bottom}) {
        const std::string source = recipe.name + " cut at " + std::to_string(cut);
        Bytes scratch;
        const std::string message = message_of<stoke::InputError>(
            [&] { (void)img::decode_jpeg_region(cut_bytes, source, {1, 1}, 3, region, scratch); });
        EXPECT_THAT(message,
                    AllOf(HasSubstr("JPEG '" + source + "'"),
                          testing::AnyOf(HasSubstr("TurboJPEG"), HasSubstr("libjpeg-turbo"))))
            << "region at row " << region.top;
        if (cut > whole.size() / 4) {
          EXPECT_THAT(message, HasSubstr("Premature end of JPEG file")) << source;
        }
      }
    }
    // A restart marker out of place early in the scan: refused even for a region below it,
    // whose skipped rows are entropy decoded.
    Bytes corrupt = whole;
    std::size_t sos = 2;
    while (sos + 1 < corrupt.size() && !(corrupt[sos] == 0xff && corrupt[sos + 1] == 0xda)) ++sos;
    const std::size_t at = sos + 40;
    ASSERT_LT(at + 1, corrupt.size());
    corrupt[at] = 0xff;
    corrupt[at + 1] = 0xd5;
    Bytes scratch;
    EXPECT_THAT(message_of<stoke::InputError>([&] {
                  (void)img::decode_jpeg_region(corrupt, "rst.jpg", {1, 1}, 3, bottom, scratch);
                }),
                AllOf(HasSubstr("JPEG 'rst.jpg'"), HasSubstr("libjpeg-turbo"),
                      HasSubstr("Corrupt JPEG data")))
        << recipe.name;
    // The decoder works on after a refusal.
    Bytes out;
    const img::RegionView view = img::decode_jpeg_region(whole, "good.jpg", {1, 1}, 3, bottom, out);
    EXPECT_EQ(view.top, 100U);
  }
  // A region outside the image is the caller's mistake.
  const Bytes jpeg = encode_with_libjpeg(photo_like(40, 40, 1), kRegionRecipes[0]);
  Bytes scratch;
  EXPECT_THAT(message_of<stoke::UsageError>([&] {
                (void)img::decode_jpeg_region(jpeg, "x.jpg", {1, 2}, 3, {0, 0, 21, 5}, scratch);
              }),
              AllOf(HasSubstr("'x.jpg'"), HasSubstr("not inside")));
}

}  // namespace
