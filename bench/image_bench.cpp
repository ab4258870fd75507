// JPEG loading measured side by side: stoke's image loader (an ImageFolder and WebDataset tar
// shards, random resized crop to 56, flip, per-channel normalisation, batch 256) against the
// bound, libjpeg-turbo decoding the same JPEGs, already in memory, with the same augmentation
// in a plain C++ loop on the same number of threads (no loader, no file reads). Prints the
// figures and `ratio <name>: <x>` lines; `--json FILE` also writes one JSON line per loader
// for scripts/image-bench.
//
// With `--workload DIR` (the realistic workload of scripts/image-workload: photographs of
// ImageNet's size) it reads DIR/folder and DIR/shards instead, crops to 224 (--crop), and adds
// the bound that decodes each JPEG whole at the DCT scale the crop allows (stoke's code without
// the loader, as stoke decoded before its region decode) and stoke decoding whole, and reports
// the bytes decoded per image: the region against the whole image.
#include <sys/resource.h>
#include <turbojpeg.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include <stoke/images/image_batcher.hpp>
#include <stoke/images/image_folder.hpp>
#include <stoke/images/prepared_image.hpp>
#include <stoke/images/tar_shards.hpp>
#include <stoke/stoke.hpp>

#include "image_dataset.hpp"

namespace {

using Clock = std::chrono::steady_clock;
namespace images = stoke::images;

struct Flags {
  std::filesystem::path data = "/usr/share/datasets/fashion-mnist";
  std::filesystem::path dir = "build/image-bench";
  std::size_t count = 20000;
  std::size_t batch = 256;
  std::uint32_t crop = 56;
  std::size_t threads = 2;
  std::size_t repetitions = 3;
  std::uint64_t seed = 11;
  std::filesystem::path json;
  std::filesystem::path workload;  ///< the realistic workload (scripts/image-workload), or none
};

/// One measured pass: images per second, the time to the first batch, and the CPU time (user
/// and system, all threads) spent per image.
struct Pass {
  double images_per_second = 0;
  double first_batch_seconds = 0;
  double cpu_microseconds_per_image = 0;
};

/// CPU seconds this process has used so far, user and system, all threads.
double cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) { return double(t.tv_sec) + 1e-6 * double(t.tv_usec); };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

/// The pipeline both sides run.
struct Workload {
  images::Augmentation augmentation;
  images::Normalization normalization;
};

/// `images` images over `threads` plain threads, timed: thread `t` runs
/// `per_thread(t, render)`, where `render(i, view, draw)` renders image `i`'s draw from its
/// decoded `view` into the thread's batch-sized buffer (as a batcher fills its rows).
template <class PerThread>
Pass timed_threads(std::size_t images, const Workload& work, const Flags& flags,
                   std::size_t threads, PerThread per_thread) {
  const auto start = Clock::now();
  const double cpu_start = cpu_seconds();
  std::vector<std::thread> pool;
  for (std::size_t t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      const images::ImageShape out{flags.crop, flags.crop, 3};
      std::vector<float> batch(flags.batch * out.bytes());
      const auto render = [&](std::size_t i, const images::RegionView& view,
                              const images::AugmentDraw& draw) {
        const std::size_t row = (i / threads) % flags.batch;
        images::render_normalized(view, draw, out, work.normalization,
                                  std::span(batch).subspan(row * out.bytes(), out.bytes()));
      };
      per_thread(t, render);
    });
  }
  for (auto& thread : pool) thread.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return {double(images) / seconds, 0.0, 1e6 * (cpu_seconds() - cpu_start) / double(images)};
}

