#include "common/fma_peak.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "common/cpu_info.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace mogserve {
namespace {

// Twelve independent accumulators: more than an FMA's latency (4-5 cycles) times the FMA ports
// (2), so the loop is bound by throughput, not by a dependency chain.
constexpr int kChains = 12;
constexpr int64_t kItersPerCheck = 1 << 16;

#if defined(__x86_64__)

__attribute__((target("avx512f"))) float RunAvx512(int64_t iters) {
  __m512 acc[kChains];
  for (int k = 0; k < kChains; ++k) acc[k] = _mm512_set1_ps(1.0f + 0.001f * k);
  const __m512 b = _mm512_set1_ps(0.9999999f), c = _mm512_set1_ps(1e-7f);
  for (int64_t i = 0; i < iters; ++i) {
    for (int k = 0; k < kChains; ++k) acc[k] = _mm512_fmadd_ps(acc[k], b, c);
  }
  __m512 sum = acc[0];
  for (int k = 1; k < kChains; ++k) sum = _mm512_add_ps(sum, acc[k]);
  return _mm512_reduce_add_ps(sum);
}

__attribute__((target("avx2,fma"))) float RunAvx2(int64_t iters) {
  __m256 acc[kChains];
  for (int k = 0; k < kChains; ++k) acc[k] = _mm256_set1_ps(1.0f + 0.001f * k);
  const __m256 b = _mm256_set1_ps(0.9999999f), c = _mm256_set1_ps(1e-7f);
  for (int64_t i = 0; i < iters; ++i) {
    for (int k = 0; k < kChains; ++k) acc[k] = _mm256_fmadd_ps(acc[k], b, c);
  }
  __m256 sum = acc[0];
  for (int k = 1; k < kChains; ++k) sum = _mm256_add_ps(sum, acc[k]);
  float lanes[8];
  _mm256_storeu_ps(lanes, sum);
  float total = 0;
  for (float v : lanes) total += v;
  return total;
}

#endif

using Loop = float (*)(int64_t);

}  // namespace

FmaPeak MeasureFmaPeak(int threads, double seconds) {
  FmaPeak peak;
  peak.threads = threads > 0 ? threads : AvailableCores();
  Loop loop = nullptr;
#if defined(__x86_64__)
  const CpuFeatures& cpu = HostCpu();
  if (cpu.avx512f) {
    loop = &RunAvx512;
    peak.vector_bits = 512;
    peak.isa = "avx512f";
  } else if (cpu.avx2 && cpu.fma) {
    loop = &RunAvx2;
    peak.vector_bits = 256;
    peak.isa = "avx2+fma";
  }
#endif
  if (loop == nullptr) {
    peak.isa = "none";
    return peak;
  }
  loop(kItersPerCheck);  // wake the vector units up (AVX-512 clocks ramp)
  std::atomic<bool> stop{false};
  std::atomic<int64_t> total_iters{0};
  std::atomic<float> sink{0};
  std::vector<std::thread> workers;
  const auto start = std::chrono::steady_clock::now();
  for (int t = 0; t < peak.threads; ++t) {
    workers.emplace_back([&] {
      int64_t iters = 0;
      float s = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        s += loop(kItersPerCheck);
        iters += kItersPerCheck;
      }
      total_iters += iters;
      sink.store(s, std::memory_order_relaxed);
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (std::thread& w : workers) w.join();
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double flops_per_iter = 2.0 * kChains * (peak.vector_bits / 32);
  peak.gflops = static_cast<double>(total_iters.load()) * flops_per_iter / elapsed / 1e9;
  return peak;
}

}  // namespace mogserve
