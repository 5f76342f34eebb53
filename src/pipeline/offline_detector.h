// The offline batch job behind `mogserve detect`: every source goes through the same Pipeline as
// the server (decode pool → scheduler → engine workers → post pool), as bulk-priority requests
// submitted with SubmitMode::kBlock, so large folders are batched and decoding overlaps
// inference. Results come back in input order through a bounded reorder window, so memory stays
// bounded however many sources there are (a folder of 100 000 images holds at most `window()`
// requests in flight and as many finished results waiting for their turn).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "image/decode.h"
#include "mogserve/result.h"
#include "pipeline/shape_buckets.h"
#include "scheduler/scheduler_config.h"

namespace mogserve::pipeline {

// One input: a file path, or (when path is empty) bytes already in memory.
struct ImageSource {
  std::string id;  // reported back with the result (the path, or a caller-chosen name)
  std::string path;
  std::vector<uint8_t> bytes;
};

struct SourceResult {
  std::string id;
  Status status;        // not OK: the image could not be read or decoded, or its batch failed
  DetectResult result;  // faces in original pixels, timings (queue, inference, batch size, ...)
};

struct OfflineOptions {
  int batch_size = 8;        // most images per forward pass (the scheduler's max_batch_size)
  int decode_threads = 0;    // 0 = half the cores, at least 1
  int prefetch_batches = 2;  // reorder window = batch_size x instances x (prefetch_batches + 1)
  ShapeBuckets buckets = ShapeBuckets::FixedSquare(512);  // the model's input policy
  DetectOptions detect;                                   // thresholds, NMS, max faces
  image::DecodeOptions decode;                            // pixel limit
  scheduler::Policy policy = scheduler::Policy::kContinuous;
  int postprocess_threads = 1;
  // Planned batch sizes / per-bucket caps (from a BufferPlan); empty = none.
  std::vector<int> planned_batch_sizes;
  std::vector<int> bucket_max_batch_size;
};

// What a Run did, for reports and for the bounded-memory test.
struct OfflineStats {
  int64_t images = 0;
  int64_t failed = 0;
  int64_t batches = 0;
  double mean_batch_size = 0;
  int64_t peak_in_flight = 0;        // submitted and not yet delivered (<= window())
  int64_t peak_queued_requests = 0;  // in the scheduler's queue, sampled at each submit
  int64_t peak_queued_bytes = 0;
  int64_t canvas_allocations = 0;  // canvas buffers the pipeline created (bounded, not per image)
};

class OfflineDetector {
 public:
  // `engine` (or every instance, one worker thread each, and `decoder`) must outlive the
  // detector. The first form decodes with the model the engine runs (Engine::model()).
  OfflineDetector(engine::Engine& engine, const OfflineOptions& options);
  OfflineDetector(std::vector<engine::Engine*> instances, const model::OutputDecoder& decoder,
                  const OfflineOptions& options);

  // Processes every source; `on_result` is called once per source, in input order, on the
  // calling thread. A source that fails to load or decode yields a non-OK status and the job
  // goes on; an engine failure fails the images of that batch only.
  void Run(std::vector<ImageSource> sources,
           const std::function<void(const SourceResult&)>& on_result);
  // The same over sources produced on demand (nullopt = no more), so a caller need not hold
  // them all: `next` is called from the calling thread only when the window has room.
  void Run(const std::function<std::optional<ImageSource>()>& next,
           const std::function<void(const SourceResult&)>& on_result);

  // Requests in flight at most (submitted, not yet delivered).
  int window() const;
  const OfflineStats& stats() const { return stats_; }

 private:
  OfflineDetector(std::vector<engine::Engine*> instances, const model::OutputDecoder* decoder,
                  const OfflineOptions& options);

  std::vector<engine::Engine*> engines_;
  const model::OutputDecoder* decoder_;  // null when the engine runs no model (Run refuses)
  OfflineOptions options_;
  OfflineStats stats_;
};

}  // namespace mogserve::pipeline
