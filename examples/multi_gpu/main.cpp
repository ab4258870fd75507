// Trains a softmax classifier on Fashion-MNIST on every visible GPU: one loader split per
// device, each batch made and normalised on its own device (cuda::ImageBatcher), the model's
// flat parameter and gradient buffers in device memory (cuBLAS for the matrix products), and
// the gradients summed across devices by NCCL. Without a GPU it prints why and exits 0.
#include <cublas_v2.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <stoke/cuda.hpp>
#include <stoke/learner/train_step.hpp>
#include <stoke/stoke.hpp>

namespace {

constexpr int kPixels = 28 * 28;
constexpr int kClasses = 10;
constexpr std::size_t kParameters = kClasses * kPixels + kClasses;  // W (10 x 784), then b

#define CUBLAS_CHECK(call)                                                          \
  do {                                                                              \
    if (const cublasStatus_t status = (call); status != CUBLAS_STATUS_SUCCESS)      \
      throw stoke::Error(std::string("cublas: ") + #call + " failed with status " + \
                         std::to_string(static_cast<int>(status)));                 \
  } while (false)

/// One replica: parameters and gradients as flat device buffers, a cuBLAS handle and a
/// compute stream on its device. The logits' softmax and cross-entropy (10 floats a row)
/// are computed on the host.
class Replica {
 public:
  Replica(const stoke::cuda::Device& device, const std::vector<float>& initial)
      : device_(device),
        stream_(device),
        parameters_(device, kParameters * sizeof(float)),
        gradients_(device, kParameters * sizeof(float)) {
    const stoke::cuda::DeviceGuard guard(device_);
    CUBLAS_CHECK(cublasCreate(&blas_));
    CUBLAS_CHECK(cublasSetStream(blas_, stream_.handle()));
    parameters_.written().enqueue_wait(stream_.handle());
    STOKE_CUDA_CHECK(cudaMemcpyAsync(parameters_.data(), initial.data(),
                                     kParameters * sizeof(float), cudaMemcpyHostToDevice,
                                     stream_.handle()));
    STOKE_CUDA_CHECK(cudaStreamSynchronize(stream_.handle()));
  }
  Replica(const Replica&) = delete;
  ~Replica() {
    if (blas_ != nullptr) cublasDestroy(blas_);
  }

