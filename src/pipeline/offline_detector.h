// The offline batch job behind `mogserve detect`: a decode pool prepares images ahead while the
// calling thread batches them through the engine and post-processes, delivering results in
// input order.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "image/decode.h"
#include "mogserve/detector.h"
#include "pipeline/shape_buckets.h"

namespace mogserve::pipeline {

// One input: a file path, or (when path is empty) bytes already in memory.
struct ImageSource {
  std::string id;  // reported back with the result (the path, or a caller-chosen name)
  std::string path;
  std::vector<uint8_t> bytes;
};

struct SourceResult {
  std::string id;
  Status status;        // not OK: the image could not be read or decoded; result is empty
  DetectResult result;  // faces in original pixels
};

struct OfflineOptions {
  int batch_size = 8;           // images per forward pass
  int decode_threads = 0;       // 0 = one per core
  int prefetch_batches = 2;     // how many batches the decode pool may run ahead
  ShapeBuckets buckets = ShapeBuckets::FixedSquare(512);  // the model's input policy
  DetectOptions detect;         // thresholds, NMS, max faces
  image::DecodeOptions decode;  // pixel limit
};

class OfflineDetector {
 public:
  // `engine` must outlive the detector.
  OfflineDetector(engine::Engine& engine, const OfflineOptions& options);

  // Processes every source; `on_result` is called once per source, in input order, on the
  // calling thread. A source that fails to load or decode yields a non-OK status and the job
  // goes on; an engine failure fails every image of that batch.
  void Run(std::vector<ImageSource> sources,
           const std::function<void(const SourceResult&)>& on_result);

 private:
  engine::Engine& engine_;
  OfflineOptions options_;
};

}  // namespace mogserve::pipeline
