// The MLP: analytic gradients against finite differences, padding, linearity over batches,
// deterministic initialisation, independent copies, and that it learns.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>
#include <span>
#include <stdexcept>
#include <vector>

#include <stoke/core/rng.hpp>
#include <stoke/cpu/classification.hpp>
#include <stoke/data/batch.hpp>
#include <stoke/learner/model/mlp.hpp>
#include <stoke/learner/optim/sgd.hpp>
#include <stoke/learner/train_step.hpp>

namespace {

using stoke::Mlp;
using stoke::cpu::ClassificationBatch;
using stoke::cpu::Tensor;
using MlpBatch = stoke::Batch<ClassificationBatch>;

static_assert(stoke::TrainStep<Mlp, MlpBatch>);
static_assert(stoke::ValidationStep<Mlp, MlpBatch>);

// A batch from explicit rows and labels; the last `padding` items are padding.
MlpBatch make_batch(std::vector<std::vector<float>> rows, std::vector<std::int32_t> labels,
                    std::size_t padding = 0) {
  const std::size_t features = rows.empty() ? 0 : rows.front().size();
  Tensor<float> inputs({rows.size(), features});
  for (std::size_t i = 0; i < rows.size(); ++i) std::ranges::copy(rows[i], inputs.row(i).begin());
  std::vector<std::size_t> indices(rows.size());
  std::iota(indices.begin(), indices.end(), std::size_t{0});
  return MlpBatch{ClassificationBatch{std::move(inputs), std::move(labels)}, 0, 0, padding,
                  std::move(indices)};
}

// `count` rows of uniform [-1, 1) features with uniform labels, all from `seed`.
MlpBatch random_batch(std::size_t count, std::size_t features, std::size_t classes,
                      std::uint64_t seed) {
  stoke::SampleRng rng(seed, 1, 0);
  std::vector<std::vector<float>> rows(count, std::vector<float>(features));
  std::vector<std::int32_t> labels(count);
  for (std::size_t i = 0; i < count; ++i) {
    for (auto& x : rows[i]) x = 2.0f * rng.uniform() - 1.0f;
    labels[i] = static_cast<std::int32_t>(rng() % classes);
  }
  return make_batch(std::move(rows), std::move(labels));
}

// Rows [begin, end) of `batch` as a batch of their own, with `padding` trailing padding.
MlpBatch rows_of(const MlpBatch& batch, std::size_t begin, std::size_t end,
                 std::size_t padding = 0) {
  std::vector<std::vector<float>> rows;
  for (std::size_t i = begin; i < end; ++i) {
    const auto row = batch.data.inputs.row(i);
    rows.emplace_back(row.begin(), row.end());
  }
  return make_batch(std::move(rows),
                    {batch.data.labels.begin() + static_cast<std::ptrdiff_t>(begin),
                     batch.data.labels.begin() + static_cast<std::ptrdiff_t>(end)},
                    padding);
}

// The summed cross-entropy of the first `rows` items, in double precision, written
// independently of the model from the documented parameter layout (per layer: an in x out
// row-major weight matrix, then out biases; ReLU on hidden layers).
double reference_loss(const std::vector<std::size_t>& sizes, const std::vector<double>& params,
                      const MlpBatch& batch, std::size_t rows) {
  double total = 0.0;
  for (std::size_t item = 0; item < rows; ++item) {
    const auto input = batch.data.inputs.row(item);
    std::vector<double> a(input.begin(), input.end());
    std::size_t offset = 0;
    for (std::size_t l = 0; l + 1 < sizes.size(); ++l) {
      const std::size_t in = sizes[l], out = sizes[l + 1];
      std::vector<double> z(out);
      for (std::size_t j = 0; j < out; ++j) {
        z[j] = params[offset + in * out + j];
        for (std::size_t i = 0; i < in; ++i) z[j] += a[i] * params[offset + i * out + j];
        if (l + 2 < sizes.size()) z[j] = std::max(z[j], 0.0);
      }
      offset += in * out + out;
      a = std::move(z);
    }
    double sum = 0.0;
    for (double z : a) sum += std::exp(z);
    total += std::log(sum) - a[static_cast<std::size_t>(batch.data.labels[item])];
  }
  return total;
}

// Central differences of the double-precision reference against `train_step`, for every
// parameter of an MLP of `sizes` whose parameters (biases included) are perturbed at random.
void expect_gradients_match_finite_differences(const std::vector<std::size_t>& sizes) {
  Mlp mlp(sizes, 11);
  stoke::SampleRng rng(5, 2, 0);
  for (auto& p : mlp.parameters()) p += 0.2f * (rng.uniform() - 0.5f);
  const auto batch = random_batch(6, sizes.front(), sizes.back(), 1);

  std::vector<float> gradients(mlp.parameter_count());
  const auto out = mlp.train_step(batch, gradients);
  std::vector<double> params(mlp.parameters().begin(), mlp.parameters().end());
  const double loss = reference_loss(sizes, params, batch, 6);
  EXPECT_NEAR(out.loss_sum, loss, 1e-5 * loss);
  EXPECT_EQ(out.count, 6u);

  constexpr double kStep = 1e-6;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const double original = params[i];
    params[i] = original + kStep;
    const double up = reference_loss(sizes, params, batch, 6);
    params[i] = original - kStep;
    const double down = reference_loss(sizes, params, batch, 6);
    params[i] = original;
    const double numeric = (up - down) / (2.0 * kStep);
    EXPECT_NEAR(gradients[i], numeric, 1e-4 + 1e-3 * std::abs(numeric)) << "parameter " << i;
  }
}

