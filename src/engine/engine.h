// The engine: a loaded model on a device, running forward passes over batches of canvases and
// handing back the raw rows of the network's output stage; nothing else (turning rows into faces
// is the model's, model::OutputDecoder, which the pipeline runs beside the engines). Torch-free
// header, so the layers above never see LibTorch. `Engine` is an interface: real engines come
// from CreateEngine, which hands a loaded model (model::LoadModel → model::FaceModel: network,
// prepared weights, pre/post-processing; torch-free) to the backend of the device ("cpu":
// LibTorch/oneDNN, src/engine/torch/; "cuda[:N]": cuDNN and own kernels, src/engine/cuda/); tests
// of the pipeline implement it with scripted latencies.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "image/resize.h"
#include "model/model_registry.h"
#include "mogserve/result.h"
#include "mogserve/status.h"

namespace mogserve::engine {

// kTf32: FP32 tensors with TF32 tensor-core math (CUDA only); kFp32 is true FP32 everywhere.
// kInt8 (CPU only): calibrated post-training INT8 convolutions (EngineOptions::calibration).
enum class Precision { kFp32, kBf16, kFp16, kTf32, kInt8 };
// "fp32", "bf16", "fp16", "tf32", "int8".
const char* PrecisionName(Precision precision);
StatusOr<Precision> ParsePrecision(std::string_view name);

// A device: "cpu", "cuda" (= "cuda:0") or "cuda:N" with N a decimal ordinal.
struct DeviceSpec {
  std::string backend = "cpu";  // "cpu" or "cuda"
  int index = 0;                // the CUDA ordinal; 0 for cpu
  // "cpu", "cuda:0".
  std::string ToString() const;
};
// InvalidArgument naming the text and the allowed forms ("cpu", "cuda", "cuda:N").
StatusOr<DeviceSpec> ParseDevice(std::string_view text);

// What `--precision auto` runs on a device: the fastest precision the hardware runs natively
// whose accuracy was measured close to FP32 (docs/ACCURACY.md). cpu: calibrated INT8 when the
// model has activation scales (2.4x FP32 for the SSD on AVX-512-VNNI; faster than FP32 on AVX2
// too), else BF16 where the CPU has it in hardware (AVX512-BF16 or AMX), else FP32. cuda: FP16.
struct PrecisionChoice {
  Precision precision = Precision::kFp32;
  std::string why;  // "int8: calibrated activation scales, AVX512-VNNI"
};
PrecisionChoice ChooseAutoPrecision(const DeviceSpec& device, bool has_calibration);
// Whether this process's CPU runs `precision` (HostCpu()); Unsupported naming what the CPU lacks
// and what to use instead when it does not. fp16/tf32 are not CPU precisions (InvalidArgument).
Status CheckCpuRunsPrecision(Precision precision);

// Options of the CPU backend only (LibTorch/oneDNN). Threads and the allocator are process-wide:
// the first CPU engine of a process sets them (see CreateEngine).
struct CpuBackendOptions {
  int threads = 0;            // intra-op threads; 0 = one per core
  bool channels_last = true;  // NHWC activations: oneDNN's fast path on CPU
  // Cap of the caching CPU allocator (see caching_cpu_allocator.h); 0 disables it.
  int64_t allocator_cache_bytes = int64_t{4} << 30;
};

// Options of the CUDA backend only (src/engine/cuda/).
struct CudaBackendOptions {
  // Cap of the cuDNN workspace of one engine instance; algorithms needing more are not chosen.
  int64_t cudnn_workspace_bytes = int64_t{256} << 20;
  // Time the cuDNN algorithms per convolution shape at start-up instead of the heuristics' pick.
  bool cudnn_autotune = false;
  // CUDA graphs kept per instance (one per canvas shape and padded batch; LRU); 0 = run eagerly.
  int max_graphs = 64;
};

// How an engine runs a model: the device, the precision and the backends' own options. The model
// itself comes loaded (model::LoadModel, by its registry spec); the engine never reads weights.
struct EngineOptions {
  // cpu: fp32, bf16, int8; cuda: fp32, tf32, fp16, bf16.
  Precision precision = Precision::kFp32;
  std::string precision_choice;  // why `--precision auto` chose it (EngineInfo); "" when named
  // int8: the activation scales file `mogserve calibrate` wrote for this model (required).
  std::string calibration;
  // int8: which convolutions stay FP32 (the rest run INT8). kFirstAndHeads keeps the first
  // convolution (reads the image) and the output heads (write scores and boxes) in FP32.
  enum class Int8FloatLayers { kNone, kFirst, kHeads, kFirstAndHeads };
  Int8FloatLayers int8_float_layers = Int8FloatLayers::kFirstAndHeads;
  std::string device = "cpu";  // see ParseDevice: "cpu", "cuda", "cuda:N"
  CpuBackendOptions cpu;
  CudaBackendOptions cuda;
};

// One batch of equal-shaped canvases: RGB bytes, height x width x 3 each, the picture at the
// top-left and the rest padding.
struct CanvasBatch {
  int width = 0;
  int height = 0;
  std::vector<const uint8_t*> canvases;
  // Per canvas, the picture's extent; the engine treats everything right of / below it as
  // padding (MogFace: zero after normalisation, spec §10.1). Empty = the whole canvas.
  std::vector<image::Letterbox> geometry;
  // Rows to run (>= canvases.size()); the extra rows repeat the last canvas and their outputs
  // are dropped. 0 = canvases.size(). Planned batch sizes keep buffers (and, on a future GPU
  // backend, CUDA graphs) reused.
  int padded_batch_size = 0;
};

// Raw network outputs of one batch, copied off the device: per anchor a face score and four box
// numbers, whose meaning is the model's (its model::OutputDecoder knows it).
struct BatchOutputs {
  int batch = 0;
  int anchors = 0;
  int canvas_width = 0;
  int canvas_height = 0;
  std::vector<float> box_encodings;  // [batch, anchors, 4]
  std::vector<float> scores;         // [batch, anchors]
  // The network's raw outputs (model::Network::raw_outputs()), per image side by side, each
  // [H, W, C]: [batch, raw_floats]. Empty when it has none.
  int64_t raw_floats = 0;
  std::vector<float> raw;
  std::vector<int64_t> raw_offsets;  // where each raw output starts in an image's values, + the end

