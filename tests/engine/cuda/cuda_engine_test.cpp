// The CUDA device in the engine's options, torch-free: device strings, the tf32 precision, the
// backend table, and CreateEngine's answer where no GPU can run (this machine: no driver).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "engine/cuda_backend.h"
#include "engine/engine.h"

namespace mogserve::engine {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;

TEST(CudaEngineTest, DeviceStrings) {
  struct Case {
    const char* text;
    const char* backend;
    int index;
  };
  for (const Case& c : {Case{"cpu", "cpu", 0}, Case{"cuda", "cuda", 0}, Case{"cuda:0", "cuda", 0},
                        Case{"cuda:3", "cuda", 3}, Case{"cuda:0012", "cuda", 12}}) {
    auto d = ParseDevice(c.text);
    ASSERT_TRUE(d.ok()) << c.text << ": " << d.status().ToString();
    EXPECT_EQ(d->backend, c.backend);
    EXPECT_EQ(d->index, c.index);
  }
  EXPECT_EQ(ParseDevice("cuda")->ToString(), "cuda:0");
  EXPECT_EQ(ParseDevice("cpu")->ToString(), "cpu");
  for (const char* bad : {"", "gpu", "CUDA", "cuda:", "cuda:-1", "cuda:x", "cuda:1.5", "cuda:99999",
                          "cpu:0", "cuda0", " cuda"}) {
    auto d = ParseDevice(bad);
    ASSERT_FALSE(d.ok()) << "'" << bad << "' was accepted";
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(d.status().message(), HasSubstr("'" + std::string(bad) + "'"));
    EXPECT_THAT(d.status().message(), HasSubstr("allowed: cpu, cuda, cuda:N"));
  }
}

TEST(CudaEngineTest, DescribeNamesTheLayoutNotThreadsOnCuda) {
  EngineInfo info;
  info.model = "mogface";
  info.variant = "r101";
  info.device = "cuda:1";
  info.precision = "fp16";
  EXPECT_EQ(info.Describe(), "mogface r101 on cuda:1, fp16, NHWC");
  info.device = "cpu";
  info.threads = 2;
  EXPECT_EQ(info.Describe(), "mogface r101 on cpu, fp16, channels-last, 2 threads");
}

TEST(CudaEngineTest, TwoInstancesByDefaultOnCuda) {
  EXPECT_EQ(DefaultInstances("cpu"), 1);
  EXPECT_EQ(DefaultInstances("cuda"), 2);
  EXPECT_EQ(DefaultInstances("cuda:3"), 2);
  EXPECT_EQ(DefaultInstances("gpu"), 1);  // malformed: refused later by CreateEngine
}

TEST(CudaEngineTest, Tf32IsAPrecision) {
  auto p = ParsePrecision("tf32");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(*p, Precision::kTf32);
  EXPECT_STREQ(PrecisionName(Precision::kTf32), "tf32");
  EXPECT_THAT(ParsePrecision("tf16").status().message(), HasSubstr("fp32, bf16, fp16, tf32"));
}

TEST(CudaEngineTest, BackendTableHasCuda) {
  const std::vector<BackendEntry> backends = Backends();
  ASSERT_EQ(backends.size(), 2u);
  EXPECT_STREQ(backends[0].device, "cpu");
  EXPECT_STREQ(backends[1].device, "cuda");
  EXPECT_TRUE(backends[1].built);  // this binary is only built with the CUDA backend
  EXPECT_TRUE(CudaBackendBuilt());
}

TEST(CudaEngineTest, TheCpuRefusesCudaPrecisions) {
  if (!Backends()[0].built) GTEST_SKIP() << "this build has no CPU backend";
  for (Precision p : {Precision::kTf32, Precision::kFp16}) {
    EngineOptions o;
    o.precision = p;
    Status r = CheckEngineOptions(o);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(r.message(), HasSubstr("not available on cpu"));
    EXPECT_THAT(r.message(), HasSubstr("--device cuda"));
  }
}

TEST(CudaEngineTest, BadCudaOptionsAreRefusedBeforeTheDevice) {
  EngineOptions o;
  o.device = "cuda";
  o.cuda.max_graphs = -1;
  Status r = CheckEngineOptions(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.message(), HasSubstr("max_graphs"));
  o.cuda.max_graphs = 64;
  o.cuda.cudnn_workspace_bytes = -5;
  r = CheckEngineOptions(o);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.message(), HasSubstr("cudnn_workspace_bytes"));
  EXPECT_EQ(EngineOptions{}.cuda.cudnn_workspace_bytes, int64_t{256} << 20);
  EXPECT_FALSE(EngineOptions{}.cuda.cudnn_autotune);
  EXPECT_EQ(EngineOptions{}.cuda.max_graphs, 64);
}

TEST(CudaEngineTest, CreateEngineWithoutAGpuIsUnavailable) {
  if (ProbeCudaDevice(0).ok()) GTEST_SKIP() << "a CUDA device exists: " << *ProbeCudaDevice(0);
  for (const char* device : {"cuda", "cuda:0", "cuda:7"}) {
    SCOPED_TRACE(device);
    EngineOptions o;
    o.device = device;
    // The device is probed before any model is read (api::LoadEngine checks first).
    Status r = CheckEngineOptions(o);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.code(), StatusCode::kUnavailable) << r.ToString();
    EXPECT_THAT(r.message(),
                AnyOf(HasSubstr("no usable NVIDIA driver"), HasSubstr("no CUDA device")));
    EXPECT_THAT(r.message(), HasSubstr("--device cpu"));
  }
  // The answer is the same on every call (cached), and the probe itself says so too.
  EXPECT_EQ(ProbeCudaDevice(0).status().message(), ProbeCudaDevice(0).status().message());
  EXPECT_EQ(ProbeCudaDevice(-1).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace mogserve::engine
