// The launchers of the CUDA kernels (engine/cuda/kernels.h) check their arguments on the host
// before anything reaches a device: these run without a GPU (no launch happens).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "engine/cuda/kernels.h"

namespace mogserve::engine::cuda {
namespace {

using ::testing::HasSubstr;

TEST(KernelArgsTest, BadArgumentsAreRefusedBeforeLaunching) {
  float dummy[4] = {0, 0, 0, 0};  // never read: every call fails its checks first
  const NhwcShape s{1, 4, 4, 8}, zero{1, 0, 4, 8};
  Status st = LaunchMaxPool(dummy, s, nullptr, s, 3, 2, 1, 1, StorageType::kF32, nullptr);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("null"));
  st = LaunchMaxPool(dummy, zero, dummy, s, 3, 2, 1, 1, StorageType::kF32, nullptr);
  EXPECT_THAT(st.message(), HasSubstr("[1,0,4,8]"));
  st = LaunchMaxPool(dummy, s, dummy, s, 3, 2, 3, 1, StorageType::kF32, nullptr);
  EXPECT_THAT(st.message(), HasSubstr("padding"));
  st = LaunchGroupNormStats(dummy, s, 8, 3, 1e-5f, dummy, 1 << 20, dummy, StorageType::kF16,
                            nullptr);
  EXPECT_THAT(st.message(), HasSubstr("groups"));
  st = LaunchGroupNormStats(dummy, s, 8, 2, 1e-5f, dummy, GroupNormWorkspaceBytes(1, 2) - 1, dummy,
                            StorageType::kF16, nullptr);
  EXPECT_THAT(st.message(), HasSubstr("workspace"));
  st = LaunchGroupNormApply(dummy, s, 8, 2, dummy, dummy, dummy, 7, dummy, StorageType::kF16,
                            nullptr);
  EXPECT_THAT(st.message(), HasSubstr("activation 7"));
  st = LaunchUpsampleAdd(dummy, NhwcShape{1, 1, 1, 8}, dummy + 1, dummy + 1, s, false,
                         StorageType::kBf16, nullptr);
  EXPECT_THAT(st.message(), HasSubstr("cannot cover"));
  st = LaunchUpsampleAdd(dummy, NhwcShape{1, 2, 2, 8}, dummy + 1, dummy, s, false,
                         StorageType::kBf16, nullptr);
  EXPECT_THAT(st.message(), HasSubstr("cannot be the top map"));
  st = LaunchCopyChannels(dummy, s, 8, dummy, s, 4, true, StorageType::kF32, nullptr);
  EXPECT_THAT(st.message(), HasSubstr("do not fit"));
  st = LaunchClamp(dummy, 4, 6.0f, 0.0f, StorageType::kF32, nullptr);
  EXPECT_THAT(st.message(), HasSubstr("lo must be <= hi"));
  float* f = dummy;
  st = LaunchOutputLevel(dummy, s, 7, dummy, s, 0, 2, 0, 32, f, f, StorageType::kF32, nullptr);
  EXPECT_THAT(st.message(), HasSubstr("does not fit"));
  st = LaunchPad(dummy, s, dummy + 1, NhwcShape{1, 4, 5, 8}, 1, 0, StorageType::kF16, nullptr);
  EXPECT_THAT(st.message(), HasSubstr("does not fit"));
  st = LaunchPad(dummy, s, dummy, NhwcShape{1, 5, 5, 8}, 1, 1, StorageType::kF16, nullptr);
  EXPECT_THAT(st.message(), HasSubstr("cannot be the input"));
  st = LaunchBiasActivation(dummy, s, nullptr, nullptr, 1, StorageType::kF32, nullptr);
  EXPECT_THAT(st.message(), HasSubstr("null"));
  st = LaunchBiasActivation(dummy, s, dummy, nullptr, 5, StorageType::kF32, nullptr);
  EXPECT_THAT(st.message(), HasSubstr("activation 5"));
  const uint8_t* bytes = reinterpret_cast<const uint8_t*>(dummy);
  st = LaunchPreprocess(bytes, reinterpret_cast<const int*>(dummy), PreprocessParams{},
                        StorageType::kF32, dummy, NhwcShape{1, 4, 4, 2}, nullptr);
  EXPECT_THAT(st.message(), HasSubstr(">= 3 channels"));
}

}  // namespace
}  // namespace mogserve::engine::cuda
