#include "common/enum_names.h"

#include <gtest/gtest.h>

#include "scheduler/outcome.h"
#include "scheduler/request.h"
#include "scheduler/scheduler_config.h"

namespace mogserve {
namespace {

enum class Fruit { kApple, kPear, kPlum, kUnlisted };

constexpr EnumName<Fruit> kFruitNames[] = {
    {Fruit::kApple, "apple"}, {Fruit::kPear, "pear"}, {Fruit::kPlum, "plum"}};

TEST(EnumNamesTest, NameOfAndFindByNameAreInverse) {
  for (const EnumName<Fruit>& e : kFruitNames) {
    EXPECT_STREQ(NameOf(kFruitNames, e.value), e.name);
    EXPECT_EQ(FindByName(kFruitNames, e.name), e.value);
  }
  EXPECT_STREQ(NameOf(kFruitNames, Fruit::kUnlisted), "?");
  EXPECT_STREQ(NameOf(kFruitNames, Fruit::kUnlisted, "unknown"), "unknown");
  EXPECT_EQ(FindByName(kFruitNames, "Apple"), std::nullopt);  // exact, case-sensitive
  EXPECT_EQ(FindByName(kFruitNames, ""), std::nullopt);
  static_assert(NameOf(kFruitNames, Fruit::kPear)[0] == 'p', "usable in constant expressions");
}

TEST(EnumNamesTest, ParseNameNamesTheFieldTheValueAndWhatIsAllowed) {
  EXPECT_EQ(NameList(kFruitNames), "apple, pear, plum");
  EXPECT_EQ(NameList(kFruitNames, "|"), "apple|pear|plum");
  StatusOr<Fruit> plum = ParseName(kFruitNames, "--fruit", "plum");
  ASSERT_TRUE(plum.ok());
  EXPECT_EQ(*plum, Fruit::kPlum);
  StatusOr<Fruit> bad = ParseName(kFruitNames, "--fruit", "kiwi");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "--fruit 'kiwi' is not one of: apple, pear, plum");
}

// The project's tables: every name parses back to its value, and the names the API, the
// metrics and the flags document stay what they were.
TEST(EnumNamesTest, ProjectNamesRoundTrip) {
  for (auto p : {scheduler::Policy::kNaive, scheduler::Policy::kDynamic,
                 scheduler::Policy::kContinuous, scheduler::Policy::kAdaptive}) {
    StatusOr<scheduler::Policy> parsed = scheduler::ParsePolicy(scheduler::PolicyName(p));
    ASSERT_TRUE(parsed.ok()) << scheduler::PolicyName(p);
    EXPECT_EQ(*parsed, p);
  }
  for (int i = 0; i < scheduler::kNumPriorities; ++i) {
    const auto p = static_cast<scheduler::Priority>(i);
    EXPECT_EQ(scheduler::ParsePriority(scheduler::PriorityName(p)), p);
  }
  EXPECT_STREQ(scheduler::PriorityName(scheduler::Priority::kBulk), "bulk");
  EXPECT_STREQ(scheduler::OutcomeName(scheduler::Outcome::kRejectedQueueFull),
               "rejected_queue_full");
  EXPECT_STREQ(StatusCodeName(StatusCode::kInvalidData), "invalid_data");
  EXPECT_STREQ(StatusCodeName(StatusCode::kUnimplemented), "unimplemented");
  EXPECT_FALSE(scheduler::ParsePolicy("fifo").ok());
  EXPECT_EQ(scheduler::ParsePriority("urgent"), std::nullopt);
}

}  // namespace
}  // namespace mogserve