TEST(Mlp, GradientSumMatchesFiniteDifferencesForEveryParameter) {
  expect_gradients_match_finite_differences({5, 4, 3});
}

TEST(Mlp, GradientSumMatchesFiniteDifferencesThroughTwoHiddenLayers) {
  expect_gradients_match_finite_differences({5, 4, 6, 3});
}

TEST(Mlp, PaddingRowsChangeNeitherGradientsNorLoss) {
  const Mlp mlp({5, 7, 3}, 3);
  const auto full = random_batch(6, 5, 3, 2);
  auto padded = rows_of(full, 0, 6, 2);
  for (auto& x : padded.data.inputs.row(4)) x = 1e3f;  // padding that would dominate if used
  const auto unpadded = rows_of(full, 0, 4);

  Mlp a = mlp, b = mlp;
  std::vector<float> ga(mlp.parameter_count(), std::numeric_limits<float>::quiet_NaN());
  std::vector<float> gb(mlp.parameter_count());
  const auto out_a = a.train_step(padded, ga);
  const auto out_b = b.train_step(unpadded, gb);
  EXPECT_EQ(ga, gb);
  EXPECT_EQ(out_a.loss_sum, out_b.loss_sum);
  EXPECT_EQ(out_a.correct, out_b.correct);
  EXPECT_EQ(out_a.count, 4u);
  EXPECT_EQ(out_b.count, 4u);
  const auto valid = mlp.valid_step(padded);
  EXPECT_EQ(valid.loss_sum, out_b.loss_sum);
  EXPECT_EQ(valid.count, 4u);
}

TEST(Mlp, AllPaddingBatchGivesZeroGradientsAndNoCount) {
  Mlp mlp({5, 4, 3}, 3);
  const auto batch = rows_of(random_batch(3, 5, 3, 2), 0, 3, 3);
  std::vector<float> gradients(mlp.parameter_count(), 1.0f);
  const auto out = mlp.train_step(batch, gradients);
  EXPECT_THAT(gradients, ::testing::Each(0.0f));
  EXPECT_EQ(out.count, 0u);
  EXPECT_EQ(out.loss_sum, 0.0);
}

TEST(Mlp, GradientSumOverTwoBatchesIsTheSumOfTheirGradients) {
  Mlp mlp({8, 16, 12, 4}, 9);
  const auto both = random_batch(7, 8, 4, 4);
  std::vector<float> g_both(mlp.parameter_count()), g_a(mlp.parameter_count()),
      g_b(mlp.parameter_count());
  const auto out_both = mlp.train_step(both, g_both);
  auto out = mlp.train_step(rows_of(both, 0, 3), g_a);
  out += mlp.train_step(rows_of(both, 3, 7), g_b);
  for (std::size_t i = 0; i < g_both.size(); ++i) {
    EXPECT_NEAR(g_both[i], g_a[i] + g_b[i], 1e-5f + 1e-4f * std::abs(g_both[i])) << i;
  }
  EXPECT_NEAR(out_both.loss_sum, out.loss_sum, 1e-5 * out.loss_sum);
  EXPECT_EQ(out_both.correct, out.correct);
  EXPECT_EQ(out_both.count, out.count);
}

