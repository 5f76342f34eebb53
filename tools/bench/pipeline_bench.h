// `mogserve bench pipeline`: the scheduler and the asynchronous pipeline under load, in-process
// (no HTTP). For each batching policy: closed loop (C clients, each waiting for its reply before
// sending the next) and open loop (Poisson arrivals at a fraction of the engine's capacity);
// throughput, latency percentiles, mean batch size, engine busy ratio and rejections. The engine
// is either simulated (latency a·n + b per batch of n, sleeping, so the CPU stays free) or the
// real default model.
#pragma once

#include <string>
#include <vector>

#include "bench/latency_stats.h"
#include "bench/pipeline_driver.h"
#include "bench/result_table.h"
#include "engine/engine.h"
#include "scheduler/scheduler_config.h"

namespace mogserve::bench {

struct PipelineBenchOptions {
  std::vector<scheduler::Policy> policies = {scheduler::Policy::kNaive, scheduler::Policy::kDynamic,
                                             scheduler::Policy::kContinuous,
                                             scheduler::Policy::kAdaptive};
  std::vector<int> concurrency = {1, 2, 4, 8, 16, 32, 64};            // closed loop
  std::vector<double> loads = {0.1, 0.25, 0.5, 0.75, 0.9, 1.0, 1.2};  // open loop, x capacity
  // Per point; the first 20% is warm-up and not counted. Open-loop points last for ~150
  // arrivals, between 1x and 3x this.
  double seconds = 6.0;
  int max_batch_size = scheduler::SchedulerConfig{}.max_batch_size;
  double max_delay_ms = DefaultMaxDelayMs();
  // The buffer plan's throughput knee (BufferPlanOptions::throughput_knee): batches are capped
  // where the warm-up's images/s stop rising, as `mogserve serve --batch-knee` does.
  double batch_knee = 0.95;
  int instances = 1;
  int preprocess_threads = 1;
  int postprocess_threads = 1;
  // Simulated engine: a batch of n takes intercept + n x per_image milliseconds. The defaults are
  // the SSD engine on the 2-core development machine (docs/BENCHMARKS.md: ~31 ms at batch 1,
  // ~26 ms per further image).
  double sim_intercept_ms = 5.0;
  double sim_per_image_ms = 26.0;
  // Real engine instead of the simulation.
  bool real_engine = false;
  model::ModelChoice model;
  engine::EngineOptions engine;
  // The synthetic picture every request carries: decoded (no decode cost) and, at 512x384,
  // already the size of its letterboxed content in a 512 canvas (no resize), so the pipeline's
  // own threads are what is measured, not the resampler.
  int image_width = 512;
  int image_height = 384;
  bool measure_overhead = true;  // the zero-latency run behind overhead_us_per_request
};

struct PipelineBenchReport {
  std::string engine;   // what ran
  std::string machine;  // CPU, cores
  std::string settings;
  // Engine capacity: the best images/s over batch sizes <= max_batch_size, measured by a
  // BufferPlan warm-up in the same run (the simulation's sleeps overshoot on a loaded machine),
  // and the batch size reaching it.
  double capacity_per_s = 0;
  int capacity_batch = 0;
  // Zero-latency simulated engine, continuous, 16 clients, max_delay 0: wall time per request
  // through every stage (submit, pre-process, schedule, dispatch, post-process, callback),
  // which bounds the scheduler's own overhead from above.
  double overhead_us_per_request = 0;
  double overhead_cpu_us_per_request = 0;
  // In the same run, the time spent inside the scheduler's calls (Admit, Next, ...) per request:
  // the scheduler's own overhead.
  double scheduler_us_per_request = 0;  // CPU time of the process per request
  std::vector<PipelineBenchRow> rows;

  // Targets (0 when the rows needed were not run).
  double continuous_saturation_ratio = 0;  // best closed-loop continuous throughput / capacity
  double continuous_p50_at_half_ms = 0;    // open loop, load 0.5
  double dynamic_p50_at_half_ms = 0;
  double continuous_vs_naive_c16 = 0;  // closed loop, concurrency 16, throughput ratio
};

// Runs every point; progress lines go to stderr. Fails if the real engine cannot be loaded.
StatusOr<PipelineBenchReport> RunPipelineBench(const PipelineBenchOptions& options);

// The report's table: settings and targets as fields, one row per point.
std::vector<ResultTable> PipelineBenchTables(const PipelineBenchReport& report);

}  // namespace mogserve::bench