  std::span<const float> boxes_of(int i) const {
    return {box_encodings.data() + static_cast<size_t>(i) * anchors * 4,
            static_cast<size_t>(anchors) * 4};
  }
  std::span<const float> scores_of(int i) const {
    return {scores.data() + static_cast<size_t>(i) * anchors, static_cast<size_t>(anchors)};
  }
  std::span<const float> raw_of(int i) const {
    if (raw.empty()) return {};
    return {raw.data() + static_cast<size_t>(i) * raw_floats, static_cast<size_t>(raw_floats)};
  }
  // Row i for the decoder, its picture placed by `letterbox`.
  model::OutputRows rows_of(int i, const image::Letterbox& letterbox) const {
    return {scores_of(i), boxes_of(i), canvas_width, canvas_height, letterbox, raw_of(i),
            raw_offsets};
  }
};

// What an engine runs, for banners, /v1/models and reports.
struct EngineInfo {
  std::string model;                       // "ssd-mobilenetv1", "mogface"
  const model::ModelSpec* spec = nullptr;  // its registry entry (from the loaded model)
  std::string variant;                     // "" (SSD), "r101", "e", "r50"
  std::string weights;                     // the file, "synthetic (seed 1)", or the SSD folder
  std::string device;                      // "cpu", "cuda:0"
  std::string precision;                   // "fp32", "bf16", ...
  // Why `--precision auto` chose `precision` ("" when it was asked for by name).
  std::string precision_choice;
  // The host CPU (HostCpu()): its brand string, its instruction sets as lscpu spells them, its
  // oneDNN ISA level, and the cap applied ("" when none).
  std::string cpu_model;
  std::vector<std::string> cpu_features;
  std::string cpu_isa;
  std::string cpu_cap;
  bool channels_last = true;  // CPU backend
  int threads = 1;            // CPU backend: the process's intra-op threads
  // The model's own input geometry: SSD takes a fixed square (fixed_side); MogFace takes any
  // size whose sides are multiples of `multiple` (spec §10.1).
  int fixed_side = 0;
  image::FitRule fixed_fit = image::FitRule::kRounded;  // how pictures fill the fixed square
  int multiple = 1;
  int native_multiple = 0;  // > 0: pictures at their own size padded to it (FaceModel's)