TEST(Mlp, ParameterCountCoversEveryWeightAndBias) {
  const Mlp mlp({784, 256, 128, 10}, 0);
  EXPECT_EQ(mlp.parameter_count(), 784u * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10);
  EXPECT_EQ(mlp.parameters().size(), mlp.parameter_count());
  EXPECT_EQ(mlp.layer_sizes(), (std::vector<std::size_t>{784, 256, 128, 10}));
  EXPECT_EQ(mlp.layer_count(), 3u);
}

TEST(Mlp, SameSeedGivesIdenticalParametersAndAnotherSeedDiffers) {
  const Mlp a({20, 10, 3}, 42), b({20, 10, 3}, 42), c({20, 10, 3}, 43);
  EXPECT_THAT(a.parameters(), ::testing::ElementsAreArray(b.parameters()));
  EXPECT_FALSE(std::ranges::equal(a.parameters(), c.parameters()));
}

TEST(Mlp, InitialisationIsPinned) {
  // Box-Muller over Philox, computed in double: the same floats on every platform.
  const Mlp mlp({4, 3, 2}, 7);
  const auto p = mlp.parameters();
  const std::vector<float> first(p.begin(), p.begin() + 4);
  EXPECT_THAT(first, ::testing::Pointwise(::testing::FloatEq(), {0.000206169294f, -0.215559378f,
                                                                 1.26484251f, 0.755099893f}));
}

TEST(Mlp, HeInitialisationHasVarianceTwoOverFanInAndZeroBiases) {
  const Mlp mlp({784, 256, 10}, 3);
  const auto weights = mlp.parameters().subspan(0, 784 * 256);
  double sum = 0.0, squares = 0.0;
  for (float w : weights) {
    sum += w;
    squares += static_cast<double>(w) * w;
  }
  const double n = static_cast<double>(weights.size());
  const double mean = sum / n;
  const double stddev = std::sqrt(squares / n - mean * mean);
  const double expected = std::sqrt(2.0 / 784.0);
  EXPECT_NEAR(mean, 0.0, 5.0 * expected / std::sqrt(n));
  EXPECT_NEAR(stddev, expected, 0.01 * expected);
  EXPECT_THAT(mlp.parameters().subspan(784 * 256, 256), ::testing::Each(0.0f));
}

TEST(Mlp, CopiesAreIndependentReplicas) {
  const Mlp original({5, 4, 3}, 1);
  const auto batch = random_batch(6, 5, 3, 8);
  const auto before = original.valid_step(batch);
  const std::vector<float> params(original.parameters().begin(), original.parameters().end());

  Mlp copy = original;
  ASSERT_NE(copy.parameters().data(), original.parameters().data());
  copy.parameters()[0] += 1.0f;
  std::vector<float> gradients(copy.parameter_count());
  copy.train_step(random_batch(9, 5, 3, 9), gradients);  // grows the copy's scratch

  EXPECT_THAT(original.parameters(), ::testing::ElementsAreArray(params));
  EXPECT_EQ(original.valid_step(batch).loss_sum, before.loss_sum);
  EXPECT_NE(copy.valid_step(batch).loss_sum, before.loss_sum);
}

TEST(Mlp, GradientsAreTheSameBitsAtEveryAddressOfTheGradientBuffer) {
  // The learner's gradient buffer sits wherever the heap put it, which other threads change
  // from run to run; Eigen's column sums gave the bias gradients other last bits where the
  // buffer was aligned otherwise, and a training run was not reproducible under load.
  Mlp model({24, 40, 37}, 5);
  const auto batch = random_batch(16, 24, 37, 6);
  std::vector<float> storage(model.parameter_count() + 16);
  std::vector<float> reference;
  for (std::size_t offset = 0; offset < 16; ++offset) {
    const auto gradients = std::span(storage).subspan(offset, model.parameter_count());
    std::ranges::fill(gradients, std::numeric_limits<float>::quiet_NaN());
    const auto out = model.train_step(batch, gradients);
    EXPECT_GT(out.loss_sum, 0.0);
    if (offset == 0) {
      reference.assign(gradients.begin(), gradients.end());
    } else {
      EXPECT_TRUE(std::ranges::equal(gradients, reference,
                                     [](float a, float b) {
                                       return std::bit_cast<std::uint32_t>(a) ==
                                              std::bit_cast<std::uint32_t>(b);
                                     }))
          << "gradient buffer " << offset << " floats further";
    }
  }
}

