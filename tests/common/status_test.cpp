#include "mogserve/status.h"

#include <gtest/gtest.h>

#include <memory>

namespace mogserve {
namespace {

StatusOr<int> Half(int v) {
  if (v % 2 != 0) return InvalidArgument("odd: " + std::to_string(v));
  return v / 2;
}

StatusOr<int> Quarter(int v) {
  MOGSERVE_ASSIGN_OR_RETURN(int half, Half(v));
  MOGSERVE_ASSIGN_OR_RETURN(int quarter, Half(half));
  return quarter;
}

Status CheckQuarter(int v) {
  MOGSERVE_RETURN_IF_ERROR(Quarter(v).status());
  return Status::Ok();
}

TEST(StatusTest, CodesHaveStableNames) {
  EXPECT_EQ(Status().ToString(), "ok");
  EXPECT_EQ(InvalidData("bad").ToString(), "invalid_data: bad");
  EXPECT_STREQ(StatusCodeName(StatusCode::kResourceExhausted), "resource_exhausted");
  EXPECT_STREQ(StatusCodeName(StatusCode::kNotFound), "not_found");
  EXPECT_STREQ(StatusCodeName(StatusCode::kUnsupported), "unsupported");
  EXPECT_EQ(Unavailable("no NVIDIA driver").ToString(), "unavailable: no NVIDIA driver");
  EXPECT_EQ(Unimplemented("x").ToString(), "unimplemented: x");
}

TEST(StatusTest, MacrosPropagateTheFirstError) {
  ASSERT_TRUE(Quarter(8).ok());
  EXPECT_EQ(*Quarter(8), 2);
  EXPECT_EQ(Quarter(6).status().message(), "odd: 3");  // fails in the second step
  EXPECT_EQ(Quarter(5).status().message(), "odd: 5");  // fails in the first step
  EXPECT_TRUE(CheckQuarter(12).ok());
  EXPECT_EQ(CheckQuarter(10).code(), StatusCode::kInvalidArgument);
}

TEST(StatusTest, StatusOrHoldsMoveOnlyValues) {
  StatusOr<std::unique_ptr<int>> p = std::make_unique<int>(5);
  ASSERT_TRUE(p.ok());
  std::unique_ptr<int> owned = std::move(p).value();
  EXPECT_EQ(*owned, 5);
}

}  // namespace
}  // namespace mogserve
