// BufferPlan: the start-up measurement that sizes batches from memory instead of guessing
// (DESIGN.md §3, vLLM's gpu_memory_utilization). For each shape bucket and each candidate batch
// size (1, 2, 4, 8, ...) it runs warm-up forward passes on zero canvases, measuring latency and
// the peak memory the pass needed (Engine::Memory / ResetPeakMemory), and derives the largest
// batch per bucket that fits the budget: memory_fraction x capacity, minus what is already in use
// (the weights, other instances). The result feeds the scheduler: bucket_max_batch_size, the
// planned (padded) batch sizes, and warm-up latencies that seed its latency model.
//
// DESIGN.md §5 lists the buffer plan under engine/; it lives in pipeline/ because it only drives
// the torch-free Engine interface, so it builds and is tested without LibTorch, like the rest of
// the pipeline. The engine's own staging buffers are allocated on the first pass of each shape
// and reused from then on (engine.h), so the warm-up also allocates them.
//
// Many buckets (the modelscope input policy has 47 x 47 = 2209): measuring every one at start-up
// would take minutes, so only `buckets` are measured (default: every bucket of the fixed and
// bucket policies; for modelscope, the bucket of a 640x640 picture). An unmeasured bucket gets
// the largest candidate batch whose memory, extrapolated by pixel count from the measured
// buckets' worst bytes per pixel, fits the budget; its latency model starts empty and learns from
// its first batches.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "mogserve/status.h"
#include "pipeline/pipeline.h"
#include "pipeline/shape_buckets.h"
#include "pipeline/time_source.h"
#include "scheduler/scheduler_config.h"

namespace mogserve::pipeline {

struct BufferPlanOptions {
  std::vector<int> batch_sizes = {1, 2, 4, 8, 16};  // candidates, strictly increasing
  // Budget = memory_fraction x Engine::Memory().capacity_bytes - in_use_bytes at the start.
  // budget_bytes > 0 replaces it (tests, or an explicit --memory-budget). With neither a
  // capacity nor a budget, memory does not limit the batch.
  double memory_fraction = 0.8;
  int64_t budget_bytes = 0;
  int warmup_passes = 1;  // untimed passes per (bucket, batch size)
  // Their median is the latency: one pass descheduled by another process (a shared machine)
  // must not move a bucket's batch cap.
  int timed_passes = 3;
  std::vector<int> buckets;  // bucket indices to measure; empty = the default (see above)
  // Cap each bucket's batch at the smallest candidate reaching this fraction of the best
  // measured throughput, in (0, 1]; 0 = no cap beyond memory. An unmeasured bucket takes the
  // knee of the measured bucket nearest in pixels (never above its memory cap).
  double throughput_knee = 0.95;
};

struct BufferPlanRow {
  int bucket = 0;
  CanvasShape shape;
  int batch_size = 0;
  bool measured = false;  // false: skipped, its extrapolated peak exceeds the budget
  double latency_ms = 0;
  int64_t peak_bytes = 0;  // the pass's peak above what was in use before it (or predicted)
  bool fits = false;
};

class BufferPlan {
 public:
  // Runs the warm-up on `engine` (Forward errors are returned, naming the bucket and batch).
  // `time` (optional) times the passes; nullptr = the steady clock.
  static StatusOr<BufferPlan> Measure(engine::Engine& engine, const ShapeBuckets& buckets,
                                      const BufferPlanOptions& options, TimeSource* time = nullptr);

  // The largest batch that fits for `bucket` (>= 1, even when batch 1 does not fit).
  int max_batch_size(int bucket) const;
  // The throughput knee of `bucket` (see above), never above max_batch_size(bucket); equal to
  // it when throughput_knee is 0.
  int knee_batch_size(int bucket) const;
  // Candidate sizes up to the largest that fits any bucket: the sizes to pad batches to.
  std::vector<int> planned_batch_sizes() const;
  // Writes bucket_max_batch_size (the knee, each capped at config->max_batch_size) and, when
  // `pad_to_planned`, planned_batch_sizes into the scheduler config.
  void ApplyTo(scheduler::SchedulerConfig* config, bool pad_to_planned) const;
  // The measured latencies, for PipelineOptions::latency_seed.
  std::vector<LatencySample> latency_samples() const;

  const std::vector<BufferPlanRow>& rows() const { return rows_; }
  int64_t budget_bytes() const { return budget_bytes_; }  // 0 = unlimited
  // The plan as a table, for the start-up banner.
  std::string Describe() const;

 private:
  int KneeOf(int bucket) const;  // from the measured rows of `bucket`
  // The caps and knees of the buckets not in `measured`: caps by pixels from the worst measured
  // bytes per pixel within `budget`, knees from the measured bucket nearest in pixels.
  void Extrapolate(const ShapeBuckets& buckets, const std::vector<int>& measured,
                   double worst_bytes_per_px, int64_t budget);

  std::vector<BufferPlanRow> rows_;
  std::vector<int> max_batch_;   // per bucket, from memory
  std::vector<int> knee_batch_;  // per bucket, <= max_batch_
  double throughput_knee_ = 0;
  std::vector<int> candidates_;
  int64_t budget_bytes_ = 0;
  int64_t capacity_bytes_ = 0;
  int64_t in_use_bytes_ = 0;
  int measured_buckets_ = 0;
};

}  // namespace mogserve::pipeline
