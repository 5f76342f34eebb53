// The options of the public API, without the Detector: what Detector::Open takes
// (DetectorOptions) and what one request may set for itself (RequestOptions). Every option is
// declared once more in the option table (src/options/option_table.cpp), which gives it its
// command-line flag, its HTTP / OIP parameter, its range and its help; a test keeps the two in step.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mogserve {

// Everything Detector::Open takes. These defaults are `mogserve serve`'s: its flags take theirs
// from this struct (`detect` starts from it with its own batch size, no warm-up and no deadline;
// the in-process benchmarks' scheduler defaults are SchedulerConfig's, which a test keeps equal
// to these). A field left at its default behaves as `serve` without the matching flag (named in
// each comment).
struct DetectorOptions {
  // The model (--model, --model-dir, --weights, --synthetic-weights, --seed).
  // "ssd" (the embedded SSD-MobileNetV1), "blazeface", "mogface", or an ONNX file ("x.onnx";
  // also "onnx" with `weights` the file) decoded by its family's rules (model_family).
  std::string model = "ssd";
  // SSD: the folder with the model files. Empty: $MOGSERVE_MODEL_DIR, else
  // ./models/ssd_mobilenetv1, else models/ssd_mobilenetv1 next to the build, else the model
  // installed with the library (<prefix>/share/mogserve/models/ssd_mobilenetv1 by default).
  std::string model_dir;
  std::string weights;            // MogFace: a .pt/.pth/.safetensors checkpoint
  std::string synthetic_weights;  // MogFace: random weights of "r101", "e" or "r50" (no faces)
  uint64_t seed = 1;              // of synthetic_weights
  // An ONNX model's family (--model-family): "auto" (from its outputs), "scrfd", "retinaface",
  // "yunet", "ultraface", "blazeface". Decoders built: scrfd.
  std::string model_family = "auto";
  // Five landmarks a face (--landmarks): "auto" the model's own where it has them (BlazeFace),
  // else face-api's 68-point landmark net run on the faces (models/face_landmark_68); "68" the
  // net for every model, also giving all 68 points (Detection::landmarks68); "model" only the
  // model's own (none for the SSD and MogFace: no second stage); "off" none at all.
  std::string landmarks = "auto";
  // The landmark net's folder. Empty: face_landmark_68 beside model_dir (or $MOGSERVE_MODEL_DIR)
  // when that names one, else ./models/face_landmark_68, next to the build, or installed.
  std::string landmarks_dir;
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
  int min_face_size = 0;  // drop faces whose shorter side is below N original pixels; 0 = none
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

// What one request may set for itself, over HTTP (query, form field or JSON member), the
// WebSocket, and the Open Inference Protocol's parameters (REST and gRPC). Unset: the server's.
struct RequestOptions {
  std::optional<float> score_threshold;  // 0..1
  std::optional<int> max_faces;          // 1..10000
  std::optional<int> min_face_size;      // 0..100000 pixels of the original picture
  std::optional<std::string> priority;   // interactive, api, bulk or stream; unset: api (a live
                                         // WebSocket: stream)
  std::optional<int64_t> timeout_ms;     // > 0; may only shorten the server's deadline
  std::optional<std::string> format;     // json (default) or modelscope: {"scores":[],"boxes":[]}
  // Each face with five points also as its aligned crop (the ArcFace template, as mogserve/
  // align.h), crop_size x crop_size, a base64 JPEG in the face's "crop" (HTTP /v1/detect and the
  // detection WebSocket, JSON format). A multiple of 112 or 128, at most 1024.
  std::optional<int> crop_size;

  bool modelscope_format() const { return format && *format == "modelscope"; }
};

}  // namespace mogserve