  /// Forward and (when `gradients` is set) backward on one batch; returns loss sum, correct.
  stoke::StepOutput step(const stoke::cuda::ImageBatch& batch, std::size_t padding, bool train) {
    const stoke::cuda::DeviceGuard guard(device_);
    const int rows = static_cast<int>(batch.rows);
    const std::size_t real = batch.rows - padding;
    batch.ready.enqueue_wait(stream_.handle());
    stoke::cuda::Buffer logits(device_, batch.rows * kClasses * sizeof(float));
    const float one = 1.0F, zero = 0.0F;
    const float* w = parameters_.floats().data();
    const float* x = batch.inputs.floats().data();
    // logits (10 x rows, column-major) = W (10 x 784) * X (784 x rows)
    CUBLAS_CHECK(cublasSgemm(blas_, CUBLAS_OP_N, CUBLAS_OP_N, kClasses, rows, kPixels, &one, w,
                             kClasses, x, kPixels, &zero, logits.floats().data(), kClasses));
    std::vector<float> host(batch.rows * kClasses);
    STOKE_CUDA_CHECK(cudaMemcpyAsync(host.data(), logits.data(), host.size() * sizeof(float),
                                     cudaMemcpyDeviceToHost, stream_.handle()));
    std::vector<float> bias(kClasses);
    STOKE_CUDA_CHECK(cudaMemcpyAsync(bias.data(), w + kClasses * kPixels, sizeof(float) * kClasses,
                                     cudaMemcpyDeviceToHost, stream_.handle()));
    STOKE_CUDA_CHECK(cudaStreamSynchronize(stream_.handle()));
    stoke::StepOutput out;
    std::vector<float> dlogits(host.size(), 0.0F), dbias(kClasses, 0.0F);
    for (std::size_t r = 0; r < real; ++r) {
      float* z = &host[r * kClasses];
      float top = -INFINITY;
      int best = 0;
      for (int c = 0; c < kClasses; ++c) {
        z[c] += bias[c];
        if (z[c] > top) top = z[c], best = c;
      }
      double sum = 0;
      for (int c = 0; c < kClasses; ++c) sum += std::exp(double(z[c]) - top);
      const int label = batch.labels[r];
      out.loss_sum += std::log(sum) - (double(z[label]) - top);
      out.correct += best == label ? 1 : 0;
      for (int c = 0; c < kClasses; ++c) {
        const float p = static_cast<float>(std::exp(double(z[c]) - top) / sum);
        dlogits[r * kClasses + c] = p - (c == label ? 1.0F : 0.0F);
        dbias[c] += dlogits[r * kClasses + c];
      }
    }
    out.count = real;
    if (!train) return out;
    // dW (10 x 784) = dlogits (10 x rows) * X^T; db = row sums. Padding rows are zero.
    STOKE_CUDA_CHECK(cudaMemcpyAsync(logits.data(), dlogits.data(), dlogits.size() * sizeof(float),
                                     cudaMemcpyHostToDevice, stream_.handle()));
    CUBLAS_CHECK(cublasSgemm(blas_, CUBLAS_OP_N, CUBLAS_OP_T, kClasses, kPixels, rows, &one,
                             logits.floats().data(), kClasses, x, kPixels, &zero,
                             gradients_.floats().data(), kClasses));
    STOKE_CUDA_CHECK(cudaMemcpyAsync(gradients_.floats().data() + kClasses * kPixels, dbias.data(),
                                     sizeof(float) * kClasses, cudaMemcpyHostToDevice,
                                     stream_.handle()));
    STOKE_CUDA_CHECK(cudaStreamSynchronize(stream_.handle()));
    return out;
  }

  /// parameters -= rate * gradients (the gradients already summed over every device).
  void sgd(float rate) {
    const stoke::cuda::DeviceGuard guard(device_);
    const float alpha = -rate;
    CUBLAS_CHECK(cublasSaxpy(blas_, static_cast<int>(kParameters), &alpha,
                             gradients_.floats().data(), 1, parameters_.floats().data(), 1));
    STOKE_CUDA_CHECK(cudaStreamSynchronize(stream_.handle()));
  }

  /// The flat gradient buffer, in device memory (what NCCL sums).
  std::span<float> gradients() { return gradients_.floats(); }

