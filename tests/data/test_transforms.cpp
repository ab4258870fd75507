// Tests of the dataset transforms and their pipe.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <range/v3/algorithm/sort.hpp>
#include <range/v3/range/conversion.hpp>
#include <range/v3/view/iota.hpp>
#include <range/v3/view/transform.hpp>
#include <stoke/core/rng.hpp>
#include <stoke/data/dataset.hpp>
#include <stoke/data/sources.hpp>
#include <stoke/data/transforms.hpp>

#include "stoke_test_files.hpp"

namespace {

using stoke::testing::message_of;

using testing::AllOf;
using testing::ElementsAre;
using testing::HasSubstr;

using Ints = stoke::InMemoryDataset<int>;

/// Doubles a sample.
struct Twice {
  int operator()(int x) const { return 2 * x; }
};

/// Records which index a sample was read at: `100 * x + index`.
struct WithIndex {
  std::size_t operator()(int x, std::size_t index) const {
    return 100 * static_cast<std::size_t>(x) + index;
  }
};

/// Whether `dataset | adaptor` is well-formed.
template <class D, class A>
concept Pipeable = requires(D dataset, A adaptor) { dataset | adaptor; };

static_assert(stoke::Dataset<stoke::MapDataset<Ints, Twice>>);
static_assert(stoke::Dataset<stoke::MapDataset<Ints, WithIndex>>);
static_assert(stoke::Dataset<stoke::PartialDataset<Ints>>);
static_assert(stoke::Dataset<stoke::ShuffledDataset<Ints>>);
static_assert(stoke::Dataset<stoke::SampledDataset<Ints>>);
static_assert(stoke::Dataset<stoke::ComposedDataset<Ints, stoke::MapDataset<Ints, Twice>>>);
static_assert(stoke::Dataset<stoke::ConcatDataset<stoke::PartialDataset<Ints>>>);
static_assert(stoke::Dataset<stoke::WindowsDataset<Ints>>);
static_assert(stoke::Dataset<stoke::WindowsDataset<stoke::MmapRecordDataset>>);
static_assert(std::is_same_v<stoke::dataset_item_t<stoke::WindowsDataset<Ints>>, std::vector<int>>);
static_assert(
    std::is_same_v<stoke::dataset_item_t<stoke::MapDataset<Ints, WithIndex>>, std::size_t>);
static_assert(Pipeable<Ints, decltype(stoke::map(Twice{}))>);
static_assert(!Pipeable<Ints, decltype(stoke::map([](const std::string& s) { return s; }))>);
static_assert(!Pipeable<int, decltype(stoke::partial(0, 1))>);

/// The dataset `0, 1, ..., n - 1`.
Ints iota_dataset(int n) {
  return Ints(ranges::views::iota(0, n) | ranges::to<std::vector>());
}

/// Every item of `dataset`, in index order.
template <stoke::Dataset S>
std::vector<stoke::dataset_item_t<S>> items_of(const S& dataset) {
  return ranges::views::iota(std::size_t{0}, dataset.size()) |
         ranges::views::transform(
             [&](std::size_t i) -> stoke::dataset_item_t<S> { return dataset.get(i); }) |
         ranges::to<std::vector>();
}

/// `items` sorted.
template <class T>
std::vector<T> sorted(std::vector<T> items) {
  ranges::sort(items);
  return items;
}

// ---- map ---------------------------------------------------------------------------------

TEST(Map, AppliesTheFunctionToEveryItem) {
  const auto mapped = iota_dataset(5) | stoke::map(Twice{});
  EXPECT_EQ(mapped.size(), 5u);
  EXPECT_THAT(items_of(mapped), ElementsAre(0, 2, 4, 6, 8));
}

TEST(Map, PassesItsOwnIndexToAFunctionThatTakesOne) {
  // Over a shuffled dataset the sample and the index differ, so a swapped or wrong index shows.
  const auto inner = iota_dataset(20) | stoke::shuffled(3);
  const auto mapped = inner | stoke::map(WithIndex{});
  for (std::size_t i = 0; i < mapped.size(); ++i) {
    EXPECT_EQ(mapped.get(i), 100 * static_cast<std::size_t>(inner.get(i)) + i);
  }
}

TEST(Map, ReturnsReferencesThatTheFunctionReturns) {
  using Pair = std::pair<int, std::string>;
  const stoke::InMemoryDataset<Pair> pairs({{1, "one"}, {2, "two"}});
  const auto names =
      pairs | stoke::map([](const Pair& p) -> const std::string& { return p.second; });
  static_assert(std::is_same_v<decltype(names.get(0)), const std::string&>);
  EXPECT_EQ(&names.get(1), &pairs.get(1).second);
  EXPECT_EQ(names.get(0), "one");
}

// ---- partial -----------------------------------------------------------------------------

TEST(Partial, SelectsTheSubRangeRenumberedFromZero) {
  const auto part = iota_dataset(10) | stoke::partial(3, 7);
  EXPECT_THAT(items_of(part), ElementsAre(3, 4, 5, 6));
  EXPECT_EQ(part.inner_index(0), 3u);
}

TEST(Partial, ClampsTheEndToTheSize) {
  EXPECT_THAT(items_of(iota_dataset(10) | stoke::partial(8, 50)), ElementsAre(8, 9));
  EXPECT_EQ((iota_dataset(10) | stoke::partial(10, 50)).size(), 0u);
}

TEST(Partial, RejectsABeginPastTheEnd) {
  EXPECT_THAT(
      message_of<stoke::UsageError>([] { (void)(iota_dataset(10) | stoke::partial(6, 5)); }),
      AllOf(HasSubstr("begin 6"), HasSubstr("end 5")));
  EXPECT_THAT(message_of<stoke::UsageError>([] { (void)(iota_dataset(4) | stoke::partial(6, 9)); }),
              AllOf(HasSubstr("begin 6"), HasSubstr("end 9"), HasSubstr("size 4")));
}

TEST(Partial, OutOfRangeGetNamesTheIndexAndTheSize) {
  // The inner dataset holds index 3 + 4 = 7, so only the view's own check can catch this.
  const auto part = iota_dataset(10) | stoke::partial(3, 7);
  EXPECT_THAT(message_of<stoke::UsageError>([&] { (void)part.get(4); }),
              AllOf(HasSubstr("PartialDataset"), HasSubstr("index 4"), HasSubstr("size 4")));
}

// ---- shuffled ----------------------------------------------------------------------------

TEST(Shuffled, IsAPermutationOfTheInnerItems) {
  for (const int n : {0, 1, 2, 7, 1000}) {
    const auto shuffled = iota_dataset(n) | stoke::shuffled(42);
    ASSERT_EQ(shuffled.size(), static_cast<std::size_t>(n));
    EXPECT_EQ(sorted(items_of(shuffled)), items_of(iota_dataset(n))) << "size " << n;
  }
}

TEST(Shuffled, DiffersFromTheIdentityOrder) {
  const auto shuffled = iota_dataset(1000) | stoke::shuffled(42);
  std::size_t fixed_points = 0;
  for (std::size_t i = 0; i < shuffled.size(); ++i) {
    fixed_points += static_cast<std::size_t>(shuffled.get(i)) == i ? 1 : 0;
  }
  EXPECT_LT(fixed_points, 20u);  // a random permutation has about one
}

TEST(Shuffled, IsDeterministicForASeedAndDependsOnIt) {
  const auto dataset = iota_dataset(500);
  const auto first = items_of(dataset | stoke::shuffled(7));
  EXPECT_EQ(items_of(dataset | stoke::shuffled(7)), first);
  EXPECT_NE(items_of(dataset | stoke::shuffled(8)), first);
}

// ---- sampled -----------------------------------------------------------------------------

TEST(Sampled, WithoutReplacementCoversEveryItemOncePerPass) {
  constexpr int kSize = 10;
  const auto samples =
      items_of(iota_dataset(kSize) | stoke::sampled(35, 5, stoke::Replacement::without));
  ASSERT_EQ(samples.size(), 35u);
  const auto all = items_of(iota_dataset(kSize));
  std::vector<std::vector<int>> passes;
  for (std::size_t pass = 0; pass < 3; ++pass) {
    passes.emplace_back(samples.begin() + pass * kSize, samples.begin() + (pass + 1) * kSize);
    EXPECT_EQ(sorted(passes.back()), all) << "pass " << pass;
  }
  EXPECT_NE(passes[0], passes[1]);  // each pass is a new permutation
  EXPECT_NE(passes[1], passes[2]);
  const std::vector<int> last(samples.begin() + 30, samples.end());
  EXPECT_EQ(std::set<int>(last.begin(), last.end()).size(), 5u);  // no repeats in a pass
  std::map<int, int> counts;
  for (const int sample : samples) ++counts[sample];
  for (const auto& [sample, count] : counts) EXPECT_TRUE(count == 3 || count == 4) << sample;
}

TEST(Sampled, WithReplacementStaysInRangeAndIsDeterministic) {
  const auto dataset = iota_dataset(7);
  const auto draws = items_of(dataset | stoke::sampled(1000, 9, stoke::Replacement::with));
  ASSERT_EQ(draws.size(), 1000u);
  EXPECT_TRUE(std::ranges::all_of(draws, [](int d) { return d >= 0 && d < 7; }));
  EXPECT_EQ(std::set<int>(draws.begin(), draws.end()).size(), 7u);  // each draw is its own
  EXPECT_EQ(items_of(dataset | stoke::sampled(1000, 9, stoke::Replacement::with)), draws);
  EXPECT_NE(items_of(dataset | stoke::sampled(1000, 10, stoke::Replacement::with)), draws);
}

TEST(Sampled, WithReplacementDrawsEveryItemAboutEquallyOften) {
  const auto draws =
      items_of(iota_dataset(10) | stoke::sampled(20000, 1, stoke::Replacement::with));
  std::vector<int> counts(10, 0);
  for (const int d : draws) ++counts[static_cast<std::size_t>(d)];
  for (std::size_t i = 0; i < counts.size(); ++i) {
    EXPECT_GT(counts[i], 1800) << i;  // expected 2000, standard deviation about 42
    EXPECT_LT(counts[i], 2200) << i;
  }
}

TEST(Sampled, UniformDrawsCoverBoundsWiderThan32Bits) {
  const std::uint64_t bound = (std::uint64_t{3} << 32) + 5;
  std::size_t above_32_bits = 0;
  for (std::uint64_t i = 0; i < 1000; ++i) {
    stoke::SampleRng rng(11, 0, i);
    const std::uint64_t draw = stoke::detail::uniform_below(rng, bound);
    ASSERT_LT(draw, bound);
    above_32_bits += draw > 0xFFFF'FFFFu ? 1 : 0;
  }
  EXPECT_GT(above_32_bits, 600u);  // about 3/4 of the draws
}

TEST(Sampled, RejectsDrawingFromAnEmptyDataset) {
  EXPECT_THAT(message_of<stoke::UsageError>(
                  [] { (void)(iota_dataset(0) | stoke::sampled(3, 1, stoke::Replacement::with)); }),
              AllOf(HasSubstr("3 samples"), HasSubstr("empty")));
  EXPECT_EQ((iota_dataset(0) | stoke::sampled(0, 1, stoke::Replacement::without)).size(), 0u);
}

// ---- compose and concat ------------------------------------------------------------------

TEST(Compose, ConcatenatesComponentsOfDifferentTypesAcrossBoundaries) {
  const auto composed =
      stoke::compose(iota_dataset(3), iota_dataset(0), iota_dataset(2) | stoke::map(Twice{}),
                     iota_dataset(10) | stoke::partial(5, 9));
  static_assert(std::is_same_v<decltype(composed.get(0)), int>);
  EXPECT_EQ(composed.size(), 9u);
  EXPECT_THAT(items_of(composed), ElementsAre(0, 1, 2, 0, 2, 5, 6, 7, 8));
  EXPECT_THAT(message_of<stoke::UsageError>([&] { (void)composed.get(9); }),
              AllOf(HasSubstr("ComposedDataset"), HasSubstr("index 9"), HasSubstr("size 9")));
}

TEST(Compose, ReturnsReferencesWhenEveryPartDoes) {
  const Ints a(std::vector<int>{1, 2});
  const Ints b(std::vector<int>{3});
  const auto composed = stoke::compose(a, b);
  static_assert(std::is_same_v<decltype(composed.get(0)), const int&>);
  EXPECT_EQ(&composed.get(1), &a.get(1));
  EXPECT_EQ(&composed.get(2), &b.get(0));
}

TEST(Concat, ConcatenatesManyComponentsOfOneTypeAndSharesThem) {
  const auto dataset = iota_dataset(20);
  std::vector<stoke::PartialDataset<Ints>> components;
  for (const std::size_t begin : {15u, 0u, 7u, 7u})
    components.push_back(dataset | stoke::partial(begin, begin + 2));
  components.push_back(dataset | stoke::partial(3, 3));
  const auto concatenated = stoke::concat(components);
  EXPECT_THAT(items_of(concatenated), ElementsAre(15, 16, 0, 1, 7, 8, 7, 8));
  const auto copy = concatenated;
  EXPECT_EQ(&copy.components(), &concatenated.components());
  EXPECT_THROW((void)concatenated.get(8), stoke::UsageError);
}

// ---- windows -----------------------------------------------------------------------------

TEST(Windows, HoldConsecutiveSamplesStrideApart) {
  const auto windows = iota_dataset(10) | stoke::windows(3, 2);
  EXPECT_THAT(items_of(windows), ElementsAre(ElementsAre(0, 1, 2), ElementsAre(2, 3, 4),
                                             ElementsAre(4, 5, 6), ElementsAre(6, 7, 8)));
}

TEST(Windows, CountOnlyWholeWindowsAtTheEdges) {
  EXPECT_THAT(items_of(iota_dataset(3) | stoke::windows(3, 5)), ElementsAre(ElementsAre(0, 1, 2)));
  EXPECT_EQ((iota_dataset(2) | stoke::windows(3, 1)).size(), 0u);
  EXPECT_EQ((iota_dataset(0) | stoke::windows(1, 1)).size(), 0u);
  EXPECT_THAT(items_of(iota_dataset(10) | stoke::windows(1, 3)),
              ElementsAre(ElementsAre(0), ElementsAre(3), ElementsAre(6), ElementsAre(9)));
  const auto windows = iota_dataset(9) | stoke::windows(3, 3);
  EXPECT_THAT(windows.get(2), ElementsAre(6, 7, 8));
  EXPECT_THAT(message_of<stoke::UsageError>([&] { (void)windows.get(3); }),
              AllOf(HasSubstr("index 3"), HasSubstr("size 3")));
}

TEST(Windows, RejectsAZeroSizeOrStride) {
  EXPECT_THAT(message_of<stoke::UsageError>([] { (void)(iota_dataset(5) | stoke::windows(0, 1)); }),
              AllOf(HasSubstr("size 0"), HasSubstr("stride 1")));
  EXPECT_THAT(message_of<stoke::UsageError>([] { (void)(iota_dataset(5) | stoke::windows(2, 0)); }),
              AllOf(HasSubstr("size 2"), HasSubstr("stride 0")));
}

// ---- the pipe ----------------------------------------------------------------------------

TEST(Pipe, ChainsTransformsLeftToRight) {
  const auto pipeline =
      iota_dataset(100) | stoke::map(Twice{}) | stoke::partial(10, 20) | stoke::windows(2, 4);
  EXPECT_THAT(items_of(pipeline),
              ElementsAre(ElementsAre(20, 22), ElementsAre(28, 30), ElementsAre(36, 38)));
  const auto shuffled_then_cut = iota_dataset(100) | stoke::shuffled(1) | stoke::partial(0, 10);
  const auto cut_then_shuffled = iota_dataset(100) | stoke::partial(0, 10) | stoke::shuffled(1);
  EXPECT_TRUE(std::ranges::all_of(items_of(cut_then_shuffled), [](int x) { return x < 10; }));
  EXPECT_NE(sorted(items_of(shuffled_then_cut)), items_of(iota_dataset(10)));
}

TEST(Pipe, ComposesAdaptorsBeforeTheyMeetADataset) {
  const auto adaptor = stoke::map(Twice{}) | stoke::partial(1, 4) | stoke::map(WithIndex{});
  const auto piped = iota_dataset(10) | adaptor;
  EXPECT_THAT(items_of(piped), ElementsAre(200, 401, 602));
  static_assert(!Pipeable<stoke::InMemoryDataset<std::string>, decltype(adaptor)>);
}

TEST(Pipe, HoldsACopyOfTheDatasetThatSharesItsStorage) {
  const auto dataset = iota_dataset(4);
  const auto view = dataset | stoke::partial(1, 3);
  EXPECT_EQ(&view.get(0), &dataset.get(1));
  EXPECT_EQ(&view.inner().items(), &dataset.items());
}

}  // namespace
