// What the CUDA backend accepts of the cuDNN loaded at run time (engine/cuda/cudnn_version.h),
// without a GPU: older than the headers is a warning, older than 9.0 or another major a refusal.
#include "engine/cuda/cudnn_version.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace mogserve::engine::cuda {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(CudnnVersionTest, VersionText) {
  EXPECT_EQ(CudnnVersionText(91900), "9.19.0");
  EXPECT_EQ(CudnnVersionText(90102), "9.1.2");
  EXPECT_EQ(CudnnVersionText(8907), "8.9.7");  // cuDNN 8 numbered major·1000
  EXPECT_EQ(CudnnVersionText(100000), "10.0.0");
}

TEST(CudnnVersionTest, OlderThanTheHeadersIsAWarningOnly) {
  for (size_t loaded : {size_t{91900}, size_t{91901}, size_t{92000}}) {
    auto r = CheckCudnnVersion(loaded, 91900);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(*r, "") << loaded;
  }
  for (size_t loaded : {size_t{90000}, size_t{90100}, size_t{91200}, size_t{91802}}) {
    auto r = CheckCudnnVersion(loaded, 91900);
    ASSERT_TRUE(r.ok()) << loaded << ": " << r.status().ToString();
    EXPECT_THAT(*r, AllOf(HasSubstr("cuDNN " + CudnnVersionText(loaded) + " is loaded"),
                          HasSubstr("compiled with"), HasSubstr("9.19.0")));
  }
}

TEST(CudnnVersionTest, OlderThanNineOrAnotherMajorIsRefused) {
  for (size_t loaded : {size_t{8907}, size_t{7605}, size_t{100000}, size_t{100200}}) {
    auto r = CheckCudnnVersion(loaded, 91900);
    ASSERT_FALSE(r.ok()) << loaded;
    EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
    EXPECT_THAT(r.status().message(),
                AllOf(HasSubstr("cuDNN " + CudnnVersionText(loaded) + " is loaded"),
                      HasSubstr("at least 9.0.0"), HasSubstr("compiled with 9.19.0"),
                      HasSubstr("libcudnn.so.9")));
  }
}

}  // namespace
}  // namespace mogserve::engine::cuda
