// Images as users store them: writes Fashion-MNIST as 64x64 RGB JPEGs (an ImageFolder and
// WebDataset tar shards), then trains an MLP on several CPU devices from the tar shards with
// random resized crops and flips keyed by each sample, evaluates on the ImageFolder, and
// prints the decode and augment throughput of the loader and the bad samples it replaced.
// With --workload DIR it trains instead on the realistic workload scripts/image-workload
// writes (photographs of ImageNet's size, RGB, 224x224 crops normalised with ImageNet's mean
// and deviation) and says which share of a row's time goes to decoding.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include <stoke/images/image_batcher.hpp>
#include <stoke/images/image_folder.hpp>
#include <stoke/images/prepared_image.hpp>
#include <stoke/images/tar_shards.hpp>
#include <stoke/images/tar_writer.hpp>
#include <stoke/learner.hpp>
#include <stoke/stoke.hpp>

#include "image_dataset.hpp"

namespace {

/// The command-line settings.
struct Flags {
  std::filesystem::path data = "/usr/share/datasets/fashion-mnist";  ///< the IDX files
  std::filesystem::path dir = "images-data";  ///< where the JPEGs are written
  std::size_t train = 12000;                  ///< training images
  std::size_t test = 2000;                    ///< test images
  std::uint32_t crop = 56;                    ///< side of the crops the model sees
  std::size_t devices = 2;                    ///< CPU devices
  std::size_t workers = 1;                    ///< loader threads per device
  std::size_t epochs = 3;                     ///< epochs to train
  std::size_t batch_size = 64;                ///< samples per batch per device
  std::size_t corrupt = 0;                    ///< truncated JPEGs added to the training shards
  std::size_t max_bad = 0;                    ///< bad samples an epoch may replace
  std::uint64_t seed = 7;                     ///< shuffle, augmentation and weights
  std::filesystem::path workload;  ///< the realistic workload's folder (scripts/image-workload)
  std::size_t hidden = 256;        ///< units of the MLP's hidden layer
  bool whole_decode = false;       ///< decode JPEGs whole, not only the crop's region
};

/// Where a row's time goes, on one thread over the first `count` samples of `source`: reading
/// the header and drawing, decoding (only the region, unless the batcher says otherwise), and
/// rendering (crop, resize, flip, normalise); and the bytes decoded against the whole images'.
template <class Source>
void print_decode_share(const Source& source, const stoke::images::ImageBatcher& batcher,
                        std::size_t count) {
  namespace images = stoke::images;
  using Clock = std::chrono::steady_clock;
  std::vector<std::uint8_t> scratch;
  std::vector<float> row(batcher.output_shape().bytes());
  double plan_s = 0;
  double decode_s = 0;
  double render_s = 0;
  std::uint64_t region_bytes = 0;
  std::uint64_t whole_bytes = 0;
  std::uint64_t scaled_bytes = 0;
  count = std::min(count, source.size());
  for (std::size_t i = 0; i < count; ++i) {
    const images::EncodedImage item = source.get(i);
    stoke::SampleRng rng(1, 0, i);
    const auto t0 = Clock::now();
    const images::DecodePlan plan =
        images::plan_decode(item, batcher.augmentation, batcher.decoding, rng);
    const auto t1 = Clock::now();
    const images::RegionView decoded = images::decode_planned(item, plan, scratch);
    const auto t2 = Clock::now();
    images::render_normalized(decoded, plan.draw, batcher.output_shape(), batcher.normalization,
                              row);
    const auto t3 = Clock::now();
    plan_s += std::chrono::duration<double>(t1 - t0).count();
    decode_s += std::chrono::duration<double>(t2 - t1).count();
    render_s += std::chrono::duration<double>(t3 - t2).count();
    region_bytes += decoded.pixels.shape.bytes();
    whole_bytes += std::uint64_t{plan.info.height} * plan.info.width * plan.decoded.channels;
    scaled_bytes += plan.decoded.bytes();
  }
  const double total = plan_s + decode_s + render_s;
  std::printf(
      "one thread, %zu images: %.0f images/s; decoding %.1f%% of a row's time, header and draw "
      "%.1f%%, crop + resize + flip + normalise %.1f%%\n"
      "bytes decoded an image: %.0f; whole at the same DCT scale %.0f (%.3f), whole at full "
      "size %.0f (%.3f)\n",
      count, double(count) / total, 100 * decode_s / total, 100 * plan_s / total,
      100 * render_s / total, double(region_bytes) / double(count),
      double(scaled_bytes) / double(count), double(region_bytes) / double(scaled_bytes),
      double(whole_bytes) / double(count), double(region_bytes) / double(whole_bytes));
}

/// A tar shard of `count` training images cut short (a JPEG that ends early), to show the
/// bad-sample policy.
std::filesystem::path write_corrupt_shard(const stoke::images::TarShards& train, std::size_t count,
                                          const std::filesystem::path& dir) {
  const auto path = dir / "shard-corrupt.tar";
  stoke::images::TarWriter tar(path);
  for (std::size_t i = 0; i < count; ++i) {
    const stoke::images::EncodedImage image = train.get(i);
    const std::string key = "corrupt-" + std::to_string(i);
    const std::string label = std::to_string(image.label);
    tar.add(key + ".jpg", image.bytes.first(image.bytes.size() / 2));
    tar.add(key + ".cls",
            std::span(reinterpret_cast<const std::uint8_t*>(label.data()), label.size()));
  }
  tar.finish();
  return path;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"stoke: train on JPEGs with random crops and flips on several CPU devices"};
  Flags flags;
  app.add_option("--data", flags.data, "folder with the Fashion-MNIST IDX files")
      ->capture_default_str();
  app.add_option("--dir", flags.dir, "where the JPEG data set is written")->capture_default_str();
  app.add_option("--train", flags.train, "training images")->capture_default_str();
  app.add_option("--test", flags.test, "test images")->capture_default_str();
  app.add_option("--crop", flags.crop, "side of the random crops")->capture_default_str();
  app.add_option("--devices", flags.devices, "CPU devices")->capture_default_str();
  app.add_option("--workers", flags.workers, "loader threads per device")->capture_default_str();
  app.add_option("--epochs", flags.epochs, "epochs to train")->capture_default_str();
  app.add_option("--batch-size", flags.batch_size, "samples per batch per device")
      ->capture_default_str();
  app.add_option("--corrupt", flags.corrupt, "truncated JPEGs added to the training shards")
      ->capture_default_str();
  app.add_option("--max-bad", flags.max_bad, "bad samples an epoch may replace")
      ->capture_default_str();
  app.add_option("--seed", flags.seed, "seed of shuffle, augmentation and weights")
      ->capture_default_str();
  app.add_option("--workload", flags.workload,
                 "train on the realistic workload in this folder (scripts/image-workload): "
                 "shards/ to train, folder/ to evaluate, RGB, --crop 224 by default");
  app.add_option("--hidden", flags.hidden, "units of the MLP's hidden layer")
      ->capture_default_str();
  app.add_flag("--whole-decode", flags.whole_decode,
               "decode each JPEG whole, not only the region its crop reads");
  CLI11_PARSE(app, argc, argv);

