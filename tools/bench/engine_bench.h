// `mogserve bench engine`: forward-pass latency, throughput, GFLOP/s against the machine's
// measured 3x3-convolution peak, and memory, per batch size.
// * SSD: the fixed 512x512 input, per engine variant (NCHW / channels-last x system / caching
//   allocator).
// * MogFace: per (square input size, precision, batch size), optionally against the Python
//   reference in PyTorch eager mode on the same weights, input size, batch and threads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/latency_stats.h"
#include "bench/result_table.h"
#include "engine/engine.h"

namespace mogserve::bench {

struct EngineBenchOptions {
  model::ModelChoice model;      // the model and its weights (SSD: model folder)
  engine::EngineOptions engine;  // device, precision, threads
  std::vector<int> batch_sizes = {1, 2, 4, 8, 16};
  int warmup = 2;            // untimed passes per row (the first one creates oneDNN primitives)
  int min_iterations = 10;   // timed passes per row, after the warm-up
  double min_seconds = 2.0;  // ... and at least this long
  // SSD: also measure NCHW and the system allocator (before the caching allocator is installed).
  bool compare_variants = true;
  // MogFace: square input sides (multiples of 32) and precisions to measure.
  std::vector<int> sizes = {320, 640};
  std::vector<engine::Precision> precisions = {engine::Precision::kFp32, engine::Precision::kBf16};
  // MogFace with --synthetic-weights: also time tests/reference/bench_reference.py.
  bool reference = false;
  std::string reference_python;  // interpreter with torch
  std::string reference_script;  // bench_reference.py
  // Also time ONNX Runtime (CPU) on the same network, sizes, batches and threads
  // (onnxruntime_bench.h; the export uses reference_python).
  bool onnxruntime = false;
};

// The Python reference's timing of the same (size, batch): same precision, and FP32.
struct ReferenceComparison {
  bool measured = false;
  LatencyStats latency;          // the reference, same precision, per pass
  double ms_per_image = 0;       // the reference, same precision
  double speedup = 0;            // reference ms/image / ours, same precision
  double fp32_ms_per_image = 0;  // the reference in FP32
  double speedup_vs_fp32 = 0;    // reference FP32 ms/image / ours (the BF16 target)
  // The same two ratios from the fastest pass of each side, which contention on a shared
  // machine disturbs least.
  double speedup_best = 0;
  double speedup_vs_fp32_best = 0;
};

struct EngineBenchRow {
  std::string variant;    // SSD: "channels-last, caching allocator", ...; MogFace: "mogface r101"
  int size = 0;           // square input side
  std::string precision;  // "fp32", "bf16"
  int batch = 0;
  LatencyStats batch_latency;  // per forward pass
  double macs_per_image = 0;
  double ms_per_image = 0;
  double images_per_s = 0;
  double gflops = 0;       // 2 * MACs * batch / mean latency
  double peak_gflops = 0;  // the measured peak of this precision
  double fraction_of_peak = 0;
  double fraction_of_machine_peak = 0;  // against the FMA loop's FP32 peak (report)
  // The engine allocator's counters (process-wide; caching allocator only, else 0): held
  // before the row (weights, staging buffers) and at most during it.
  int64_t memory_baseline_bytes = 0;
  int64_t memory_peak_bytes = 0;
  ReferenceComparison reference;  // MogFace --reference
  // --onnxruntime: its FP32 median per image at this (size, batch), and that over ours (> 1:
  // mogserve is faster); 0 when not measured.
  double onnxruntime_ms_per_image = 0;
  double speedup_vs_onnxruntime = 0;
};

struct PrecisionPeak {
  std::string precision;
  double gflops = 0;
  int batch = 0;
};

struct EngineBenchReport {
  std::string model;    // "ssd", "mogface"
  std::string engine;   // Engine::Describe() of the default variant / first precision
  std::string machine;  // CPU model, cores
  std::string cpu;      // HostCpu(): ISA level and instruction sets, the cap if any
  int threads = 0;
  // The machine's FP32 peak: an FMA loop in the widest vectors, `threads` threads
  // (common/fma_peak.h). The 3x3-conv peaks below are what LibTorch's convolution reaches.
  double machine_fp32_peak_gflops = 0;
  std::string machine_peak_isa;
  // The measured peak per precision; peak_gflops / peak_batch repeat the FP32 one.
  std::vector<PrecisionPeak> peaks;
  double peak_gflops = 0;
  int peak_batch = 0;
  double macs_per_image = 0;  // SSD (fixed input); MogFace: per row
  std::vector<EngineBenchRow> rows;
  // SSD, the default variant: the best images/s and the largest per-image slowdown of any batch
  // size against batch 1 (<= 1.0 means no batch size is slower per image than batch 1).
  double best_images_per_s = 0;
  int best_batch = 0;
  double worst_per_image_vs_batch1 = 0;
  // MogFace --reference: what the reference is, or why it was not measured.
  bool reference_measured = false;
  std::string reference;
  // The smallest and largest speedups over the rows: FP32 vs the FP32 reference, and BF16 vs
  // the FP32 reference (the targets: >= 1.3 and >= 2.5).
  double fp32_speedup_min = 0, fp32_speedup_max = 0;
  double bf16_speedup_min = 0, bf16_speedup_max = 0;
  // --onnxruntime: "onnxruntime-node 1.30.0, CPU, FP32, N threads", or why it was not measured.
  bool onnxruntime_measured = false;
  std::string onnxruntime;
};

// Runs the benchmark; progress lines go to stderr. Fails if the model cannot be loaded; a
// missing or failing reference is reported in `reference`, not an error.
StatusOr<EngineBenchReport> RunEngineBench(const EngineBenchOptions& options);

// The report's table: the machine, the peaks and the summary as fields, one row per
// (variant or size, precision, batch); the columns Markdown shows depend on the model.
std::vector<ResultTable> EngineBenchTables(const EngineBenchReport& report);

// "AMD EPYC 9xxx, 2 cores" from /proc/cpuinfo.
std::string DescribeMachine();

}  // namespace mogserve::bench
