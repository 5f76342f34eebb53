// The machine's FP32 arithmetic peak, measured: independent FMA chains in the widest vectors the
// CPU has (AVX-512, else AVX2+FMA), one thread per core asked for. What "the peak" means when a
// benchmark rates a forward pass, independent of any library's convolution.
#pragma once

#include <string>

namespace mogserve {

struct FmaPeak {
  double gflops = 0;    // FP32 GFLOP/s, all threads together (an FMA counts 2)
  int threads = 0;
  int vector_bits = 0;  // 512, 256, or 0 where no FMA loop exists for this CPU
  std::string isa;      // "avx512f", "avx2+fma", "none"
};

// Runs `threads` threads (0: AvailableCores()) of the loop for about `seconds`; follows
// HostCpu() (so MOGSERVE_CPU_ISA=avx2 measures the AVX2 loop).
FmaPeak MeasureFmaPeak(int threads, double seconds);

}  // namespace mogserve