  // "mogface r101 on cpu, bf16, channels-last, 2 threads"; "mogface r101 on cuda:0, fp16, NHWC"
  std::string Describe() const;
  // "AMD EPYC 7571 (avx2): sse4_1 avx avx2 fma f16c", " (capped at avx2 by MOGSERVE_CPU_ISA)"
  std::string DescribeCpu() const;
};

// The engine's memory (CPU backend: the caching allocator's counters, process-wide).
struct MemoryStats {
  int64_t in_use_bytes = 0;       // held by live tensors now
  int64_t peak_in_use_bytes = 0;  // most held since the last ResetPeakMemory()
  int64_t reserved_bytes = 0;     // in use + cached for reuse
  int64_t capacity_bytes = 0;     // physical RAM (CPU backend)
};

class Engine {
 public:
  virtual ~Engine() = default;

  virtual const EngineInfo& info() const = 0;

  // The model it runs: its network and weights, and the decoder of its output rows
  // (model::OutputDecoder), which the pipeline runs after Forward. Null for engines that run no
  // model (the pipeline tests' and the simulated benchmarks' scripted engines).
  virtual std::shared_ptr<const model::FaceModel> model() const = 0;

  // Multiply-accumulates of one forward pass over a width x height canvas.
  virtual int64_t MacsPerImage(int width, int height) const = 0;

  // One forward pass. The canvases are copied into a staging buffer that is allocated once per
  // shape and reused. Not thread-safe: one instance per worker thread (see NewInstance).
  virtual StatusOr<BatchOutputs> Forward(const CanvasBatch& batch) = 0;

  virtual MemoryStats Memory() const = 0;
  virtual void ResetPeakMemory() = 0;
  // Gives all cached free memory back (after the warm-up, which ran batches bigger than the caps
  // will let run again; on an idle server); the next batches fill the cache again. Returns the
  // bytes given back. Default (a backend with no cache of its own): nothing to do.
  virtual int64_t ReleaseCachedMemory() { return 0; }

  // Another instance sharing this one's immutable weights, with its own buffers, for a second
  // worker thread (`--instances N`).
  virtual StatusOr<std::unique_ptr<Engine>> NewInstance() const = 0;
};

// Whether options.device names a device this build and machine can run, at options.precision:
// a build without the device's backend (MOGSERVE_WITH_TORCH=OFF, MOGSERVE_WITH_CUDA=OFF) gives
// kUnsupported; a cuda device is probed (no usable NVIDIA driver, no CUDA device, a too-high
// ordinal or a cuDNN older than 9.0 give kUnavailable, kInvalidArgument for the ordinal); a
// precision the device does not run gives the backend's error naming what to use instead. Cheap:
// callers run it before the slow model load.
Status CheckEngineOptions(const EngineOptions& options);

// CheckEngineOptions, then hands `model` (loaded by model::LoadModel) to the backend that the
// backend table holds for options.device, which prepares it for options.precision. The CPU
// backend's first engine sets the process-wide state (intra-op threads, the caching allocator); a
// later engine asking for another thread count fails with kFailedPrecondition. Errors name the
// offending option and its allowed values.
StatusOr<std::unique_ptr<Engine>> CreateEngine(const model::LoadedModel& model,
                                               const EngineOptions& options);

// Engine instances to run when the user names none (`--instances 0`): 1 on the CPU (LibTorch
// already spreads one pass over every core), 2 on a CUDA device (one stages and copies while
// the other computes). `device` as ParseDevice takes it; a malformed one counts as the CPU.
int DefaultInstances(std::string_view device);

// The devices of the backend table, and whether this build has each one's backend:
// {"cpu", built with LibTorch}, {"cuda", built with MOGSERVE_WITH_CUDA}.
struct BackendEntry {
  const char* device;
  bool built;
};
std::vector<BackendEntry> Backends();

}  // namespace mogserve::engine