 private:
  stoke::cuda::Device device_;
  stoke::cuda::Stream stream_;
  stoke::cuda::Buffer parameters_;
  stoke::cuda::Buffer gradients_;
  cublasHandle_t blas_ = nullptr;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"stoke: train on Fashion-MNIST on every visible GPU (NCCL, cuBLAS)"};
  std::filesystem::path data = "/usr/share/datasets/fashion-mnist";
  std::size_t epochs = 3, batch_size = 128, workers = 2;
  float learning_rate = 0.1F;
  std::uint64_t seed = 7;
  app.add_option("--data", data, "folder with the four IDX files (gzip or not)")
      ->capture_default_str();
  app.add_option("--epochs", epochs, "epochs to train")->capture_default_str();
  app.add_option("--batch-size", batch_size, "samples per batch per device")->capture_default_str();
  app.add_option("--workers", workers, "loader threads per device")->capture_default_str();
  app.add_option("--lr", learning_rate, "SGD learning rate (per mean item)")->capture_default_str();
  app.add_option("--seed", seed, "seed of the shuffle")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  const auto devices = stoke::cuda::Backend::devices();
  if (devices.empty()) {
    std::printf("multi_gpu: nothing to do: %s\n", stoke::cuda::unavailable_reason().c_str());
    return 0;
  }
#if !defined(STOKE_CUDA_HAS_NCCL)
  std::printf("multi_gpu: nothing to do: stoke::cuda was built without NCCL\n");
  return 0;
#else
  const auto file = [&](const char* name) {
    const auto plain = data / name;
    return std::filesystem::exists(plain) ? plain : data / (std::string(name) + ".gz");
  };
  try {
    const stoke::IdxClassificationDataset train_set(file("train-images-idx3-ubyte"),
                                                    file("train-labels-idx1-ubyte"));
    const stoke::IdxClassificationDataset test_set(file("t10k-images-idx3-ubyte"),
                                                   file("t10k-labels-idx1-ubyte"));
    const stoke::cuda::ImageBatcher batcher(0.2860F, 0.3530F);
    using Builder = stoke::DataLoaderBuilder<stoke::cuda::Backend, stoke::cuda::ImageBatcher>;
    // Each device keeps its loader across epochs: its epoch counter advances with every
    // iter(), so every epoch has a new order (a copy made per epoch would replay epoch 0).
    auto train = stoke::split(Builder(batcher)
                                  .batch_size(batch_size)
                                  .shuffle(seed)
                                  .num_workers(workers)
                                  .drop_last()
                                  .build(train_set),
                              devices);
    auto test = stoke::split(
        Builder(batcher).batch_size(500).num_workers(workers).pad().build(test_set), devices);

    std::vector<float> initial(kParameters, 0.0F);
    std::mt19937 random(static_cast<std::uint32_t>(seed));
    std::normal_distribution<float> normal(0.0F, 0.01F);
    for (std::size_t i = 0; i < kClasses * kPixels; ++i) initial[i] = normal(random);
    auto collective = stoke::cuda::Backend::make_collective(devices);
    const std::size_t items_per_step = batch_size * devices.size();
    std::vector<std::unique_ptr<Replica>> replicas(devices.size());  // made on their threads

    for (std::size_t epoch = 0; epoch < epochs; ++epoch) {
      std::vector<stoke::StepOutput> trained(devices.size()), tested(devices.size());
      std::vector<double> train_seconds(devices.size(), 0.0);
      std::vector<std::thread> threads;
      std::vector<std::exception_ptr> errors(devices.size());
      for (std::size_t d = 0; d < devices.size(); ++d) {
        threads.emplace_back([&, d] {
          try {
            if (!replicas[d]) replicas[d] = std::make_unique<Replica>(devices[d], initial);
            const auto start = std::chrono::steady_clock::now();
            for (auto& batch : train[d].iter()) {
              trained[d] += replicas[d]->step(batch.data, batch.padding, true);
              collective->all_reduce_sum(d, replicas[d]->gradients());
              replicas[d]->sgd(learning_rate / static_cast<float>(items_per_step));
            }
            train_seconds[d] =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            for (auto& batch : test[d].iter()) {
              tested[d] += replicas[d]->step(batch.data, batch.padding, false);
            }
          } catch (...) {
            errors[d] = std::current_exception();
            collective->abort();
          }
        });
      }
      for (auto& thread : threads) thread.join();
      for (const auto& error : errors)
        if (error) std::rethrow_exception(error);
      stoke::StepOutput train_sum, test_sum;
      for (std::size_t d = 0; d < devices.size(); ++d) {
        train_sum += trained[d];
        test_sum += tested[d];
      }
      const double seconds = *std::max_element(train_seconds.begin(), train_seconds.end());
      std::printf("epoch %zu on %zu GPUs: train loss %.4f, test accuracy %.4f, %.0f samples/s\n",
                  epoch + 1, devices.size(), train_sum.loss_sum / double(train_sum.count),
                  double(test_sum.correct) / double(test_sum.count),
                  double(train_sum.count) / seconds);
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "multi_gpu: %s\n", error.what());
    return 1;
  }
  return 0;
#endif
}
