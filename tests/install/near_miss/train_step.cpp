// Near miss of `TrainStep`: a model with parameters and `valid_step` but no `train_step`,
// given to `Learner::fit`.
#include <numeric>
#include <span>
#include <vector>

#include <stoke/cpu/backend.hpp>
#include <stoke/data/builder.hpp>
#include <stoke/data/sources/in_memory.hpp>
#include <stoke/learner/learner.hpp>
#include <stoke/learner/optim/sgd.hpp>

/// A batch is the sum of its items.
struct SumBatcher {
  float batch(std::vector<float> items, const stoke::cpu::Device&) const {
    return std::accumulate(items.begin(), items.end(), 0.0f);
  }
};
using Batch = stoke::Batch<float>;

struct Model {
  std::vector<float> weights = std::vector<float>(4);
  std::span<float> parameters() { return weights; }
  std::span<const float> parameters() const { return weights; }
  stoke::StepOutput valid_step(const Batch&) const { return {}; }
#ifdef STOKE_NEAR_MISS_FIXED
  stoke::StepOutput train_step(const Batch&, std::span<float>) { return {}; }
#endif
};

int main() {
  const stoke::InMemoryDataset<float> numbers(std::vector<float>{1, 2, 3, 4});
  auto loader =
      stoke::DataLoaderBuilder<stoke::cpu::Backend, SumBatcher>({}).batch_size(2).drop_last().build(
          numbers);
  stoke::Learner<stoke::cpu::Backend, Model, stoke::Sgd, stoke::ConstantLr> learner(
      Model{}, stoke::Sgd(0.1f), stoke::ConstantLr{}, stoke::cpu::Backend::devices(1));
  return static_cast<int>(learner.fit(loader, loader).epochs.size()) - 1;
}