TEST(Mlp, ValidStepLeavesParametersUnchanged) {
  const Mlp mlp({5, 4, 3}, 1);
  const std::vector<float> params(mlp.parameters().begin(), mlp.parameters().end());
  const auto out = mlp.valid_step(random_batch(6, 5, 3, 8));
  EXPECT_EQ(out.count, 6u);
  EXPECT_GT(out.loss_sum, 0.0);
  EXPECT_THAT(mlp.parameters(), ::testing::ElementsAreArray(params));
}

TEST(Mlp, LearnsASeparableThreeClassProblem) {
  // Three well-separated clusters in the plane, 60 points each.
  constexpr std::size_t kPerClass = 60, kClasses = 3;
  const float centres[kClasses][2] = {{2.0f, 0.0f}, {-1.0f, 1.7f}, {-1.0f, -1.7f}};
  stoke::SampleRng rng(3, 0, 0);
  std::vector<std::vector<float>> rows;
  std::vector<std::int32_t> labels;
  for (std::size_t i = 0; i < kPerClass * kClasses; ++i) {
    const auto label = i % kClasses;
    rows.push_back({centres[label][0] + 1.2f * (rng.uniform() - 0.5f),
                    centres[label][1] + 1.2f * (rng.uniform() - 0.5f)});
    labels.push_back(static_cast<std::int32_t>(label));
  }
  const auto batch = make_batch(std::move(rows), std::move(labels));
  const double n = static_cast<double>(batch.size());

  Mlp mlp({2, 16, 3}, 1);
  stoke::Sgd sgd(0.1f, 0.9f);
  std::vector<float> gradients(mlp.parameter_count());
  const auto initial = mlp.valid_step(batch);
  for (int step = 0; step < 100; ++step) {
    mlp.train_step(batch, gradients);
    sgd.step(mlp.parameters(), gradients, static_cast<float>(0.1 / n));  // mean gradient
  }
  const auto trained = mlp.valid_step(batch);
  EXPECT_GE(static_cast<double>(trained.correct) / n, 0.95);
  EXPECT_LT(trained.loss_sum, 0.25 * initial.loss_sum);
}

TEST(Mlp, RefusesBatchesAndBuffersOfTheWrongShape) {
  Mlp mlp({5, 4, 3}, 1);
  std::vector<float> gradients(mlp.parameter_count());
  std::vector<float> short_gradients(mlp.parameter_count() - 1);
  EXPECT_THROW(mlp.train_step(random_batch(2, 5, 3, 1), short_gradients), stoke::UsageError);
  EXPECT_THROW(mlp.train_step(random_batch(2, 6, 3, 1), gradients), stoke::UsageError);
  EXPECT_THROW(mlp.valid_step(make_batch({{0, 0, 0, 0, 0}}, {3})), stoke::UsageError);
  EXPECT_THROW(mlp.valid_step(make_batch({{0, 0, 0, 0, 0}}, {-1})), stoke::UsageError);
  EXPECT_THROW(mlp.valid_step(make_batch({{0, 0, 0, 0, 0}}, {0}, 2)), stoke::UsageError);
  auto no_indices = random_batch(2, 5, 3, 1);
  no_indices.indices.clear();
  EXPECT_THROW(mlp.valid_step(no_indices), stoke::UsageError);
  EXPECT_THROW(Mlp({5}, 1), stoke::UsageError);
  EXPECT_THROW(Mlp({5, 0, 3}, 1), stoke::UsageError);
}

TEST(Mlp, PaddingRowLabelsAreNotChecked) {
  const Mlp mlp({5, 4, 3}, 1);
  EXPECT_EQ(mlp.valid_step(make_batch({{0, 0, 0, 0, 0}, {1, 1, 1, 1, 1}}, {0, 99}, 1)).count, 1u);
}

}  // namespace