/// The bound: `threads` plain threads, each decoding its share of the JPEGs (already in
/// memory) with TurboJPEG at full size into a reused buffer, drawing the same augmentation
/// from the same per-sample stream and rendering it into a batch-sized buffer.
Pass plain_loop(const std::vector<std::vector<std::uint8_t>>& jpegs, const Workload& work,
                const Flags& flags, std::size_t threads, std::size_t epoch) {
  return timed_threads(jpegs.size(), work, flags, threads, [&](std::size_t t, const auto& render) {
    const std::unique_ptr<void, int (*)(tjhandle)> handle(tjInitDecompress(), tjDestroy);
    std::vector<std::uint8_t> decoded;
    for (std::size_t i = t; i < jpegs.size(); i += threads) {
      const std::vector<std::uint8_t>& jpeg = jpegs[i];
      int width = 0, height = 0, subsampling = 0, colorspace = 0;
      if (tjDecompressHeader3(handle.get(), jpeg.data(), jpeg.size(), &width, &height, &subsampling,
                              &colorspace) != 0 ||
          (decoded.resize(std::size_t(width) * height * 3),
           tjDecompress2(handle.get(), jpeg.data(), jpeg.size(), decoded.data(), width, 0, height,
                         TJPF_RGB, TJFLAG_ACCURATEDCT) != 0)) {
        std::fprintf(stderr, "image_bench: cannot decode JPEG %zu\n", i);
        std::exit(1);
      }
      stoke::SampleRng rng(flags.seed, epoch, i);
      const images::AugmentDraw draw =
          work.augmentation.draw(std::uint32_t(height), std::uint32_t(width), rng);
      render(i, images::ImageView{decoded, {std::uint32_t(height), std::uint32_t(width), 3}}, draw);
    }
  });
}

/// The bound of decoding whole: `threads` plain threads, each with stoke's own row code but no
/// loader: the header read and the crop drawn (`plan_decode`), the JPEG decoded whole at the
/// DCT scale that keeps the crop at least the output size (TurboJPEG), rendered.
Pass whole_scaled_loop(const std::vector<std::vector<std::uint8_t>>& jpegs, const Workload& work,
                       const Flags& flags, std::size_t threads, std::size_t epoch) {
  return timed_threads(jpegs.size(), work, flags, threads, [&](std::size_t t, const auto& render) {
    std::vector<std::uint8_t> decoded;
    const images::PrepareOptions options{.channels = 3, .region_decode = false};
    for (std::size_t i = t; i < jpegs.size(); i += threads) {
      const images::EncodedImage item{jpegs[i], nullptr, 0, "jpeg " + std::to_string(i)};
      stoke::SampleRng rng(flags.seed, epoch, i);
      const images::DecodePlan plan = images::plan_decode(item, work.augmentation, options, rng);
      render(i, images::decode_planned(item, plan, decoded), plan.draw);
    }
  });
}

/// Bytes decoded per image over one epoch's draws: the region (as decoded, its left edge on an
/// iMCU), the whole image at the same DCT scale, the whole image at full size.
struct DecodedBytes {
  double region = 0;
  double whole_scaled = 0;
  double whole = 0;
};

DecodedBytes decoded_bytes(const std::vector<std::vector<std::uint8_t>>& jpegs,
                           const Workload& work, const Flags& flags, bool reduced) {
  DecodedBytes bytes;
  std::vector<std::uint8_t> scratch;
  const images::PrepareOptions options{.channels = 3, .reduced_decode = reduced};
  for (std::size_t i = 0; i < jpegs.size(); ++i) {
    const images::EncodedImage item{jpegs[i], nullptr, 0, "jpeg " + std::to_string(i)};
    stoke::SampleRng rng(flags.seed, 1, i);
    const images::DecodePlan plan = images::plan_decode(item, work.augmentation, options, rng);
    // What is decoded: the region widened to whole iMCU columns on the left.
    bytes.region += double(images::decode_planned(item, plan, scratch).pixels.shape.bytes());
    bytes.whole_scaled += double(plan.decoded.bytes());
    bytes.whole += double(plan.info.height) * plan.info.width * 3;
  }
  const double count = double(jpegs.size());
  return {bytes.region / count, bytes.whole_scaled / count, bytes.whole / count};
}

