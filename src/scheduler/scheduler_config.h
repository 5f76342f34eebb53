// SchedulerConfig: every knob of the batching policy, with the defaults and their reasons.
#pragma once

#include <chrono>
#include <cstdint>
#include <string_view>
#include <vector>

#include "mogserve/status.h"
#include "scheduler/request.h"

namespace mogserve::scheduler {

enum class Policy {
  kNaive,       // one request at a time, global FIFO by arrival: the "traditional" baseline
  kDynamic,     // Triton: hold until a full/preferred batch forms or the oldest waited max_delay
  kContinuous,  // default: dispatch the moment an engine is free; wait only when all are idle
  kAdaptive,    // continuous + a wait chosen from a fitted latency model (BentoML-like)
};

// "naive", "dynamic", "continuous", "adaptive".
const char* PolicyName(Policy policy);
// Inverse of PolicyName; InvalidArgument naming the accepted values otherwise.
StatusOr<Policy> ParsePolicy(std::string_view name);

struct SchedulerConfig {
  Policy policy = Policy::kContinuous;
  // Shape buckets are indices 0..num_buckets-1; the pipeline owns the bucket geometry.
  int num_buckets = 1;

  // Batch limits. Both always hold, except that a single request whose pixel_cost exceeds
  // max_batch_pixels still runs, alone (refusing it would make it unservable).
  int max_batch_size = 16;
  // Optional per-bucket cap (the engine's buffer plan derives one per bucket from the memory
  // budget); empty = max_batch_size everywhere, else one entry per bucket, each in 1..max.
  std::vector<int> bucket_max_batch_size;
  int64_t max_batch_pixels = 0;  // 0 = no pixel budget

  // Longest a waiting policy holds the oldest request of a bucket to grow a batch (dynamic,
  // continuous). Counted from the oldest request's arrival, not from when an engine went idle
  // (TorchServe users asked for exactly this; Ray changed to it).
  Duration max_delay = std::chrono::milliseconds(2);
  // dynamic: a batch of one of these sizes goes out at once (Triton's preferred_batch_size);
  // continuous/adaptive: the largest one is the target batch they may wait for when every engine
  // is idle. Strictly increasing, each in 1..max_batch_size.
  std::vector<int> preferred_batch_sizes;
  // Batch sizes the engine planned buffers / CUDA graphs for. A batch of n is reported with
  // padded_batch_size = the smallest planned size >= n, and never grows beyond the largest one.
  // Empty = no padding. Strictly increasing, each >= 1.
  std::vector<int> planned_batch_sizes;

  // Bounded queue, over all buckets: an admission that would exceed either bound is refused at
  // once (rejected_queue_full) rather than queued to time out later. 0 bytes = count only.
  int64_t queue_capacity_requests = 4096;
  int64_t queue_capacity_bytes = 1LL << 30;

  // Server-side timeout counted from arrival; a request may only shorten it. 0 = none.
  Duration default_timeout = std::chrono::seconds(30);

  // Starvation guard between priority classes (aging): every aging_step a class's oldest request
  // has waited raises that class's effective priority by one level, up to interactive; at equal
  // effective level the older request goes first. 0 = strict priority (may starve).
  Duration aging_step = std::chrono::milliseconds(200);

  // Latency model (LatencyModel): sliding window of completed batches, and the batch latency
  // assumed before any batch of a bucket completed. The pipeline should seed each bucket from
  // its warm-up measurements with BatchPolicy::OnBatchCompleted; 0 means "unknown": deadline
  // checks then only catch requests that are already late.
  int latency_window = 64;
  Duration default_batch_latency = Duration::zero();

  // adaptive: the oldest request's arrival-to-finish budget the chosen wait must respect, and
  // how many completed batches (of at least two sizes) a bucket needs before the fit is trusted.
  Duration latency_target = std::chrono::milliseconds(100);
  int adaptive_min_samples = 8;

  // Every field checked; the message names the field and the accepted range.
  Status Validate() const;
  // The cap for `bucket`: min(max_batch_size, bucket override, largest planned size).
  int MaxBatchSizeFor(int bucket) const;
  // Smallest planned size >= n, or n without a plan (n <= MaxBatchSizeFor guarantees one exists).
  int PaddedBatchSize(int n) const;
  // The batch continuous/adaptive wait for when every engine is idle.
  int TargetBatchSizeFor(int bucket) const;
};

}  // namespace mogserve::scheduler
