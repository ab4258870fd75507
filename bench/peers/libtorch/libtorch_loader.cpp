// The workloads of bench/loader_bench.cpp in libtorch's C++ data API (torch::data): a
// Dataset, the Stack collation and make_data_loader with a RandomSampler. Prints one
// `figure <name>: <value>` line per figure, medians of --repeats runs; steady-state figures
// are timed from the first batch to the end of a measured run of batches.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace {

using Clock = std::chrono::steady_clock;
namespace data = torch::data;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

/// 10^6 samples of (int, float): data is the label, target the value.
struct Small : data::datasets::Dataset<Small> {
  torch::Tensor labels = torch::arange(1'000'000, torch::kInt32).remainder(10);
  torch::Tensor values = torch::arange(1'000'000, torch::kFloat32).mul(0.5);
  data::Example<> get(size_t i) override { return {labels[i], values[i]}; }
  torch::optional<size_t> size() const override { return 1'000'000; }
};

/// Records of the memory-mapped file as normalised float32 tensors of 3x64x64.
struct Images : data::datasets::Dataset<Images, data::TensorExample> {
  const std::uint8_t* bytes = nullptr;
  size_t count = 0;
  explicit Images(const char* path) {
    const int fd = ::open(path, O_RDONLY);
    struct stat info{};
    if (fd < 0 || ::fstat(fd, &info) != 0) {
      std::perror(path);
      std::exit(1);
    }
    count = static_cast<size_t>(info.st_size) / (3 * 64 * 64);
    bytes = static_cast<const std::uint8_t*>(
        ::mmap(nullptr, static_cast<size_t>(info.st_size), PROT_READ, MAP_PRIVATE, fd, 0));
    ::close(fd);
  }
  data::TensorExample get(size_t i) override {
    auto record = torch::from_blob(const_cast<std::uint8_t*>(bytes + i * 3 * 64 * 64), {3, 64, 64},
                                   torch::kUInt8);
    return {record.to(torch::kFloat32).div_(255.0)};
  }
  torch::optional<size_t> size() const override { return count; }
};

/// Seconds from the first batch to the `batches`-th after it, and the samples in them.
template <class Loader>
std::pair<double, size_t> timed_batches(Loader& loader, size_t batches) {
  auto it = loader.begin();
  (void)it->data.size(0);  // the iterator fetches lazily: take the first batch untimed
  Clock::time_point start = Clock::now();
  size_t samples = 0;
  for (size_t b = 0; b < batches && ++it != loader.end(); ++b) samples += it->data.size(0);
  return {seconds_since(start), samples};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: libtorch_loader IMAGE_FILE [REPEATS]\n");
    return 2;
  }
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 3;
  torch::set_num_threads(1);
  for (size_t workers : {0, 2}) {
    std::vector<double> runs;
    for (int r = 0; r < repeats; ++r) {
      auto loader = data::make_data_loader<data::samplers::RandomSampler>(
          Small{}.map(data::transforms::Stack<>()),
          data::DataLoaderOptions().batch_size(64).workers(workers));
      const auto [seconds, samples] = timed_batches(*loader, 1500);
      runs.push_back(seconds / static_cast<double>(samples) * 1e9);
    }
    std::printf("figure overhead_ns_per_item/libtorch/w%zu: %.1f\n", workers, median(runs));
    std::fflush(stdout);
  }
  const Images images(argv[1]);
  for (size_t workers : {0, 2}) {
    std::vector<double> runs;
    for (int r = 0; r < repeats; ++r) {
      auto loader = data::make_data_loader<data::samplers::RandomSampler>(
          Images(images).map(data::transforms::Stack<data::TensorExample>()),
          data::DataLoaderOptions().batch_size(256).workers(workers).drop_last(true));
      const auto [seconds, samples] = timed_batches(*loader, 60);
      runs.push_back(static_cast<double>(samples) / seconds);
    }
    std::printf("figure image_samples_per_s/libtorch/w%zu: %.1f\n", workers, median(runs));
    std::fflush(stdout);
  }
  // A later epoch needs the earlier one exhausted (libtorch refuses a second iterator):
  // epochs of 4 batches, as in loader_bench.
  Images few(images);
  few.count = 4 * 256;
  std::vector<double> fresh, later;
  for (int r = 0; r < repeats; ++r) {
    auto start = Clock::now();
    auto loader = data::make_data_loader<data::samplers::RandomSampler>(
        Images(few).map(data::transforms::Stack<data::TensorExample>()),
        data::DataLoaderOptions().batch_size(256).workers(2).drop_last(true));
    {
      auto it = loader->begin();
      (void)it->data.size(0);
      fresh.push_back(seconds_since(start));
      while (++it != loader->end()) (void)it->data.size(0);
    }
    start = Clock::now();
    auto it = loader->begin();
    (void)it->data.size(0);
    later.push_back(seconds_since(start));
    while (++it != loader->end()) (void)it->data.size(0);
  }
  std::printf("figure first_batch_s/libtorch/w2/new: %.6f\n", median(fresh));
  std::printf("figure first_batch_s/libtorch/w2/later: %.6f\n", median(later));
  return 0;
}