/// One epoch of a stoke loader over `dataset` with `flags.threads` workers, from building the
/// loader (its first batch is timed from there) to its last batch.
template <class Dataset>
Pass stoke_loader(const Dataset& dataset, const Workload& work, const Flags& flags,
                  std::size_t epoch, bool shards, bool reduced, bool region = true) {
  const auto start = Clock::now();
  const double cpu_start = cpu_seconds();
  images::ImageBatcher batcher{
      .augmentation = work.augmentation,
      .normalization = work.normalization,
      .decoding = {.channels = 3, .reduced_decode = reduced, .region_decode = region}};
  auto builder = stoke::DataLoaderBuilder<stoke::cpu::Backend, images::ImageBatcher>(batcher)
                     .batch_size(flags.batch)
                     .num_workers(flags.threads);
  if (shards) {
    builder.shuffle_shards(flags.seed);
  } else {
    builder.shuffle(flags.seed);
  }
  auto loader = builder.build(dataset);
  loader.set_epoch(epoch);
  Pass pass;
  std::size_t seen = 0;
  for (const auto& batch : loader.iter()) {
    if (seen == 0) {
      pass.first_batch_seconds = std::chrono::duration<double>(Clock::now() - start).count();
    }
    seen += batch.size();
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  pass.images_per_second = double(seen) / seconds;
  pass.cpu_microseconds_per_image = 1e6 * (cpu_seconds() - cpu_start) / double(seen);
  return pass;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

/// The figures of one loader over the passes.
struct Series {
  std::string name;
  std::vector<double> rates;
  std::vector<double> first;
  std::vector<double> cpu;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"stoke: JPEG loading against a plain libjpeg-turbo loop"};
  Flags flags;
  app.add_option("--data", flags.data, "Fashion-MNIST IDX folder")->capture_default_str();
  app.add_option("--dir", flags.dir, "where the JPEGs are written")->capture_default_str();
  app.add_option("--count", flags.count, "images")->capture_default_str();
  app.add_option("--batch", flags.batch, "batch size")->capture_default_str();
  app.add_option("--threads", flags.threads, "loader threads and bound threads")
      ->capture_default_str();
  app.add_option("--repetitions", flags.repetitions, "passes of each (median)")
      ->capture_default_str();
  app.add_option("--json", flags.json, "also write one JSON line per loader to this file");
  app.add_option("--crop", flags.crop, "side of the crops (default 56, 224 with --workload)");
  app.add_option("--workload", flags.workload,
                 "the realistic workload's folder (scripts/image-workload) instead of "
                 "Fashion-MNIST: DIR/folder and DIR/shards");
  CLI11_PARSE(app, argc, argv);
  const bool realistic = !flags.workload.empty();
  if (realistic && app.count("--crop") == 0) flags.crop = 224;
  try {
    std::filesystem::path folder_root;
    std::vector<std::filesystem::path> shard_files;
    if (realistic) {
      folder_root = flags.workload / "folder";
      shard_files = stoke::files_matching(flags.workload / "shards", "shard-*.tar");
    } else {
      const stoke::IdxClassificationDataset source(flags.data / "train-images-idx3-ubyte.gz",
                                                   flags.data / "train-labels-idx1-ubyte.gz");
      const auto files = image_example::write_dataset(source, {.count = flags.count}, flags.dir);
      folder_root = files.folder;
      shard_files = files.shards;
    }
    const images::ImageFolder folder(folder_root);
    const images::TarShards shards(shard_files);
    std::vector<std::vector<std::uint8_t>> jpegs;
    for (std::size_t i = 0; i < folder.size(); ++i) {
      const images::EncodedImage image = folder.get(i);
      jpegs.emplace_back(image.bytes.begin(), image.bytes.end());
    }
    const Workload work{
        images::random_resized_crop(flags.crop, flags.crop) | images::horizontal_flip(),
        images::Normalization({0.5F, 0.5F, 0.5F}, {0.25F, 0.25F, 0.25F})};

    const std::string threads = std::to_string(flags.threads) + " threads";
    // Each series: its name and one pass of it (epoch r).
    std::vector<std::pair<std::string, std::function<Pass(std::size_t)>>> runs{
        {"bound, 1 thread (JPEGs in memory)",
         [&](std::size_t r) { return plain_loop(jpegs, work, flags, 1, r); }},
        {"bound, " + threads + " (JPEGs in memory)",
         [&](std::size_t r) { return plain_loop(jpegs, work, flags, flags.threads, r); }},
        {"stoke, image folder, " + threads,
         [&](std::size_t r) { return stoke_loader(folder, work, flags, r, false, false); }},
        {"stoke, tar shards, " + threads,
         [&](std::size_t r) { return stoke_loader(shards, work, flags, r, true, false); }},
        {"stoke, tar shards, " + threads + ", reduced-size decode",
         [&](std::size_t r) { return stoke_loader(shards, work, flags, r, true, true); }}};
    if (realistic) {
      runs.emplace_back("bound, " + threads + ", whole at the DCT scale", [&](std::size_t r) {
        return whole_scaled_loop(jpegs, work, flags, flags.threads, r);
      });
      runs.emplace_back(
          "stoke, tar shards, " + threads + ", reduced, whole decode",
          [&](std::size_t r) { return stoke_loader(shards, work, flags, r, true, true, false); });
    }
    std::vector<Series> series;
    for (const auto& run : runs) series.push_back({run.first, {}, {}, {}});
    for (std::size_t r = 0; r < flags.repetitions + 1; ++r) {  // pass 0 warms the page cache
      std::vector<Pass> passes;
      for (const auto& run : runs) passes.push_back(run.second(r));
      if (r == 0) continue;
      for (std::size_t s = 0; s < series.size(); ++s) {
        series[s].rates.push_back(passes[s].images_per_second);
        series[s].first.push_back(passes[s].first_batch_seconds);
        series[s].cpu.push_back(passes[s].cpu_microseconds_per_image);
      }
    }
    const double bound = median(series[1].rates);
    std::printf(
        "%zu JPEGs of %s, random resized crop to %u, flip, normalise, batch %zu; "
        "median of %zu passes\n",
        jpegs.size(),
        realistic ? "the realistic workload (ImageNet-sized photographs)" : "64x64 RGB", flags.crop,
        flags.batch, flags.repetitions);
    std::FILE* json = flags.json.empty() ? nullptr : std::fopen(flags.json.c_str(), "w");
    if (!flags.json.empty() && json == nullptr) {
      throw stoke::Error("image_bench: cannot write " + flags.json.string());
    }
    for (const Series& s : series) {
      const auto [low, high] = std::minmax_element(s.rates.begin(), s.rates.end());
      std::printf("%-52s %6.0f images/s (%.0f to %.0f)  %.2f of the bound  %5.1f us CPU/image",
                  s.name.c_str(), median(s.rates), *low, *high, median(s.rates) / bound,
                  median(s.cpu));
      if (s.name.starts_with("stoke")) std::printf("  first batch %.1f ms", 1e3 * median(s.first));
      std::printf("\n");
      if (json != nullptr) {
        std::fprintf(json,
                     "{\"loader\": \"%s\", \"images_per_second\": %.1f, "
                     "\"first_batch_seconds\": %.5f, \"cpu_microseconds_per_image\": %.2f}\n",
                     s.name.c_str(), median(s.rates), median(s.first), median(s.cpu));
      }
    }
    if (json != nullptr) std::fclose(json);
    std::printf("ratio image_folder_over_bound: %.3f\n", median(series[2].rates) / bound);
    std::printf("ratio image_tar_over_bound: %.3f\n", median(series[3].rates) / bound);
    std::printf("ratio image_tar_cpu_per_image_over_bound: %.3f\n",
                median(series[3].cpu) / median(series[1].cpu));
    std::printf("ratio image_reduced_decode_speedup: %.3f\n",
                median(series[4].rates) / median(series[3].rates));
    if (realistic) {
      const DecodedBytes bytes = decoded_bytes(jpegs, work, flags, true);
      std::printf(
          "bytes decoded per image: region %.0f, whole at the DCT scale %.0f, whole at full size "
          "%.0f\n",
          bytes.region, bytes.whole_scaled, bytes.whole);
      std::printf("ratio image_region_bytes_over_whole_scaled: %.3f\n",
                  bytes.region / bytes.whole_scaled);
      std::printf("ratio image_region_over_bound: %.3f\n", median(series[4].rates) / bound);
      std::printf("ratio image_region_over_whole_scaled_bound: %.3f\n",
                  median(series[4].rates) / median(series[5].rates));
      std::printf("ratio image_region_over_whole_decode: %.3f\n",
                  median(series[4].rates) / median(series[6].rates));
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "image_bench: %s\n", error.what());
    return 1;
  }
  return 0;
}