  namespace images = stoke::images;
  try {
    const bool realistic = !flags.workload.empty();
    std::vector<std::filesystem::path> shards;
    std::filesystem::path test_folder;
    const auto started = std::chrono::steady_clock::now();
    if (realistic) {
      shards = stoke::files_matching(flags.workload / "shards", "shard-*.tar");
      test_folder = flags.workload / "folder";
      if (app.count("--crop") == 0) flags.crop = 224;
    } else {
      const auto idx = [&](const char* name) {
        const auto plain = flags.data / name;
        return std::filesystem::exists(plain) ? plain : flags.data / (std::string(name) + ".gz");
      };
      const stoke::IdxClassificationDataset train_source(idx("train-images-idx3-ubyte"),
                                                         idx("train-labels-idx1-ubyte"));
      const stoke::IdxClassificationDataset test_source(idx("t10k-images-idx3-ubyte"),
                                                        idx("t10k-labels-idx1-ubyte"));
      const auto train_files =
          image_example::write_dataset(train_source, {.count = flags.train}, flags.dir / "train");
      const auto test_files =
          image_example::write_dataset(test_source, {.count = flags.test}, flags.dir / "test");
      shards = train_files.shards;
      test_folder = test_files.folder;
    }
    std::printf("data set: %s, %zu tar shards to train, the image folder %s to evaluate (%.1f s)\n",
                realistic ? "the realistic workload" : "Fashion-MNIST as JPEGs", shards.size(),
                test_folder.string().c_str(),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    // Grey Fashion-MNIST, or RGB photographs normalised as ImageNet's.
    const std::uint32_t channels = realistic ? 3 : 1;
    const images::Normalization normalization =
        realistic ? images::Normalization({0.485F, 0.456F, 0.406F}, {0.229F, 0.224F, 0.225F})
                  : images::Normalization(0.2860F, 0.3530F);
    const images::PrepareOptions decoding{.channels = channels,
                                          .region_decode = !flags.whole_decode};
    const std::array<float, 2> scale =
        realistic ? std::array{0.08F, 1.0F} : std::array{0.35F, 1.0F};

    // --8<-- [start:pipeline]
    if (flags.corrupt > 0) {
      shards.push_back(write_corrupt_shard(images::TarShards(shards), flags.corrupt, flags.dir));
    }
    const images::TarShards train(shards);
    const images::ImageFolder test(test_folder);
    const std::uint32_t crop = flags.crop;
    images::ImageBatcher augmenting{
        .augmentation = images::random_resized_crop(crop, crop, scale) | images::horizontal_flip(),
        .normalization = normalization,
        .decoding = decoding,
        .bad_samples = {.max_per_epoch = flags.max_bad}};
    const images::ImageBatcher resizing{.augmentation = images::resize(crop, crop),
                                        .normalization = normalization,
                                        .decoding = decoding};
    using Builder = stoke::DataLoaderBuilder<stoke::cpu::Backend, images::ImageBatcher>;
    auto train_loader = Builder(augmenting)
                            .batch_size(flags.batch_size)
                            .shuffle_shards(flags.seed)
                            .num_workers(flags.workers)
                            .drop_last()
                            .build(train);
    auto test_loader =
        Builder(resizing).batch_size(250).num_workers(flags.workers).pad().build(test);
    // --8<-- [end:pipeline]

    // Decode and augment throughput: one epoch of the loader, no training.
    {
      images::ImageBatcher timing = augmenting;
      timing.log = std::make_shared<images::BadSampleLog>();  // not the training run's log
      auto loader = Builder(timing)
                        .batch_size(256)
                        .shuffle_shards(flags.seed)
                        .num_workers(flags.devices * flags.workers)
                        .build(train);
      const auto begin = std::chrono::steady_clock::now();
      std::size_t seen = 0;
      for (const auto& batch : loader.iter()) seen += batch.size();
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
      std::printf("decode + crop + flip + normalise: %.0f images/s on %zu worker threads\n",
                  double(seen) / seconds, flags.devices * flags.workers);
      print_decode_share(train, augmenting, 500);
    }

    const std::size_t classes = realistic ? test.classes().size() : 10;
    // --8<-- [start:learner]
    const std::size_t steps = train.size() / (flags.batch_size * flags.devices);
    stoke::Learner<stoke::cpu::Backend, stoke::Mlp, stoke::Adam, stoke::CosineLr> learner(
        stoke::Mlp({std::size_t{crop} * crop * channels, flags.hidden, classes}, flags.seed),
        stoke::Adam{},
        stoke::CosineLr{.base = 1e-3F,
                        .minimum = 5e-5F,
                        .total_steps = flags.epochs * steps,
                        .warmup_steps = steps / 2},
        stoke::cpu::Backend::devices(flags.devices),
        stoke::LearnerOptions{.epochs = flags.epochs,
                              .live_progress = stoke::stdout_is_terminal()});
    const stoke::FitResult result = learner.fit(train_loader, test_loader);
    // --8<-- [end:learner]

    for (const auto& epoch : result.epochs) {
      std::printf("epoch %zu: %.0f samples/s, test accuracy %.4f, bad samples replaced %zu\n",
                  epoch.epoch, epoch.samples_per_second, epoch.valid_accuracy,
                  epoch.replaced_samples);
    }
    for (const auto& bad : augmenting.log->samples()) {
      if (bad.epoch != 0) continue;
      std::printf("replaced in epoch 0: index %zu (%s) by index %zu: %s\n", bad.index,
                  bad.source.c_str(), bad.replacement, bad.reason.c_str());
    }
    std::printf("test accuracy: %.4f\n",
                result.epochs.empty() ? 0.0 : result.epochs.back().valid_accuracy);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "images: %s\n", error.what());
    return 1;
  }
  return 0;
}
