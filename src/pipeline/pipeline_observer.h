// PipelineObserver: hooks through which the server (metrics), benchmarks and tests watch a
// Pipeline without it knowing about them.
#pragma once

#include <cstdint>

#include "mogserve/result.h"
#include "mogserve/status.h"
#include "scheduler/batch_plan.h"
#include "scheduler/outcome.h"

namespace mogserve::pipeline {

// How one request ended: exactly one RequestResult per submitted request.
struct RequestResult {
  uint64_t id = 0;
  scheduler::Outcome outcome = scheduler::Outcome::kDone;
  // OK for done; otherwise why, for the client: the decoder's message (rejected_bad_input), the
  // engine's error (failed), "queue full ..." (rejected_queue_full), ...
  Status status;
  // done: the faces, the picture size and every timing. Other outcomes: the timings up to where
  // the request got (a request rejected by the queue has decode/preprocess times).
  DetectResult result;
  // End-to-end time from Submit to the end, on the pipeline's time source.
  double total_ms = 0;
};

// One forward pass, as the engine worker saw it.
struct BatchReport {
  int instance = 0;  // which engine instance ran it
  int bucket = 0;
  int batch_size = 0;         // requests
  int padded_batch_size = 0;  // rows run
  double inference_ms = 0;
  bool ok = true;  // false: the engine failed, every request of the batch ended failed
};

// Called from the pipeline's threads, never under its lock; implementations must be thread-safe
// and quick (they run on the stage threads).
class PipelineObserver {
 public:
  virtual ~PipelineObserver() = default;
  // An engine is about to run `plan` (the ids are rows 0..batch_size-1).
  virtual void OnBatchStarted(int instance, const scheduler::BatchPlan& plan) {}
  virtual void OnBatchFinished(const BatchReport& report) {}
  // Just before the request's callback runs.
  virtual void OnRequestEnded(const RequestResult& result) {}
};

}  // namespace mogserve::pipeline
