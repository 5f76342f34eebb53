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

#include "mogserve/result.h"
#include "mogserve/status.h"

namespace mogserve {

namespace api {
class DetectorBuilder;  // the library's own (src/api/): Open with the CLI's option names
}  // namespace api

// Everything Detector::Open takes. These defaults are `mogserve serve`'s: its flags take theirs
// from this struct (`detect` starts from it with its own batch size, no warm-up and no deadline;
// the in-process benchmarks' scheduler defaults are SchedulerConfig's, which a test keeps equal
// to these). A field left at its default behaves as `serve` without the matching flag (named in
// each comment).
struct DetectorOptions {
  // The model (--model, --model-dir, --weights, --synthetic-weights, --seed).
  std::string model = "ssd";  // "ssd" (the embedded SSD-MobileNetV1) or "mogface"
  // SSD: the folder with the model files. Empty: $MOGSERVE_MODEL_DIR, else
  // ./models/ssd_mobilenetv1, else models/ssd_mobilenetv1 next to the build, else the model
  // installed with the library (<prefix>/share/mogserve/models/ssd_mobilenetv1 by default).
  std::string model_dir;
  std::string weights;            // MogFace: a .pt/.pth/.safetensors checkpoint
  std::string synthetic_weights;  // MogFace: random weights of "r101", "e" or "r50" (no faces)
  uint64_t seed = 1;              // of synthetic_weights
  // How it runs (--device, --precision, --calibration, --int8-float-layers, --threads).
  std::string device = "cpu";      // "cpu", "cuda" or "cuda:N"
  // cpu: fp32, bf16 (needs AVX-512), int8 (needs a calibration); cuda: fp32, tf32, fp16, bf16;
  // auto: the fastest this device runs natively (int8 where the model is calibrated, else bf16
  // on CPUs with AVX512-BF16/AMX, else fp32; fp16 on cuda; info().precision_choice says why).
  // fp32 stays the default: the same answers on every CPU, equal to the FP64 reference's.
  std::string precision = "fp32";
  std::string calibration;         // int8: activation scales (`mogserve calibrate`)
  std::string int8_float_layers = "first,heads";  // int8: "first,heads", "first", "heads", "none"
  int threads = 0;    // intra-op threads of the forward pass; 0 = every core
  int instances = 0;  // engine instances sharing the weights; 0: 1 cpu, 2 cuda
  // CUDA backend (--cudnn-workspace-mb, --cudnn-autotune, --max-graphs).
  int64_t cudnn_workspace_mb = 256;
  bool cudnn_autotune = false;
  int max_graphs = 64;

  // Input geometry and post-processing (--input-policy, --target-size, --score-threshold,
  // --nms-iou, --top-k, --max-faces). The SSD always takes its fixed 512² square; unset
  // thresholds take the model's defaults (SSD 0.5 / NMS 0.5 / 100 faces, MogFace 0.82 / 0.4 /
  // top-k 5000 / 750 faces).
  std::string input_policy = "bucket";  // MogFace: "bucket" or "modelscope"
  int target_size = 640;                // MogFace bucket policy: the long side, a multiple of 32
  std::optional<float> score_threshold;
  std::optional<float> nms_iou;
  std::optional<int> top_k;
  std::optional<int> max_faces;
  int64_t max_pixels = 50'000'000;  // refuse larger images (checked before decoding)

  // The batching scheduler (--scheduler, --max-batch-size, --max-delay-ms, ...).
  std::string scheduler = "continuous";  // "naive", "dynamic", "continuous" or "adaptive"
  int max_batch_size = 16;               // most images per forward pass
  double max_delay_ms = 2;               // longest the oldest request waits for a batch to fill
  int64_t max_batch_pixels = 0;          // pixel budget per batch; 0 = none
  int64_t queue_capacity = 4096;         // most queued images; beyond: refused (queue full)
  int64_t queue_capacity_bytes = int64_t{1} << 30;  // most bytes held by queued images
  double request_timeout_ms = 30'000;               // deadline from submission; 0 = none
  double latency_target_ms = 100;                   // the adaptive scheduler's target
  bool pad_batches = false;  // pad batches to the planned sizes (fixed shapes)

  // Threads and the start-up warm-up (--workers, --post-threads, --memory-fraction,
  // --batch-knee, --plan-batch-sizes).
  int decode_threads = 0;        // decode/pre-process threads; 0 = half the cores, at least 1
  int postprocess_threads = 1;   // post-process threads (and callbacks)
  double memory_fraction = 0.8;  // share of RAM / device memory the buffer plan may use
  double batch_knee = 0.95;      // cap batches where throughput stops growing; 0 = memory only
  std::vector<int> plan_batch_sizes = {1, 2, 4, 8, 16};  // sizes the warm-up measures
};

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
