// The public C++ API of mogserve: open a face detector once, then detect faces in encoded images
// (JPEG/PNG/WebP) or in decoded RGB pixels, from any number of threads. Every call goes through
// the same serving stack as `mogserve serve` and `mogserve detect` (decode pool → batching
// scheduler → engine instances → post-processing pool), so concurrent callers share forward
// passes (DetectTiming::batch_size says how many did).
//
// This header and the ones it includes are the whole public surface: nothing here includes
// LibTorch, CUDA, spdlog, nlohmann or anything under src/.
//
//   mogserve::DetectorOptions options;          // the defaults of `mogserve serve`
//   auto detector = mogserve::Detector::Open(options);
//   if (!detector.ok()) { std::cerr << detector.status().ToString() << "\n"; return 1; }
//   auto result = (*detector)->Detect(jpeg_bytes);
//   if (result.ok()) for (const mogserve::Detection& face : result->faces) { ... }
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "mogserve/options.h"
#include "mogserve/result.h"
#include "mogserve/status.h"

namespace mogserve {

namespace api {
class DetectorBuilder;  // the library's own (src/api/): Open with the CLI's option names
}  // namespace api

// Decoded pixels: 8-bit RGB, row by row, top row first. Detect copies them.
struct Pixels {
  const uint8_t* data = nullptr;
  int width = 0;
  int height = 0;
  int stride = 0;  // bytes per row; 0 = width * 3
};

// What Open loaded, as the engine reports it.
struct DetectorInfo {
  std::string model;        // "ssd-mobilenetv1", "mogface"
  std::string variant;      // "" (SSD), "r101", "e", "r50"
  std::string weights;      // the checkpoint, "synthetic (seed 1)", or the SSD folder
  std::string device;       // "cpu", "cuda:0"
  std::string precision;    // "fp32", "bf16", ... (what runs, also under precision "auto")
  std::string precision_choice;  // why "auto" chose it; "" when named
  // The host CPU: "AMD EPYC 7571 (avx2): sse4_1 avx avx2 fma f16c" (" (capped at avx2 by
  // MOGSERVE_CPU_ISA)" when a cap applies), and its oneDNN ISA level ("avx2", "avx512_core_bf16").
  std::string cpu;
  std::string cpu_isa;
  std::string description;  // "ssd-mobilenetv1 on cpu, fp32, channels-last, 2 threads"
  int instances = 0;
  int input_width = 0;  // the largest canvas a picture is scaled into
  int input_height = 0;
  std::string input_policy;  // "fixed 512x512", "bucket 640 (...)", ...
  // Where the faces' five points come from: "face-api's 68-point net, five points", "the
  // model's own" (BlazeFace), "none".
  std::string landmarks;
  std::string scheduler;     // "continuous, max batch 16, max delay 2 ms"
  std::string buffer_plan;   // what the start-up warm-up measured and capped
  DetectOptions defaults;    // the thresholds every Detect uses
};

// What a Detector has done so far.
struct DetectorStats {
  int64_t submitted = 0;  // every Detect* call that reached the queue's door
  int64_t completed = 0;  // answered with faces
  int64_t failed = 0;     // answered with an error (bad input, queue full, shut down, ...)
  int64_t batches = 0;    // forward passes run
  double mean_batch_size = 0;
};

class Detector {
 public:
  // Loads the model (instances sharing the weights), measures the buffer plan (a warm-up of a
  // few seconds on the CPU) and starts the threads. InvalidArgument naming the option and the
  // allowed values for a bad option; NotFound / InvalidData for a missing or broken model;
  // Unavailable / Unsupported for a device this machine or build does not have.
  static StatusOr<std::unique_ptr<Detector>> Open(const DetectorOptions& options);
  ~Detector();  // Shutdown(), then frees

  Detector(const Detector&) = delete;
  Detector& operator=(const Detector&) = delete;

  // Encoded JPEG/PNG/WebP bytes (EXIF orientation applied), or decoded pixels (copied; they
  // skip the decoder). Blocks until the faces are found; thread-safe, and concurrent calls
  // batch together. Waits for room when the queue is full. Called from a Callback (whose thread
  // the answer would need), they end at once with FailedPrecondition: use DetectAsync there.
  StatusOr<DetectResult> Detect(std::span<const uint8_t> encoded);
  StatusOr<DetectResult> Detect(const Pixels& pixels);
  // Many at once: all submitted together (so they batch), results in input order.
  std::vector<StatusOr<DetectResult>> DetectAll(std::span<const std::span<const uint8_t>> images);

  using Callback = std::function<void(StatusOr<DetectResult>)>;
  // Returns at once; `done` runs exactly once, on a library thread (or inline with the error
  // when the request is rejected at once: bad input, shut down, queue full). `done` must not
  // call Shutdown or destroy the detector; it may call DetectAsync, not the blocking calls.
  // Keep it short: every answer's post-processing waits for the thread it runs on.
  void DetectAsync(std::vector<uint8_t> encoded, Callback done);
  void DetectAsync(const Pixels& pixels, Callback done);
  // The same for an image file, read by a decode thread (so reading overlaps inference). Ends
  // with NotFound (missing), InvalidArgument (empty path, a directory), Internal (cannot read),
  // or the decoder's error for bytes that are not an image.
  void DetectFileAsync(std::string path, Callback done);

  // Stops accepting (later calls fail with StatusCode::kUnavailable naming the shutdown) and
  // answers everything already accepted. Idempotent; the destructor calls it. Must not be
  // called from a Callback.
  void Shutdown();

  const DetectorInfo& info() const;
  // Counters since Open.
  DetectorStats stats() const;

 private:
  friend class api::DetectorBuilder;
  class Impl;
  explicit Detector(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The JSON line `mogserve detect` writes for one input, without the newline (the same keys and
// number format: boxes rounded to 0.01 px, scores to 1e-4; keys in sorted order): for a result
// {"faces":[{"box":[x1,y1,x2,y2],"score":s},...],"height":H,"path":id,"width":W} (with
// include_timing also "timing":{...}); for an error {"error":{"code":"invalid_data",
// "message":"..."},"path":id}. `id` is usually the file's path.
std::string FormatJsonLine(const std::string& id, const StatusOr<DetectResult>& result,
                           bool include_timing = false);

}  // namespace mogserve
