// The device-resident learner on two Vulkan devices (lavapipe where no GPU exists): how long a
// step takes, and what share of it each device spends waiting for data, when its batches come
//   (a) without prefetch: made on the training thread (no loader worker) by a batcher that
//       normalises on the host, uploads through a stager and waits for the upload;
//   (b) through prefetch_to_device(depth): the same host batches (no loader worker) uploaded
//       by the prefetcher while the previous steps run;
//   (c) from vulkan::ImageBatcher with one loader worker: uint8 uploaded and normalised on
//       the device by the worker, ahead of the step (the loader's own queue).
// The model is SoftmaxClassifier (784 -> 10) on synthetic images, SGD; every figure is the
// median over --repetitions one-epoch runs, (a), (b) and (c) taking turns so drift hits all.
// It prints per variant the step time and each device's wait share, and
//   ratio device_learner_prefetch_vulkan: step time (a) / step time (b)
//   ratio device_learner_device_batcher_vulkan: step time (a) / step time (c)
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include <stoke/learner.hpp>
#include <stoke/stoke.hpp>
#include <stoke/vulkan.hpp>

namespace {

namespace vk = stoke::vulkan;
constexpr std::size_t kPixels = 28 * 28, kClasses = 10;
using Classifier = stoke::SoftmaxClassifier<vk::Backend, vk::ImageBatch>;

/// `count` synthetic 28x28 images; class c lights the pixels whose index is c mod 10.
struct Images {
  explicit Images(std::size_t count) : pixels(count * kPixels), labels(count) {
    stoke::SampleRng rng(11, 0, 0);
    for (std::size_t i = 0; i < count; ++i) {
      labels[i] = static_cast<std::uint32_t>(rng() % kClasses);
      for (std::size_t p = 0; p < kPixels; ++p) {
        const bool lit = p % kClasses == labels[i];
        pixels[i * kPixels + p] = static_cast<std::uint8_t>((lit ? 150 : 30) + rng() % 100);
      }
    }
  }
  [[nodiscard]] std::size_t size() const noexcept { return labels.size(); }
  [[nodiscard]] stoke::LabeledImage get(std::size_t i) const {
    return {std::span(pixels).subspan(i * kPixels, kPixels), labels[i]};
  }
  std::vector<std::uint8_t> pixels;
  std::vector<std::uint32_t> labels;
};

/// Host batches for a Vulkan device (normalised on the host).
struct HostBatcher {
  stoke::cpu::ImageBatcher inner;
  stoke::cpu::ClassificationBatch batch(std::vector<stoke::LabeledImage> items,
                                        const vk::Device&) const {
    return inner.batch(std::move(items), stoke::cpu::Device{});
  }
};

/// (a): the host batch uploaded on the calling thread, waited for.
struct UploadingBatcher {
  HostBatcher host;
  vk::ImageBatch batch(std::vector<stoke::LabeledImage> items, const vk::Device& device) const {
    thread_local std::unique_ptr<vk::Stager> stager;
    if (!stager || stager->device() != device) stager = vk::Backend::make_stager(device, 2);
    vk::ImageBatch out =
        stoke::UploadClassification{}(*stager, host.batch(std::move(items), device)).value;
    out.ready.wait();
    return out;
  }
};

struct Figures {
  double step_ms = 0.0;
  std::vector<double> wait_share;  // per device
};

/// One epoch of the classifier on `devices` from `train`; step time and wait shares.
template <class Loader>
Figures one_epoch(Loader train, const std::vector<vk::Device>& devices, const Images& valid) {
  auto valid_loader = stoke::DataLoaderBuilder<vk::Backend, vk::ImageBatcher>(vk::ImageBatcher{})
                          .batch_size(256)
                          .pad()
                          .build(valid);
  stoke::Learner<vk::Backend, Classifier, stoke::Sgd, stoke::ConstantLr> learner(
      Classifier(devices[0], kPixels, kClasses, std::uint64_t{7}), stoke::Sgd(0.01f, 0.9f),
      stoke::ConstantLr{0.01f}, devices, {.epochs = 1, .log = nullptr});
  const stoke::FitResult result = learner.fit(std::move(train), std::move(valid_loader));
  const stoke::EpochMetrics& epoch = result.epochs.back();
  Figures out;
  out.step_ms = 1e3 * epoch.seconds / static_cast<double>(result.global_step);
  for (const double wait : epoch.wait_seconds) out.wait_share.push_back(wait / epoch.seconds);
  return out;
}

double median(std::vector<double> values) {
  std::ranges::sort(values);
  return values[values.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"stoke: the device-resident learner's step with and without prefetch (Vulkan)"};
  std::size_t images = 30000, batch_size = 128, depth = 3, repetitions = 5;
  app.add_option("--images", images, "synthetic images an epoch")->capture_default_str();
  app.add_option("--batch-size", batch_size, "per device")->capture_default_str();
  app.add_option("--depth", depth, "prefetch depth")->capture_default_str();
  app.add_option("--repetitions", repetitions, "one-epoch runs per variant")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  const auto devices = vk::Backend::devices(2);
  if (devices.size() < 2) {
    std::printf("device_learner: vulkan skipped: %s\n", vk::Backend::unavailable_reason().c_str());
    return 0;
  }
  const Images train(images), valid(2000);
  const stoke::cpu::ImageBatcher normalise{.mean = 0.3f, .std = 0.3f};
  const char* names[] = {"(a) without prefetch, uploaded on the training thread",
                         "(b) prefetch_to_device", "(c) vulkan::ImageBatcher, one loader worker"};
  std::vector<std::vector<Figures>> runs(3);
  for (std::size_t r = 0; r < repetitions; ++r) {
    runs[0].push_back(
        one_epoch(stoke::DataLoaderBuilder<vk::Backend, UploadingBatcher>({HostBatcher{normalise}})
                      .batch_size(batch_size)
                      .shuffle(3)
                      .drop_last()
                      .build(train),
                  devices, valid));
    runs[1].push_back(one_epoch(stoke::prefetch_to_device<vk::Backend>(
                                    stoke::DataLoaderBuilder<vk::Backend, HostBatcher>({normalise})
                                        .batch_size(batch_size)
                                        .shuffle(3)
                                        .drop_last()
                                        .build(train),
                                    depth),
                                devices, valid));
    runs[2].push_back(one_epoch(
        stoke::DataLoaderBuilder<vk::Backend, vk::ImageBatcher>(vk::ImageBatcher(0.3f, 0.3f))
            .batch_size(batch_size)
            .shuffle(3)
            .num_workers(1)
            .drop_last()
            .build(train),
        devices, valid));
  }
  std::printf("2 Vulkan devices, batches of %zu per device, %zu images, median of %zu epochs\n",
              batch_size, images, repetitions);
  std::vector<double> step(3);
  for (std::size_t v = 0; v < 3; ++v) {
    std::vector<double> ms;
    for (const Figures& f : runs[v]) ms.push_back(f.step_ms);
    step[v] = median(ms);
    std::printf("%-55s step %.3f ms, waiting for data:", names[v], step[v]);
    for (std::size_t d = 0; d < devices.size(); ++d) {
      std::vector<double> share;
      for (const Figures& f : runs[v]) share.push_back(f.wait_share[d]);
      std::printf(" vulkan:%zu %.1f%%", d, 100.0 * median(share));
    }
    std::printf("\n");
  }
  std::printf("ratio device_learner_prefetch_vulkan: %.3f\n", step[0] / step[1]);
  std::printf("ratio device_learner_device_batcher_vulkan: %.3f\n", step[0] / step[2]);
  return 0;
}
