// Trains a softmax classifier on Fashion-MNIST through the Learner on every device of one
// backend: CUDA GPUs, Vulkan devices (two logical ones on a machine whose only Vulkan device
// is a CPU, as Mesa's lavapipe), or CPU devices. On CUDA and Vulkan every batch is made and
// normalised on its device, and the parameters, gradients and optimizer state never leave
// device memory: the Learner enqueues the step, the all-reduce and the optimizer there, and
// reads the step sums once an epoch. On the CPU the host `Mlp` of the same layout trains.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include <stoke/learner.hpp>
#include <stoke/stoke.hpp>
#if defined(STOKE_EXAMPLE_VULKAN)
#include <stoke/vulkan.hpp>
#endif
#if defined(STOKE_EXAMPLE_CUDA)
#include <stoke/cuda.hpp>
#endif

#include "fashion_mnist.hpp"

namespace {

constexpr std::size_t kPixels = 28 * 28;
constexpr std::size_t kClasses = 10;
constexpr float kMean = 0.2860f, kStd = 0.3530f;  // of the training set's pixels
constexpr float kMomentum = 0.9f;

/// What the command line chose.
struct Options {
  fashion_mnist::Flags flags;
  std::string backend;      ///< cuda, vulkan or cpu
  bool uncaptured = false;  ///< run every device step uncaptured (no CUDA graph)
};

/// Prints one line per epoch of `result` (the format scripts/gpu_results.py reads) and the
/// final test accuracy.
void report(const stoke::FitResult& result, std::size_t devices, const std::string& backend) {
  for (const stoke::EpochMetrics& epoch : result.epochs) {
    std::printf(
        "epoch %zu on %zu %s devices: train loss %.4f, test accuracy %.4f, %.0f samples/s\n",
        epoch.epoch + 1, devices, backend.c_str(), epoch.train_loss, epoch.valid_accuracy,
        epoch.samples_per_second);
  }
  if (!result.epochs.empty()) {
    std::printf("test accuracy: %.4f\n", result.epochs.back().valid_accuracy);
  }
}

// --8<-- [start:train]
/// Trains `model` with `batcher`'s batches on `devices` of backend `B`: SGD with momentum at
/// a constant rate (as bench/peers/pytorch_fashion_gpu.py); a device-resident model on CUDA
/// and Vulkan, a host one on the CPU.
template <class B, class Batcher, class Model>
stoke::FitResult train(const Options& options, const std::vector<stoke::device_t<B>>& devices,
                       const Batcher& batcher, Model model) {
  const auto& flags = options.flags;
  const fashion_mnist::Data data = fashion_mnist::load(flags.data);
  using Builder = stoke::DataLoaderBuilder<B, Batcher>;
  auto train_loader = Builder(batcher)
                          .batch_size(flags.batch_size)
                          .shuffle(flags.seed)
                          .num_workers(flags.workers)
                          .drop_last()
                          .build(data.train);
  auto test_loader =
      Builder(batcher).batch_size(500).num_workers(flags.workers).pad().build(data.test);
  stoke::Learner<B, Model, stoke::Sgd, stoke::ConstantLr> learner(
      std::move(model), stoke::Sgd(flags.learning_rate, kMomentum),
      stoke::ConstantLr{flags.learning_rate}, devices,
      {.epochs = flags.epochs,
       .checkpoint_dir = flags.checkpoint_dir,
       .resume = flags.resume,
       .metrics_csv = flags.metrics_csv,
       .live_progress = stoke::stdout_is_terminal(),
       .capture_steps = !options.uncaptured});
  return learner.fit(std::move(train_loader), std::move(test_loader));
}
// --8<-- [end:train]

/// The devices to train on: every visible one when `requested` is 0, else `requested` of them,
/// several on one GPU (lanes) when there are fewer GPUs; what cannot be given is a
/// `stoke::UsageError`, never silently fewer devices.
template <class B>
std::vector<stoke::device_t<B>> pick_devices(std::size_t requested) {
  return requested == 0 ? B::devices() : B::devices(requested);
}

/// Trains on backend `B`'s devices with the device-resident classifier of its `BatchData`.
template <class B, class Batcher, class BatchData>
int train_on_device_backend(const Options& options) {
  if constexpr (!stoke::DeviceBackend<B>) {
    std::fprintf(stderr, "multi_gpu: the %s backend was built without device training\n",
                 options.backend.c_str());
    return 1;
  } else {
    // --8<-- [start:device]
    const auto devices = pick_devices<B>(options.flags.devices);
    if (devices.empty()) {
      std::fprintf(stderr, "multi_gpu: no %s device: %s\n", options.backend.c_str(),
                   B::unavailable_reason().c_str());
      return 1;
    }
    stoke::SoftmaxClassifier<B, BatchData> model(devices[0], kPixels, kClasses, options.flags.seed);
    const auto result = train<B>(options, devices, Batcher(kMean, kStd), std::move(model));
    // --8<-- [end:device]
    report(result, devices.size(), options.backend);
    return 0;
  }
}

/// Trains the host `Mlp({784, 10})` (the same model) on CPU devices.
int train_on_cpu(const Options& options) {
  const std::size_t count = options.flags.devices == 0 ? 2 : options.flags.devices;
  const auto devices = stoke::cpu::Backend::devices(count);
  const auto result = train<stoke::cpu::Backend>(
      options, devices, stoke::cpu::ImageBatcher({.mean = kMean, .std = kStd}),
      stoke::Mlp({kPixels, kClasses}, options.flags.seed));
  report(result, devices.size(), "cpu");
  return 0;
}

/// The best backend present: CUDA with a GPU, else Vulkan with a device, else the CPU.
std::string best_backend() {
#if defined(STOKE_EXAMPLE_CUDA)
  if (!stoke::cuda::Backend::devices().empty()) return "cuda";
#endif
#if defined(STOKE_EXAMPLE_VULKAN)
  if (!stoke::vulkan::Backend::devices().empty()) return "vulkan";
#endif
  return "cpu";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"stoke: train a softmax classifier on Fashion-MNIST on every device of a backend"};
  Options options;
  options.flags.devices = 0;
  options.flags.epochs = 5;
  options.flags.batch_size = 128;
  options.flags.learning_rate = 0.01f;
  fashion_mnist::add_flags(app, options.flags,
                           "devices to train on (0: every visible one; 2 CPU devices)");
  app.add_option("--backend", options.backend, "cuda, vulkan or cpu (default: the best present)")
      ->check(CLI::IsMember({"cuda", "vulkan", "cpu"}));
  app.add_flag("--uncaptured", options.uncaptured,
               "run every device step as separate operations, never as one captured graph");
  CLI11_PARSE(app, argc, argv);
  if (options.backend.empty()) options.backend = best_backend();
  try {
    if (options.backend == "cuda") {
#if defined(STOKE_EXAMPLE_CUDA)
      return train_on_device_backend<stoke::cuda::Backend, stoke::cuda::ImageBatcher,
                                     stoke::cuda::ImageBatch>(options);
#else
      std::fprintf(stderr, "multi_gpu: stoke was built without the CUDA backend\n");
      return 1;
#endif
    }
    if (options.backend == "vulkan") {
#if defined(STOKE_EXAMPLE_VULKAN)
      return train_on_device_backend<stoke::vulkan::Backend, stoke::vulkan::ImageBatcher,
                                     stoke::vulkan::ImageBatch>(options);
#else
      std::fprintf(stderr, "multi_gpu: stoke was built without the Vulkan backend\n");
      return 1;
#endif
    }
    return train_on_cpu(options);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "multi_gpu: %s\n", error.what());
    return 1;
  }
}
