#include "common/enum_names.h"

#include <gtest/gtest.h>

#include <type_traits>

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

// The indexed form: the same answers as the pairs, NameOf by index, a value past kLast (or
// before 0) gets the fallback, and a list of the wrong length does not compile.
enum class Berry { kStraw, kRasp, kBlue, kUnnamed };
enum class Signed : int { kMinus = -1, kZero, kOne };

constexpr EnumNames<Berry, Berry::kBlue> kBerryNames{{"straw", "rasp", "blue"}};

TEST(EnumNamesTest, IndexedNamesAnswerLikeTheirPairs) {
  for (const EnumName<Berry>& e : kBerryNames.table()) {
    EXPECT_STREQ(NameOf(kBerryNames, e.value), e.name);
    EXPECT_EQ(FindByName(kBerryNames, e.name), e.value);
  }
  EXPECT_STREQ(NameOf(kBerryNames, Berry::kRasp), "rasp");
  EXPECT_STREQ(NameOf(kBerryNames, Berry::kUnnamed), "?");
  EXPECT_STREQ(NameOf(kBerryNames, Berry::kUnnamed, "none"), "none");
  EXPECT_EQ(FindByName(kBerryNames, "Straw"), std::nullopt);
  EXPECT_EQ(NameList(kBerryNames), "straw, rasp, blue");
  EXPECT_EQ(NameList(kBerryNames, "|"), "straw|rasp|blue");
  StatusOr<Berry> blue = ParseName(kBerryNames, "--berry", "blue");
  ASSERT_TRUE(blue.ok());
  EXPECT_EQ(*blue, Berry::kBlue);
  StatusOr<Berry> bad = ParseName(kBerryNames, "--berry", "goji");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "--berry 'goji' is not one of: straw, rasp, blue");

  constexpr EnumNames<Signed, Signed::kOne> kSignedNames{{"zero", "one"}};
  EXPECT_STREQ(NameOf(kSignedNames, Signed::kMinus), "?");
  EXPECT_STREQ(NameOf(kSignedNames, Signed::kOne), "one");

  static_assert(NameOf(kBerryNames, Berry::kBlue)[0] == 'b', "usable in constant expressions");
  static_assert(*FindByName(kBerryNames, "rasp") == Berry::kRasp);
  using Names = const char* const(&)[3];
  using TooFew = const char* const(&)[2];
  using TooMany = const char* const(&)[4];
  static_assert(std::is_constructible_v<EnumNames<Berry, Berry::kBlue>, Names>);
  static_assert(!std::is_constructible_v<EnumNames<Berry, Berry::kBlue>, TooFew>);
  static_assert(!std::is_constructible_v<EnumNames<Berry, Berry::kBlue>, TooMany>);
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
  const char* const outcomes[scheduler::kNumOutcomes] = {
      "done",   "rejected_queue_full", "rejected_deadline", "rejected_bad_input",
      "failed", "cancelled",           "superseded"};
  for (int i = 0; i < scheduler::kNumOutcomes; ++i) {
    EXPECT_STREQ(scheduler::OutcomeName(static_cast<scheduler::Outcome>(i)), outcomes[i]);
  }
  EXPECT_STREQ(StatusCodeName(StatusCode::kInvalidData), "invalid_data");
  EXPECT_STREQ(StatusCodeName(StatusCode::kUnimplemented), "unimplemented");
  EXPECT_STREQ(StatusCodeName(StatusCode::kOk), "ok");
  EXPECT_STREQ(StatusCodeName(static_cast<StatusCode>(99)), "unknown");
  EXPECT_FALSE(scheduler::ParsePolicy("fifo").ok());
  EXPECT_EQ(scheduler::ParsePriority("urgent"), std::nullopt);
}

}  // namespace
}  // namespace mogserve
