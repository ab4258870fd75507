// Trains the Fashion-MNIST classifier of examples/fashion_mnist (an MLP 784-256-128-10, Adam,
// the same cosine schedule, a global batch of 128) in libtorch, fed by stoke's loader: each
// batch becomes torch::Tensors over the batch's own memory (stoke::libtorch::to_torch, no
// copy), which goes back to the loader's pool once the step is done with it.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>

#include <torch/torch.h>
#include <CLI/CLI.hpp>

#include <stoke/libtorch/tensors.hpp>

#include "fashion_mnist.hpp"

namespace {

/// The command-line settings.
struct Flags {
  std::filesystem::path data = "/usr/share/datasets/fashion-mnist";  ///< the IDX files
  std::size_t epochs = 10;                                           ///< epochs to train
  std::size_t batch_size = 128;  ///< samples per step (the demo's 2 devices x 64)
  std::size_t workers = 1;       ///< loader threads
  int threads = 1;               ///< libtorch's intra-op threads (see main)
  float learning_rate = 1e-3F;   ///< peak learning rate (Adam)
  std::uint64_t seed = 7;        ///< seed of the shuffle and the initial weights
  double min_accuracy = 0;       ///< fail (exit 1) below this final test accuracy
};

// --8<-- [start:model]
/// 784 inputs, hidden layers of 256 and 128 with ReLU, 10 classes; He-initialised weights and
/// zero biases, as stoke::Mlp.
torch::nn::Sequential model(std::uint64_t seed) {
  torch::manual_seed(seed);
  torch::nn::Sequential net(torch::nn::Linear(28 * 28, 256), torch::nn::ReLU(),
                            torch::nn::Linear(256, 128), torch::nn::ReLU(),
                            torch::nn::Linear(128, 10));
  for (auto& layer : net->modules(/*include_self=*/false)) {
    if (auto* linear = layer->as<torch::nn::Linear>()) {
      torch::nn::init::kaiming_normal_(linear->weight, 0.0, torch::kFanIn, torch::kReLU);
      torch::nn::init::zeros_(linear->bias);
    }
  }
  return net;
}
// --8<-- [end:model]

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"stoke + libtorch: train an MLP on Fashion-MNIST, batches handed over as tensors"};
  Flags flags;
  app.add_option("--data", flags.data, "folder with the four IDX files (gzip or not)")
      ->capture_default_str();
  app.add_option("--epochs", flags.epochs, "epochs to train")->capture_default_str();
  app.add_option("--batch-size", flags.batch_size, "samples per step")->capture_default_str();
  app.add_option("--workers", flags.workers, "loader threads")->capture_default_str();
  app.add_option("--threads", flags.threads, "libtorch's threads")->capture_default_str();
  app.add_option("--lr", flags.learning_rate, "peak learning rate")->capture_default_str();
  app.add_option("--seed", flags.seed, "seed of the shuffle and the weights")
      ->capture_default_str();
  app.add_option("--min-accuracy", flags.min_accuracy, "exit 1 below this final test accuracy");
  CLI11_PARSE(app, argc, argv);

  try {
    // libtorch's OpenMP threads spin after every operation: more of them than the cores the
    // loader's workers leave makes each step wait on a descheduled thread (on a busy 2-core
    // machine 25 s an epoch with 2 threads, 1.2 s with 1).
    torch::set_num_threads(flags.threads);
    // The data, the loaders and the schedule of the C++ demo (examples/fashion_mnist).
    const fashion_mnist::Data data = fashion_mnist::load(flags.data);
    auto train = fashion_mnist::train_loader(data, flags.batch_size, flags.seed, flags.workers);
    auto test = fashion_mnist::test_loader(data, flags.workers);
    const std::size_t steps_per_epoch = data.train.size() / flags.batch_size;
    const stoke::CosineLr schedule =
        fashion_mnist::schedule(flags.learning_rate, flags.epochs, steps_per_epoch);

    torch::nn::Sequential net = model(flags.seed);
    torch::optim::Adam optimizer(net->parameters(),
                                 torch::optim::AdamOptions(flags.learning_rate).eps(1e-8));
    std::size_t step = 0;
    double accuracy = 0;
    for (std::size_t epoch = 1; epoch <= flags.epochs; ++epoch) {
      const auto began = std::chrono::steady_clock::now();
      double loss_sum = 0;
      std::size_t batches = 0;
      float lr = 0;
      // --8<-- [start:train]
      net->train();
      for (auto& batch : train.iter()) {  // each iter() is the next epoch, in a new order
        // The batch's pooled buffer as tensors, no copy; it goes back to the pool when the
        // tensors (and the autograd graph holding them) are gone, at the end of this body.
        const auto tensors = stoke::libtorch::to_torch(std::move(batch));
        const torch::Tensor labels = tensors.data.labels.to(torch::kLong);
        lr = schedule(step++);
        for (auto& group : optimizer.param_groups()) {
          static_cast<torch::optim::AdamOptions&>(group.options()).lr(lr);
        }
        const torch::Tensor loss =
            torch::nn::functional::cross_entropy(net->forward(tensors.data.inputs), labels);
        optimizer.zero_grad();
        loss.backward();
        optimizer.step();
        loss_sum += loss.item<double>();
        ++batches;
      }
      // --8<-- [end:train]
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();

      // --8<-- [start:evaluate]
      // The test loader pads its last batch; the mask leaves the padding out.
      net->eval();
      const torch::NoGradGuard no_grad;
      std::int64_t correct = 0;
      std::int64_t seen = 0;
      for (auto& batch : test.iter()) {
        const auto tensors = stoke::libtorch::to_torch(std::move(batch));
        const torch::Tensor real = stoke::libtorch::mask(tensors);
        const torch::Tensor hit =
            net->forward(tensors.data.inputs).argmax(1) == tensors.data.labels.to(torch::kLong);
        correct += (hit & real).sum().item<std::int64_t>();
        seen += static_cast<std::int64_t>(tensors.real_size());
      }
      accuracy = static_cast<double>(correct) / static_cast<double>(seen);
      // --8<-- [end:evaluate]
      std::printf(
          "epoch %zu/%zu: train loss %.4f | test accuracy %.4f | %.0f samples/s | %.1f s "
          "| lr %.4g\n",
          epoch, flags.epochs, loss_sum / static_cast<double>(batches), accuracy,
          static_cast<double>(batches * flags.batch_size) / seconds, seconds, lr);
      std::fflush(stdout);
    }
    std::printf("test accuracy: %.4f\n", accuracy);
    if (accuracy < flags.min_accuracy) {
      std::fprintf(stderr, "libtorch_fashion_mnist: test accuracy %.4f is below %.4f\n", accuracy,
                   flags.min_accuracy);
      return 1;
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "libtorch_fashion_mnist: %s\n", error.what());
    return 1;
  }
  return 0;
}
