// `mogserve bench report`: the whole suite in one run, written as report.md, report.json and
// gnuplot plots (PNG and SVG) into one folder:
//   1. single-image latency per precision (one real photo end to end through the engine:
//      letterboxed canvas, Forward, Postprocess) and the speed-up vs FP32;
//   2. batch sizes per precision: total time for N images, ms/image, speed-up, peak memory;
//   3. traditional (naive) vs optimised (continuous batching + pipeline) under the same offered
//      load, closed and open loop;
//   4. throughput vs latency per policy (open-loop offered-load sweep);
//   5. simulated 25 FPS camera streams served in real time per policy;
//   6. the machine, the libraries and the command;
// and the original deployment guide's (GPU) claims next to what was measured here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/guide_claims.h"
#include "bench/latency_stats.h"
#include "bench/pipeline_driver.h"
#include "bench/result_table.h"
#include "engine/engine.h"
#include "scheduler/scheduler_config.h"

namespace mogserve::bench {

struct BenchReportOptions {
  model::ModelChoice model;
  engine::EngineOptions engine;
  // Simulated engine (a*n + b sleeping) instead of the model.
  bool simulate = false;
  double sim_intercept_ms = 5.0;
  double sim_per_image_ms = 26.0;
  // Precisions of sections 1-2; empty = fp32 (`mogserve bench report` fills its defaults: SSD
  // fp32, MogFace fp32 and bf16 where the CPU runs it, cli::ParsePrecisions).
  std::vector<engine::Precision> precisions;
  int mogface_size = 320;  // MogFace: the square canvas side (SSD: its fixed 512)
  // Photos for every section (decoded once); empty folder or none found = random canvases.
  std::string images_dir;
  int warmup = 3;  // untimed single-image runs per precision
  int runs = 100;  // timed single-image runs per precision
  std::vector<int> batch_sizes = {1, 4, 8, 16, 32};
  int images = 100;  // images per batch-size row (the last batch partial)
  std::vector<scheduler::Policy> policies = {scheduler::Policy::kNaive, scheduler::Policy::kDynamic,
                                             scheduler::Policy::kContinuous,
                                             scheduler::Policy::kAdaptive};
  std::vector<double> loads = {0.1, 0.25, 0.5, 0.75, 0.9, 1.0, 1.2};  // x capacity
  int clients = 16;                                                   // section 3, closed loop
  double naive_load = 0.8;  // section 3, open loop: x the naive (batch 1) capacity
  // Load points (sections 3-4): exactly `seconds` each when > 0; otherwise long enough for
  // min_requests at the point's expected rate, within [min_seconds, max_seconds].
  double seconds = 0;
  int min_requests = 200;
  double min_seconds = 5;
  double max_seconds = 20;
  double stream_seconds = 10;  // section 5, per stream count (`seconds` overrides when > 0)
  int max_streams = 0;         // section 5 upper bound; 0 = capacity / fps + 1 (at most 64)
  int max_batch_size = scheduler::SchedulerConfig{}.max_batch_size;
  double max_delay_ms = DefaultMaxDelayMs();
  double batch_knee = 0.95;
  std::string gnuplot = "gnuplot";  // executable (searched in PATH without a slash)
  std::string command;              // the command line, for section 6
  // The guide's claims (LoadGuideClaims), compared with the sections' results.
  std::vector<GuideClaim> guide_claims;
  bool quick = false;  // only reported
};

struct SingleImageRow {
  std::string precision;
  LatencyStats latency;        // Forward + Postprocess of one letterboxed photo, per run
  double speedup_vs_fp32 = 0;  // fp32 mean / this mean (0 without an fp32 row)
};

struct BatchRow {
  std::string precision;
  int batch = 0;
  int images = 0;
  double total_ms = 0;  // every batch's Forward + Postprocess of its rows
  double ms_per_image = 0;
  double images_per_s = 0;
  double speedup_vs_batch1 = 0;   // batch-1 ms/image / this (0 without a batch-1 row)
  int64_t peak_memory_bytes = 0;  // the engine allocator's peak during the row (0: none kept)
};

struct StreamSearch {
  std::string policy;
  int max_realtime_streams = 0;  // largest N tried with every stream served in real time
  std::vector<StreamPoint> tried;
};

struct MachineInfo {
  std::string cpu;
  int cores = 0;
  int64_t memory_bytes = 0;
  std::string gpu;
  std::string torch_version;
  std::string compiler;
  std::string gnuplot;  // version, or why none
};

struct GuideRow {
  std::string claim;
  std::string guide;  // the guide's numbers (GPU)
  double guide_ratio = 0;
  std::string measured;       // ours, or why not measured
  double measured_ratio = 0;  // 0 = not measured
};

struct BenchReport {
  std::string date;  // UTC, ISO 8601
  std::string command;
  std::string engine;  // what ran (first precision's description)
  bool simulated = false;
  bool quick = false;
  int canvas_side = 0;
  std::string images;  // where the pictures came from
  int photos = 0;      // decoded photos used (0: random canvases)
  MachineInfo machine;

  std::vector<SingleImageRow> single;
  std::vector<BatchRow> batches;

  // Sections 3-5 run on one engine: the fastest precision of section 1.
  std::string load_precision;
  double capacity_per_s = 0;
  int capacity_batch = 0;
  double naive_capacity_per_s = 0;  // batch 1
  // What the pipeline sustains (section 3's closed loops): naive's, and the best of both. The
  // engine alone overstates it on a CPU, where pre-processing shares the cores with the forward
  // pass, so the open loops (3's naive_load, 4's loads, 5's stream bound) are fractions of these.
  double naive_pipeline_per_s = 0;
  double pipeline_capacity_per_s = 0;
  int knee_batch = 0;
  std::string load_settings;
  double comparison_offered_per_s = 0;
  std::vector<PipelineBenchRow> comparison;  // naive / continuous, closed and open
  std::vector<PipelineBenchRow> curve;       // open loop, per policy and load
  std::vector<StreamSearch> streams;

  std::vector<GuideRow> guide;

  bool plots_generated = false;
  std::string plots_note;
  std::vector<std::string> plot_files;  // file names in the output folder
};

// Runs every section; progress goes to stderr. Fails if the engine cannot be loaded or a
// forward pass fails.
StatusOr<BenchReport> RunBenchReport(const BenchReportOptions& options);

// The guide-vs-measured rows: per claim, what the sections measured for it.
std::vector<GuideRow> CompareWithGuide(const BenchReport& report,
                                       const std::vector<GuideClaim>& claims);

// Writes the plots' data, gnuplot scripts, PNGs and SVGs into `dir` and records them (or why
// they were skipped) in report->plots_*. Never fails the report: a missing or failing gnuplot
// is noted.
void WriteBenchReportPlots(const std::string& dir, const std::string& gnuplot, BenchReport* report);

// One table per section, in the report's order (report.md, report.json, report.csv).
std::vector<ResultTable> BenchReportTables(const BenchReport& report);

}  // namespace mogserve::bench
