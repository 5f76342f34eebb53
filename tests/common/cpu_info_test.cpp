// The CPU feature detection and its cap (common/cpu_info.h), and the FMA-loop peak.
#include "common/cpu_info.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "common/fma_peak.h"

namespace mogserve {
namespace {

// A Sapphire Rapids-like feature set: everything mogserve knows on x86-64.
CpuFeatures Everything() {
  CpuFeatures f;
  f.arch = "x86-64";
  f.sse41 = f.avx = f.avx2 = f.fma = f.f16c = true;
  f.avx512f = f.avx512bw = f.avx512vl = f.avx512dq = true;
  f.avx512_vnni = f.avx512_bf16 = f.avx512_fp16 = f.avx_vnni = true;
  f.amx_tile = f.amx_bf16 = f.amx_int8 = true;
  return f;
}

TEST(CpuInfo, LevelsParseInAnyCaseAndUnknownOnesNameTheAllowed) {
  EXPECT_EQ(*ParseIsaLevel("AVX2"), IsaLevel::kAvx2);
  EXPECT_EQ(*ParseIsaLevel("avx512_core_bf16"), IsaLevel::kAvx512CoreBf16);
  EXPECT_EQ(*ParseIsaLevel("native"), IsaLevel::kAll);
  const StatusOr<IsaLevel> bad = ParseIsaLevel("avx3");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("allowed: sse41, avx2, avx512_core"), std::string::npos)
      << bad.status().message();
  for (IsaLevel l : {IsaLevel::kSse41, IsaLevel::kAvx2, IsaLevel::kAvx512Core,
                     IsaLevel::kAvx512CoreVnni, IsaLevel::kAvx512CoreBf16,
                     IsaLevel::kAvx512CoreAmx, IsaLevel::kAll}) {
    EXPECT_EQ(*ParseIsaLevel(IsaLevelName(l)), l);
  }
}

TEST(CpuInfo, ACapAtAvx2LeavesAnAvx2MachineWithoutBf16) {
  const CpuFeatures all = Everything();
  EXPECT_EQ(all.Level(), IsaLevel::kAvx512CoreAmx);
  EXPECT_TRUE(all.RunsBf16());
  EXPECT_TRUE(all.NativeBf16());
  EXPECT_TRUE(all.NativeInt8());
  EXPECT_EQ(all.MissingForBf16(), "");

  const CpuFeatures avx2 = CapCpuFeatures(all, IsaLevel::kAvx2);
  EXPECT_EQ(avx2.Level(), IsaLevel::kAvx2);
  EXPECT_TRUE(avx2.avx2 && avx2.fma && avx2.f16c);
  EXPECT_FALSE(avx2.RunsBf16());
  EXPECT_FALSE(avx2.NativeBf16());
  EXPECT_FALSE(avx2.NativeInt8());
  EXPECT_EQ(avx2.MissingForBf16(), "avx512bw avx512vl avx512dq");
  EXPECT_EQ(avx2.Names(), (std::vector<std::string>{"sse4_1", "avx", "avx2", "fma", "f16c"}));
  EXPECT_EQ(avx2.Describe(), "sse4_1 avx avx2 fma f16c (capped at avx2)");
}

TEST(CpuInfo, EachCapKeepsItsLevelAndDropsTheOnesAbove) {
  const CpuFeatures all = Everything();
  const CpuFeatures core = CapCpuFeatures(all, IsaLevel::kAvx512Core);
  EXPECT_EQ(core.Level(), IsaLevel::kAvx512Core);
  EXPECT_TRUE(core.RunsBf16());     // oneDNN emulates BF16 on AVX-512 ...
  EXPECT_FALSE(core.NativeBf16());  // ... without AVX512-BF16
  EXPECT_FALSE(core.NativeInt8());
  const CpuFeatures vnni = CapCpuFeatures(all, IsaLevel::kAvx512CoreVnni);
  EXPECT_EQ(vnni.Level(), IsaLevel::kAvx512CoreVnni);
  EXPECT_TRUE(vnni.NativeInt8());
  EXPECT_FALSE(vnni.NativeBf16());
  const CpuFeatures bf16 = CapCpuFeatures(all, IsaLevel::kAvx512CoreBf16);
  EXPECT_EQ(bf16.Level(), IsaLevel::kAvx512CoreBf16);
  EXPECT_TRUE(bf16.NativeBf16());
  EXPECT_FALSE(bf16.amx_tile);
  const CpuFeatures sse = CapCpuFeatures(all, IsaLevel::kSse41);
  EXPECT_EQ(sse.Level(), IsaLevel::kSse41);
  EXPECT_EQ(sse.Names(), std::vector<std::string>{"sse4_1"});
  const CpuFeatures none = CapCpuFeatures(all, IsaLevel::kAll);
  EXPECT_EQ(none.cap, "");
  EXPECT_EQ(none.Names(), all.Names());
}

// The real CPU: detection agrees with the kernel's own view (/proc/cpuinfo's flags).
TEST(CpuInfo, DetectionAgreesWithProcCpuinfo) {
  const CpuFeatures f = DetectCpuFeatures(IsaLevel::kAll);
#if defined(__x86_64__)
  EXPECT_EQ(f.arch, "x86-64");
  EXPECT_FALSE(f.model_name.empty());
  std::string flags;
  {
    FILE* in = std::fopen("/proc/cpuinfo", "r");
    ASSERT_NE(in, nullptr);
    char line[8192];
    while (std::fgets(line, sizeof line, in) != nullptr) {
      if (std::string(line).rfind("flags", 0) == 0) {
        flags = std::string(line) + " ";
        break;
      }
    }
    std::fclose(in);
  }
  ASSERT_FALSE(flags.empty());
  for (const std::string& name : f.Names()) {
    EXPECT_NE(flags.find(" " + name + " "), std::string::npos) << name << " not in " << flags;
  }
  for (const char* name : {"avx2", "fma", "avx512f", "avx512bw", "avx512_bf16", "amx_bf16"}) {
    const bool listed = flags.find(" " + std::string(name) + " ") != std::string::npos;
    const std::vector<std::string> names = f.Names();
    EXPECT_EQ(listed, std::find(names.begin(), names.end(), name) != names.end()) << name;
  }
#endif
}

// The FMA loop runs the widest vectors the CPU has (capped loop included) and reports a rate. In an
// optimised build that rate must be plausible for the CPU: at least 1 GFLOP/s a thread with AVX2
// (any x86-64 core of the last decade does 8+). A Debug build (the ASan/UBSan step) runs the loop
// unoptimised, every intrinsic through memory, and measures the build, not the CPU: 0.93 GFLOP/s
// on a Zen 3.
TEST(FmaPeak, MeasuresTheWidestLoopTheCpuHas) {
  const FmaPeak peak = MeasureFmaPeak(1, 0.2);
  const CpuFeatures& cpu = HostCpu();
  if (!cpu.avx2 && !cpu.avx512f) GTEST_SKIP() << "no AVX2/AVX-512: " << cpu.Describe();
  EXPECT_EQ(peak.threads, 1);
  EXPECT_EQ(peak.vector_bits, cpu.avx512f ? 512 : 256);
  EXPECT_EQ(peak.isa, cpu.avx512f ? "avx512f" : "avx2+fma");
  EXPECT_TRUE(std::isfinite(peak.gflops));
  EXPECT_GT(peak.gflops, 0.0);
#ifdef NDEBUG
  EXPECT_GT(peak.gflops, 1.0);
#endif
}

}  // namespace
}  // namespace mogserve
