// `mogserve bench engine`: forward-pass latency and throughput per batch size and engine
// variant, against the machine's measured 3x3-convolution peak.
#pragma once

#include <string>
#include <vector>

#include "bench/latency_stats.h"
#include "engine/engine.h"

namespace mogserve::bench {

struct EngineBenchOptions {
  engine::EngineOptions engine;  // model folder, threads
  std::vector<int> batch_sizes = {1, 2, 4, 8, 16};
  int min_iterations = 10;   // per (variant, batch size), after 2 warm-up passes
  double min_seconds = 2.0;  // ... and at least this long
  // Also measure NCHW and the system allocator (before the caching allocator is installed).
  bool compare_variants = true;
};

struct EngineBenchRow {
  std::string variant;  // "channels-last + caching allocator", ...
  int batch = 0;
  LatencyStats batch_latency;  // per forward pass
  double ms_per_image = 0;
  double images_per_s = 0;
  double gflops = 0;  // 2 * MACs * batch / mean latency
  double fraction_of_peak = 0;
};

struct EngineBenchReport {
  std::string engine;   // Engine::Describe() of the default variant
  std::string machine;  // CPU model, cores
  double peak_gflops = 0;
  int peak_batch = 0;
  double macs_per_image = 0;
  std::vector<EngineBenchRow> rows;
  // For the default variant: the best images/s and the largest per-image slowdown of any batch
  // size against batch 1 (<= 1.0 means no batch size is slower per image than batch 1).
  double best_images_per_s = 0;
  int best_batch = 0;
  double worst_per_image_vs_batch1 = 0;
};

// Runs the benchmark; progress lines go to stderr. Fails if the model cannot be loaded.
StatusOr<EngineBenchReport> RunEngineBench(const EngineBenchOptions& options);

std::string EngineBenchMarkdown(const EngineBenchReport& report);
std::string EngineBenchJson(const EngineBenchReport& report);

// "AMD EPYC 9xxx, 2 cores" from /proc/cpuinfo.
std::string DescribeMachine();

}  // namespace mogserve::bench
