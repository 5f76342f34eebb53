// PipelineStats: counters of a Pipeline, as one consistent snapshot (Pipeline::Stats). The HTTP
// server exports them as Prometheus metrics (DESIGN.md §6): mogserve_requests_total{outcome}
// from `outcomes`, mogserve_queue_depth from `queue`, mogserve_batch_size from
// `batch_size_counts`, mogserve_engine_busy_ratio from busy_ratio(); per-request latencies come
// through PipelineObserver.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "scheduler/batch_plan.h"
#include "scheduler/outcome.h"

namespace mogserve::pipeline {

struct PipelineStats {
  int64_t submitted = 0;  // every Submit call, accepted or not
  // How each ended request ended, indexed by scheduler::Outcome.
  std::array<int64_t, scheduler::kNumOutcomes> outcomes{};
  // Where the requests that have not ended are now.
  int64_t preprocessing = 0;    // submitted, waiting for or in decode/pre-process
  scheduler::QueueStats queue;  // in the scheduler's queues
  int64_t running = 0;          // in a batch on an engine, or being post-processed

  int64_t batches = 0;         // forward passes run (failed ones included)
  int64_t failed_batches = 0;  // of which the engine failed
  int64_t cold_batches = 0;    // of which an engine's first of their shape: not latency samples
  int64_t batched_requests = 0;
  int64_t padded_rows = 0;                 // rows run beyond the requests (planned sizes)
  std::vector<int64_t> batch_size_counts;  // [n] = batches of n requests
  double inference_seconds = 0;            // sum of forward-pass wall times
  // Per instance, time in forward passes, the running one included up to the snapshot.
  std::vector<double> engine_busy_seconds;
  double uptime_seconds = 0;  // since the pipeline started (its time source)
  // Wall time spent inside the scheduler's calls (Admit, Next, OnBatchCompleted), steady clock:
  // the policy's own cost, apart from the pipeline's threads and copies.
  double scheduler_seconds = 0;

  // Canvas buffers the pool had to create (flat in steady state) and acquisitions.
  int64_t canvas_allocations = 0;
  int64_t canvas_acquisitions = 0;

  int64_t ended() const {
    int64_t n = 0;
    for (int64_t c : outcomes) n += c;
    return n;
  }
  int64_t count(scheduler::Outcome o) const { return outcomes[static_cast<int>(o)]; }
  double mean_batch_size() const {
    return batches > 0 ? static_cast<double>(batched_requests) / batches : 0.0;
  }
  // Fraction of the instances' time spent in forward passes, 0..1.
  double busy_ratio() const {
    double busy = 0;
    for (double s : engine_busy_seconds) busy += s;
    const double capacity = uptime_seconds * static_cast<double>(engine_busy_seconds.size());
    return capacity > 0 ? busy / capacity : 0.0;
  }
};

}  // namespace mogserve::pipeline
