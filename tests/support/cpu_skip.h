// Skips a test, naming what the CPU lacks, where the CPU cannot run what it measures. HostCpu()
// follows MOGSERVE_CPU_ISA, so the test command's AVX2 pass (scripts/test.sh) skips the same
// tests a real AVX2 machine does, and the child processes the tests start see the same cap.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "common/cpu_info.h"

namespace mogserve::testing {

// Why BF16 cannot run here; "" where it can.
inline std::string NoBf16Reason() {
  const CpuFeatures& cpu = HostCpu();
  if (cpu.RunsBf16()) return "";
  return "bf16 needs " + cpu.MissingForBf16() + ", which this CPU lacks (it has: " +
         cpu.Describe() + ")";
}

}  // namespace mogserve::testing

// In a TEST body: skips the rest of the test where BF16 cannot run.
#define MOGSERVE_SKIP_WITHOUT_BF16()                                                 \
  do {                                                                               \
    if (const std::string why = ::mogserve::testing::NoBf16Reason(); !why.empty()) { \
      GTEST_SKIP() << why;                                                           \
    }                                                                                \
  } while (0)
