// Writes the seed corpora of fuzz_jpeg and fuzz_png: fuzz_image_seeds <dir> fills <dir>/jpeg/
// with small valid JPEGs (TurboJPEG's tjCompress2: 4:2:0, 4:2:2, 4:4:4, grey, progressive) and
// <dir>/png/ with small valid PNGs (libpng: grey of 1 and 8 bits, grey+alpha, RGB, RGBA,
// 16-bit, palette with transparency, Adam7-interlaced).
#include <png.h>
#include <turbojpeg.h>

#include <csetjmp>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

namespace {

using Bytes = std::vector<std::uint8_t>;

void write(const std::filesystem::path& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    std::cerr << "fuzz_image_seeds: cannot write " << path << "\n";
    std::exit(1);
  }
}

/// `count` bytes of a gradient with some texture.
Bytes pattern(std::size_t count, unsigned seed) {
  Bytes out(count);
  for (std::size_t i = 0; i < count; ++i) {
    out[i] = static_cast<std::uint8_t>((i * 7 + (i / 13) * seed + (i % 5) * 31) & 0xff);
  }
  return out;
}

/// A JPEG of `width` x `height` pixels (`channels` 1 or 3) compressed by TurboJPEG.
Bytes jpeg(int width, int height, int channels, int subsampling, int quality, int flags = 0) {
  tjhandle handle = tjInitCompress();
  if (handle == nullptr) std::abort();
  const Bytes pixels = pattern(static_cast<std::size_t>(width * height * channels), 3);
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  if (tjCompress2(handle, pixels.data(), width, width * channels, height,
                  channels == 1 ? TJPF_GRAY : TJPF_RGB, &buffer, &size, subsampling, quality,
                  flags) != 0) {
    std::cerr << "fuzz_image_seeds: tjCompress2: " << tjGetErrorStr2(handle) << "\n";
    std::exit(1);
  }
  Bytes out(buffer, buffer + size);
  tjFree(buffer);
  tjDestroy(handle);
  return out;
}

/// What a PNG is written from.
struct PngSpec {
  std::uint32_t width = 0;
  std::uint32_t height = 0;
  int color_type = PNG_COLOR_TYPE_RGB;
  int bit_depth = 8;
  bool interlaced = false;
  std::vector<png_color> palette{};  ///< for PNG_COLOR_TYPE_PALETTE
  Bytes transparency{};              ///< a palette's tRNS
};

void png_write_to(png_structp png, png_bytep data, std::size_t length) {
  auto* out = static_cast<Bytes*>(png_get_io_ptr(png));
  out->insert(out->end(), data, data + length);
}

void png_flush(png_structp /*png*/) {}

/// Writes the PNG of `spec` and `rows` into `out`; false when libpng reports an error.
bool write_png(const PngSpec& spec, std::vector<png_bytep>& rows, Bytes& out) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png != nullptr ? png_create_info_struct(png) : nullptr;
  if (info == nullptr) std::abort();
  if (setjmp(png_jmpbuf(png)) != 0) {
    png_destroy_write_struct(&png, &info);
    return false;
  }
  png_set_write_fn(png, &out, png_write_to, png_flush);
  png_set_IHDR(png, info, spec.width, spec.height, spec.bit_depth, spec.color_type,
               spec.interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  if (!spec.palette.empty()) {
    png_set_PLTE(png, info, spec.palette.data(), static_cast<int>(spec.palette.size()));
  }
  if (!spec.transparency.empty()) {
    png_set_tRNS(png, info, spec.transparency.data(), static_cast<int>(spec.transparency.size()),
                 nullptr);
  }
  png_write_info(png, info);
  png_write_image(png, rows.data());
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return true;
}

/// A PNG of `spec` whose samples follow `pattern`.
Bytes png(const PngSpec& spec) {
  int channels = 1;
  if (spec.color_type == PNG_COLOR_TYPE_GRAY_ALPHA) channels = 2;
  if (spec.color_type == PNG_COLOR_TYPE_RGB) channels = 3;
  if (spec.color_type == PNG_COLOR_TYPE_RGB_ALPHA) channels = 4;
  const std::size_t row_bytes =
      (std::size_t{spec.width} * static_cast<std::size_t>(channels * spec.bit_depth) + 7) / 8;
  Bytes samples = pattern(row_bytes * spec.height, 5);
  if (spec.color_type == PNG_COLOR_TYPE_PALETTE) {
    // Keep the indices within the palette.
    const int per_byte = 8 / spec.bit_depth;
    for (std::uint8_t& byte : samples) {
      std::uint8_t packed = 0;
      for (int i = 0; i < per_byte; ++i) {
        const auto index = static_cast<unsigned>((byte + i) % spec.palette.size());
        packed = static_cast<std::uint8_t>((packed << spec.bit_depth) | index);
      }
      byte = packed;
    }
  }
  std::vector<png_bytep> rows(spec.height);
  for (std::size_t y = 0; y < rows.size(); ++y) rows[y] = samples.data() + y * row_bytes;
  Bytes out;
  if (!write_png(spec, rows, out)) {
    std::cerr << "fuzz_image_seeds: libpng could not write a PNG\n";
    std::exit(1);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: fuzz_image_seeds <dir>\n";
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir / "jpeg");
  std::filesystem::create_directories(dir / "png");

  write(dir / "jpeg" / "rgb420.jpg", jpeg(16, 16, 3, TJSAMP_420, 80));
  write(dir / "jpeg" / "rgb422.jpg", jpeg(33, 17, 3, TJSAMP_422, 90));
  write(dir / "jpeg" / "rgb444.jpg", jpeg(8, 24, 3, TJSAMP_444, 95));
  write(dir / "jpeg" / "grey.jpg", jpeg(20, 12, 1, TJSAMP_GRAY, 85));
  write(dir / "jpeg" / "progressive.jpg", jpeg(24, 16, 3, TJSAMP_420, 75, TJFLAG_PROGRESSIVE));

  std::vector<png_color> palette;
  for (int i = 0; i < 6; ++i) {
    palette.push_back({static_cast<png_byte>(i * 40), static_cast<png_byte>(255 - i * 30),
                       static_cast<png_byte>(i * i * 7)});
  }
  write(dir / "png" / "rgb.png", png({.width = 9, .height = 7}));
  write(dir / "png" / "grey.png",
        png({.width = 11, .height = 5, .color_type = PNG_COLOR_TYPE_GRAY}));
  write(dir / "png" / "grey1bit.png",
        png({.width = 13, .height = 3, .color_type = PNG_COLOR_TYPE_GRAY, .bit_depth = 1}));
  write(dir / "png" / "grey_alpha.png",
        png({.width = 6, .height = 6, .color_type = PNG_COLOR_TYPE_GRAY_ALPHA}));
  write(dir / "png" / "rgba.png",
        png({.width = 5, .height = 8, .color_type = PNG_COLOR_TYPE_RGB_ALPHA}));
  write(dir / "png" / "rgb16.png", png({.width = 4, .height = 4, .bit_depth = 16}));
  write(dir / "png" / "palette.png", png({.width = 10,
                                          .height = 4,
                                          .color_type = PNG_COLOR_TYPE_PALETTE,
                                          .bit_depth = 4,
                                          .palette = palette,
                                          .transparency = {0, 128}}));
  write(dir / "png" / "interlaced.png", png({.width = 11, .height = 13, .interlaced = true}));
  return 0;
}
