// What every consumer of stoke builds (through find_package, add_subdirectory or
// FetchContent): a loader over a small dataset split over two CPU devices, and one step of the
// learner's MLP on a batch. Exits non-zero if a batch is not what it should be.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <vector>

#include <stoke/learner.hpp>
#include <stoke/stoke.hpp>

namespace {

/// 40 images of 4 pixels; image `i` has label `i % 2` and pixels `{i, i, i, i}`.
struct Images {
  std::shared_ptr<const std::vector<std::uint8_t>> pixels;
  [[nodiscard]] std::size_t size() const { return pixels->size() / 4; }
  [[nodiscard]] stoke::LabeledImage get(std::size_t i) const {
    return {std::span(*pixels).subspan(i * 4, 4), static_cast<std::uint32_t>(i % 2)};
  }
};

}  // namespace

int main() {
  auto pixels = std::make_shared<std::vector<std::uint8_t>>();
  for (std::uint8_t i = 0; i < 40; ++i) pixels->insert(pixels->end(), 4, i);
  const Images images{pixels};
  static_assert(stoke::Dataset<Images>);

  auto loader = stoke::DataLoaderBuilder<stoke::cpu::Backend, stoke::cpu::ImageBatcher>(
                    {.mean = 0.0f, .std = 1.0f / 255.0f})
                    .batch_size(4)
                    .shuffle(1)
                    .num_workers(2)
                    .drop_last()
                    .build(images);
  const auto parts = stoke::split(loader, stoke::cpu::Backend::devices(2));
  std::size_t batches = 0, items = 0, bad = 0;
  for (auto part : parts) {
    for (const auto& batch : part.iter()) {
      ++batches;
      for (std::size_t row = 0; row < batch.size(); ++row) {
        const std::size_t index = batch.indices[row];
        ++items;
        // The batcher maps byte b to b / 255 / (1 / 255) = b: the pixel is the index.
        if (std::fabs(batch.data.inputs.row(row)[0] - static_cast<float>(index)) > 1e-3f ||
            batch.data.labels[row] != static_cast<std::int32_t>(index % 2) ||
            batch.data.inputs.device() != part.device()) {
          ++bad;
        }
      }
    }
  }
  const stoke::Mlp model({4, 3, 2}, 7);
  auto one = stoke::DataLoaderBuilder<stoke::cpu::Backend, stoke::cpu::ImageBatcher>({})
                 .batch_size(8)
                 .build_batch_loader(images);
  const stoke::StepOutput step = model.valid_step(*one.iter().begin());
  std::printf(
      "consumer: %zu batches, %zu items on 2 devices, %zu wrong; MLP loss %.3f on %zu items\n",
      batches, items, bad, step.loss_sum / static_cast<double>(step.count), step.count);
  return batches == 10 && items == 40 && bad == 0 && step.count == 8 ? 0 : 1;
}
