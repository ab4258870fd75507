#pragma once
/// @file
/// A small data set of JPEGs as users store them, made from Fashion-MNIST: every image upscaled
/// to `size` x `size`, tinted with a colour of its own (so the files are real RGB JPEGs), and
/// written twice, as an ImageFolder (`folder/class-N/index.jpg`) and as WebDataset tar shards
/// (`shards/shard-NNNNNN.tar`, members `index.jpg` and `index.cls`). The images example and
/// the image benchmark read the same files.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <stoke/core/rng.hpp>
#include <stoke/images/augmentation.hpp>
#include <stoke/images/encode.hpp>
#include <stoke/images/render.hpp>
#include <stoke/images/tar_writer.hpp>
#include <stoke/stoke.hpp>

namespace image_example {

/// Where a written data set is.
struct DatasetFiles {
  std::filesystem::path folder;               ///< the ImageFolder root
  std::vector<std::filesystem::path> shards;  ///< the tar shards, in order
};

/// How a data set is made.
struct DatasetSpec {
  std::size_t count = 0;                 ///< images (the first `count` of the source)
  std::uint32_t size = 64;               ///< pixels a side
  std::size_t samples_per_shard = 1000;  ///< images a tar shard
  int quality = 90;                      ///< JPEG quality
};

/// Image `index` of `source` upscaled to `size` x `size` and tinted: RGB, HWC.
inline stoke::images::Image tinted_image(const stoke::LabeledImage& sample, std::size_t index,
                                         std::uint32_t size) {
  const std::uint32_t side = 28;  // Fashion-MNIST
  const stoke::images::ImageView grey{sample.pixels, {side, side, 1}};
  const stoke::images::ImageShape upscaled{size, size, 1};
  std::vector<std::uint8_t> big(upscaled.bytes());
  const stoke::images::AugmentDraw whole{.box = {0.0F, 0.0F, float(side), float(side)}};
  stoke::images::render(grey, whole, upscaled, big);
  // A colour per image (not per class: the class must be learnt from the shapes).
  stoke::SampleRng rng(0x7157, 0, index);
  const std::array<float, 3> tint{0.6F + 0.4F * rng.uniform(), 0.6F + 0.4F * rng.uniform(),
                                  0.6F + 0.4F * rng.uniform()};
  stoke::images::Image out{std::vector<std::uint8_t>(std::size_t{size} * size * 3),
                           {size, size, 3}};
  for (std::size_t p = 0; p < big.size(); ++p) {
    for (std::size_t c = 0; c < 3; ++c) {
      out.pixels[p * 3 + c] = static_cast<std::uint8_t>(static_cast<float>(big[p]) * tint[c]);
    }
  }
  return out;
}

/// The file that says a data set under `root` is complete, and how it was made.
inline std::string dataset_stamp(const DatasetSpec& spec) {
  return std::to_string(spec.count) + " " + std::to_string(spec.size) + " " +
         std::to_string(spec.samples_per_shard) + " " + std::to_string(spec.quality) + "\n";
}

/// The first `spec.count` images of `source` as JPEGs under `root` (kept if already there with
/// the same spec).
inline DatasetFiles write_dataset(const stoke::IdxClassificationDataset& source,
                                  const DatasetSpec& spec, const std::filesystem::path& root) {
  namespace fs = std::filesystem;
  DatasetFiles files{root / "folder", {}};
  const std::size_t count = std::min(spec.count, source.size());
  const std::size_t shards = (count + spec.samples_per_shard - 1) / spec.samples_per_shard;
  for (std::size_t s = 0; s < shards; ++s) {
    std::string name = std::to_string(s);
    name = "shard-" + std::string(6 - std::min<std::size_t>(6, name.size()), '0') + name + ".tar";
    files.shards.push_back(root / "shards" / name);
  }
  const fs::path stamp = root / "complete";
  {
    std::ifstream in(stamp);
    const std::string wanted = dataset_stamp(spec);
    std::string have(wanted.size(), '\0');
    if (in.read(have.data(), static_cast<std::streamsize>(have.size())) && have == wanted) {
      return files;
    }
  }
  fs::remove_all(root);
  fs::create_directories(root / "shards");
  for (std::size_t c = 0; c < 10; ++c)
    fs::create_directories(files.folder / ("class-" + std::to_string(c)));
  for (std::size_t s = 0; s < shards; ++s) {
    stoke::images::TarWriter tar(files.shards[s]);
    const std::size_t end = std::min(count, (s + 1) * spec.samples_per_shard);
    for (std::size_t i = s * spec.samples_per_shard; i < end; ++i) {
      const stoke::LabeledImage sample = source.get(i);
      const auto jpeg = stoke::images::encode_jpeg(tinted_image(sample, i, spec.size).view(),
                                                   {.quality = spec.quality});
      const std::string key = std::to_string(i);
      const std::string label = std::to_string(sample.label);
      tar.add(key + ".jpg", jpeg);
      tar.add(key + ".cls",
              std::span(reinterpret_cast<const std::uint8_t*>(label.data()), label.size()));
      std::ofstream file(files.folder / ("class-" + label) / (key + ".jpg"), std::ios::binary);
      file.write(reinterpret_cast<const char*>(jpeg.data()),
                 static_cast<std::streamsize>(jpeg.size()));
      if (!file)
        throw stoke::Error("images example: cannot write " + (files.folder / key).string());
    }
    tar.finish();
  }
  std::ofstream(stamp) << dataset_stamp(spec);
  return files;
}

}  // namespace image_example
