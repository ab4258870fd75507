// stoke's errors: every one derives from stoke::Error; a misuse of the API is a UsageError
// (a call in the wrong state a StateError), caught as stoke::Error and as std::exception,
// carrying the place in stoke that raised it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <exception>
#include <optional>
#include <string>
#include <type_traits>

#include <stoke/stoke.hpp>

#include "stoke_test_files.hpp"
#include "stoke_test_support.hpp"

namespace {

using stoke::cpu::Backend;
using stoke::testing::IotaDataset;
using stoke::testing::ItemsBatcher;
using stoke::testing::message_of;

static_assert(std::is_base_of_v<stoke::Error, stoke::UsageError>);
static_assert(std::is_base_of_v<stoke::UsageError, stoke::StateError>);
static_assert(std::is_base_of_v<stoke::Error, stoke::InputError>);

TEST(Errors, AMisuseIsAUsageErrorCaughtAsStokeErrorWithWhereStokeRaisedIt) {
  try {
    (void)stoke::EpochPlan(10, 0, stoke::Remainder::pad);
    FAIL() << "expected stoke::UsageError";
  } catch (const stoke::Error& error) {
    EXPECT_NE(dynamic_cast<const stoke::UsageError*>(&error), nullptr);
    EXPECT_EQ(dynamic_cast<const stoke::StateError*>(&error), nullptr);
    EXPECT_STREQ(error.what(), "stoke: batch size must be at least 1");
    EXPECT_THAT(error.where().file_name(), ::testing::EndsWith("stoke/data/epoch_plan.hpp"));
    EXPECT_GT(error.where().line(), 0u);
  }
}

TEST(Errors, AMisuseIsCaughtAsStdExceptionThroughItsOneBase) {
  EXPECT_THROW((void)stoke::EpochPlan(10, 0, stoke::Remainder::pad), std::exception);
  EXPECT_THROW((void)stoke::EpochPlan(10, 0, stoke::Remainder::pad), std::runtime_error);
}

TEST(Errors, ACallInTheWrongStateIsAStateErrorAndAUsageError) {
  auto loader = stoke::DataLoaderBuilder<Backend, ItemsBatcher>(ItemsBatcher{})
                    .batch_size(2)
                    .num_workers(2)
                    .build(IotaDataset{20});
  auto first = loader.iter();
  auto it = first.begin();
  auto second = loader.iter();
  try {
    ++it;
    FAIL() << "expected stoke::StateError";
  } catch (const stoke::UsageError& error) {
    EXPECT_NE(dynamic_cast<const stoke::StateError*>(&error), nullptr);
    EXPECT_THAT(error.what(), ::testing::HasSubstr("superseded by a later iter()"));
    EXPECT_THAT(error.where().file_name(), ::testing::EndsWith("worker_pool_core.hpp"));
  }
}

TEST(Errors, ADeviceCountInTheEnvironmentThatIsNoCountIsAnInputError) {
  const char* set = std::getenv("STOKE_CPU_DEVICES");
  const std::optional<std::string> saved = set ? std::optional<std::string>(set) : std::nullopt;
  ::setenv("STOKE_CPU_DEVICES", "two", 1);
  const std::string message = message_of<stoke::InputError>([] { (void)Backend::devices(); });
  ::setenv("STOKE_CPU_DEVICES", "3", 1);
  const std::size_t three = Backend::devices().size();
  if (saved) {
    ::setenv("STOKE_CPU_DEVICES", saved->c_str(), 1);
  } else {
    ::unsetenv("STOKE_CPU_DEVICES");
  }
  EXPECT_EQ(message, "stoke: the environment variable STOKE_CPU_DEVICES is 'two', not a count");
  EXPECT_EQ(three, 3u);
}

TEST(Errors, ADataErrorNamesItsActivityByTheNewNameAndByTheOldNameStage) {
  const stoke::DataError by_new({.index = 4, .worker = "worker 1", .activity = "get"}, "bad");
  EXPECT_EQ(by_new.context().activity, "get");
  EXPECT_EQ(by_new.context().stage, "get");
  EXPECT_THAT(by_new.what(), ::testing::HasSubstr("stoke: get failed at dataset index 4"));
  // Code written against the old name still names the activity.
  const stoke::DataError by_old({.index = 5, .stage = "batch", .worker = "caller"}, "bad");
  EXPECT_EQ(by_old.context().activity, "batch");
  EXPECT_EQ(by_old.context().stage, "batch");
  EXPECT_THAT(by_old.what(), ::testing::HasSubstr("stoke: batch failed at dataset index 5"));
  const stoke::TimeoutError timeout({.stage = "get_many"}, "late");
  EXPECT_EQ(timeout.context().activity, "get_many");
}

}  // namespace
