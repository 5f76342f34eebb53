// Precision by CPU capability (issue 26), through the real binary: bf16 on a CPU without AVX-512
// is refused at load (exit 3, what is missing, what to use instead), and `--precision auto`
// picks what the CPU runs natively. MOGSERVE_CPU_ISA=avx2 makes this AVX-512 machine behave as
// an AVX2-only one (the project's feature detection, oneDNN's and ATen's dispatch), so these
// run on any x86-64 CPU; the native cases check this machine as it is.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/cpu_info.h"
#include "e2e_support.h"

namespace mogserve::e2e {
namespace {

ProcessOptions Avx2() {
  ProcessOptions options;
  options.env = {{"MOGSERVE_CPU_ISA", "avx2"}};
  return options;
}

// The faces of one detect line.
size_t FacesOf(const std::string& out) {
  const std::vector<nlohmann::json> lines = ParseJsonLines(out);
  if (lines.size() != 1) {
    ADD_FAILURE() << "want one line: " << out;
    return 0;
  }
  return lines[0].at("faces").size();
}

TEST(CpuPrecision, Bf16OnAnAvx2CpuExitsThreeNamingWhatIsMissing) {
  const ProcessResult r =
      RunDetect({"--precision", "bf16", PhotoPath("sample1.jpg").string()}, Avx2());
  EXPECT_EQ(r.exit_code, 3) << r.Describe();
  EXPECT_TRUE(Contains(r.err, "precision bf16 needs a CPU with AVX-512")) << r.err;
  EXPECT_TRUE(Contains(r.err, "lacks avx512bw avx512vl avx512dq")) << r.err;
  EXPECT_TRUE(Contains(r.err, "capped at avx2 by MOGSERVE_CPU_ISA")) << r.err;
  EXPECT_TRUE(Contains(r.err, "use --precision fp32, int8")) << r.err;
  EXPECT_FALSE(Contains(r.err, "forward pass failed")) << r.err;
  EXPECT_TRUE(r.out.empty()) << "refused at load, before any image: " << r.out;
}

TEST(CpuPrecision, AutoOnAnAvx2CpuPicksCalibratedInt8ForTheSsd) {
  const ProcessResult r =
      RunDetect({"--precision", "auto", PhotoPath("sample1.jpg").string()}, Avx2());
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_TRUE(Contains(r.err, "precision auto: int8: calibrated activation scales, no VNNI"))
      << r.err;
  EXPECT_EQ(FacesOf(r.out), 3u);  // sample1.jpg's three faces (tests/data/ground_truth.json)
}

// MogFace with synthetic weights has no calibration: fp32 on AVX2, bf16 on BF16 hardware.
TEST(CpuPrecision, AutoWithoutCalibrationPicksFp32OnAvx2AndBf16WhereNative) {
  const std::vector<std::string> args = {"--model",       "mogface", "--synthetic-weights",
                                         "r50",           "--target-size", "128",
                                         "--precision",   "auto",
                                         PhotoPath("sample1.jpg").string()};
  const ProcessResult avx2 = RunDetect(args, Avx2());
  ASSERT_EQ(avx2.exit_code, 0) << avx2.Describe();
  EXPECT_TRUE(Contains(avx2.err, "precision auto: fp32: no INT8 calibration for this model and "
                                 "no BF16 in hardware (no AVX-512)"))
      << avx2.err;
  if (!HostCpu().NativeBf16()) {
    GTEST_SKIP() << "the native case needs AVX512-BF16 or AMX (this CPU: " << HostCpu().Describe()
                 << ")";
  }
  const ProcessResult native = RunDetect(args);
  ASSERT_EQ(native.exit_code, 0) << native.Describe();
  EXPECT_TRUE(Contains(native.err, "precision auto: bf16: no INT8 calibration for this model"))
      << native.err;
}

// The SSD is calibrated, so INT8 wherever it runs; its faces are the FP32 ones.
TEST(CpuPrecision, AutoOnThisCpuPicksInt8ForTheSsdAndFindsTheSameFaces) {
  const ProcessResult fp32 = RunDetect({PhotoPath("sample4.jpg").string()});
  const ProcessResult autop =
      RunDetect({"--precision", "auto", PhotoPath("sample4.jpg").string()});
  ASSERT_EQ(fp32.exit_code, 0) << fp32.Describe();
  ASSERT_EQ(autop.exit_code, 0) << autop.Describe();
  EXPECT_TRUE(Contains(autop.err, "precision auto: int8")) << autop.err;
  EXPECT_EQ(FacesOf(autop.out), FacesOf(fp32.out));
}

TEST(CpuPrecision, UnknownPrecisionNamesAuto) {
  const ProcessResult r = RunDetect({"--precision", "fp8", PhotoPath("sample1.jpg").string()});
  EXPECT_EQ(r.exit_code, 2) << r.Describe();
  EXPECT_TRUE(Contains(r.err, "allowed: fp32, bf16, fp16, tf32, int8, auto")) << r.err;
}

}  // namespace
}  // namespace mogserve::e2e
