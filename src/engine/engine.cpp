#include "engine/engine.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>

#include "common/cpu_info.h"
#include "engine/caching_cpu_allocator.h"
#include "model/checkpoint_loader.h"
#include "model/mogface/mogface_net.h"
#include "model/mogface/mogface_postprocess.h"
#include "model/mogface/synthetic_weights.h"
#include "model/ssd_box_coder.h"
#include "model/ssd_mobilenet_v1.h"
#include "model/tfjs_weights.h"

namespace mogserve::engine {

const char* ModelKindName(ModelKind kind) {
  return kind == ModelKind::kSsd ? "ssd" : "mogface";
}

StatusOr<ModelKind> ParseModelKind(std::string_view name) {
  if (name == "ssd" || name == "ssd-mobilenetv1") return ModelKind::kSsd;
  if (name == "mogface") return ModelKind::kMogFace;
  return InvalidArgument("model '" + std::string(name) + "' is not known; allowed: ssd, mogface");
}

const char* PrecisionName(Precision precision) {
  switch (precision) {
    case Precision::kFp32:
      return "fp32";
    case Precision::kBf16:
      return "bf16";
    case Precision::kFp16:
      return "fp16";
  }
  return "?";
}

StatusOr<Precision> ParsePrecision(std::string_view name) {
  if (name == "fp32") return Precision::kFp32;
  if (name == "bf16") return Precision::kBf16;
  if (name == "fp16") return Precision::kFp16;
  return InvalidArgument("precision '" + std::string(name) +
                         "' is not known; allowed: fp32, bf16, fp16");
}

std::string EngineInfo::Describe() const {
  std::string text = model;
  if (!variant.empty()) text += " " + variant;
  return text + " on " + device + ", " + precision + ", " +
         (channels_last ? "channels-last" : "NCHW") + ", " + std::to_string(threads) +
         (threads == 1 ? " thread" : " threads");
}

namespace {

// The parts every engine shares: a reused uint8 staging buffer that a batch of canvases is
// copied into (padded rows repeat the last canvas), and the CPU memory counters.
class EngineBase : public Engine {
 public:
  explicit EngineBase(EngineInfo info) : info_(std::move(info)) {}

  const EngineInfo& info() const override { return info_; }

  MemoryStats Memory() const override {
    const AllocatorStats a = GetAllocatorStats();
    MemoryStats m;
    m.in_use_bytes = a.in_use_bytes;
    m.peak_in_use_bytes = a.peak_in_use_bytes;
    m.reserved_bytes = a.in_use_bytes + a.cached_bytes;
    m.capacity_bytes = int64_t{sysconf(_SC_PHYS_PAGES)} * sysconf(_SC_PAGESIZE);
    return m;
  }
  void ResetPeakMemory() override { ResetPeakAllocatorStats(); }

 protected:
  // Checks the batch and copies it into the staging buffer: [rows, height, width, 3] uint8.
  StatusOr<at::Tensor> Stage(const CanvasBatch& batch) {
    const int64_t n = static_cast<int64_t>(batch.canvases.size());
    if (n == 0) return InvalidArgument("empty batch");
    if (batch.width < 1 || batch.height < 1) return InvalidArgument("canvas size must be >= 1");
    if (!batch.geometry.empty() && static_cast<int64_t>(batch.geometry.size()) != n) {
      return InvalidArgument("geometry must have one entry per canvas");
    }
    const int64_t rows = std::max<int64_t>(n, batch.padded_batch_size);
    const size_t canvas_bytes = static_cast<size_t>(batch.width) * batch.height * 3;
    if (!staging_.defined() || staging_.size(0) < rows || staging_.size(1) != batch.height ||
        staging_.size(2) != batch.width) {
      staging_ = at::empty({rows, batch.height, batch.width, 3}, at::kByte);
    }
    uint8_t* dst = staging_.data_ptr<uint8_t>();
    for (int64_t i = 0; i < rows; ++i) {
      std::memcpy(dst + i * canvas_bytes, batch.canvases[std::min(i, n - 1)], canvas_bytes);
    }
    return staging_.narrow(0, 0, rows);
  }

  // Copies the first `n` rows of scores [rows, S(, 1)] and boxes [rows, S, 4] off the device.
  static BatchOutputs Collect(const CanvasBatch& batch, const at::Tensor& scores,
                              const at::Tensor& boxes) {
    const int64_t n = static_cast<int64_t>(batch.canvases.size());
    const at::Tensor s = scores.narrow(0, 0, n).to(at::kFloat).contiguous();
    const at::Tensor b = boxes.narrow(0, 0, n).to(at::kFloat).contiguous();
    BatchOutputs out;
    out.batch = static_cast<int>(n);
    out.anchors = static_cast<int>(b.size(1));
    out.canvas_width = batch.width;
    out.canvas_height = batch.height;
    out.scores.assign(s.data_ptr<float>(), s.data_ptr<float>() + s.numel());
    out.box_encodings.assign(b.data_ptr<float>(), b.data_ptr<float>() + b.numel());
    return out;
  }

  EngineInfo info_;

 private:
  at::Tensor staging_;
};

class SsdEngine final : public EngineBase {
 public:
  SsdEngine(EngineInfo info, std::shared_ptr<const model::SsdMobilenetV1> net)
      : EngineBase(std::move(info)), net_(std::move(net)) {}

  DetectOptions default_detect_options() const override { return DetectOptions{}; }

  int64_t MacsPerImage(int, int) const override { return net_->MacsPerImage(); }

  StatusOr<BatchOutputs> Forward(const CanvasBatch& batch) override {
    if (!batch.canvases.empty() && (batch.width != model::SsdMobilenetV1::kInputSize ||
                                    batch.height != model::SsdMobilenetV1::kInputSize)) {
      return InvalidArgument("SSD canvases must be 512x512, not " + std::to_string(batch.width) +
                             "x" + std::to_string(batch.height));
    }
    try {
      c10::InferenceMode inference_mode;
      MOGSERVE_ASSIGN_OR_RETURN(at::Tensor staged, Stage(batch));
      const model::SsdRawOutputs out = net_->Forward(staged);
      return Collect(batch, out.scores, out.box_encodings);
    } catch (const c10::Error& e) {
      return Internal(std::string("forward pass failed: ") + e.what_without_backtrace());
    }
  }

  std::vector<Detection> Postprocess(const BatchOutputs& outputs, int row,
                                     const image::Letterbox& letterbox,
                                     const DetectOptions& options) const override {
    return model::DecodeSsdDetections(outputs.boxes_of(row), outputs.scores_of(row),
                                      net_->anchors(), options, letterbox);
  }

  StatusOr<std::unique_ptr<Engine>> NewInstance() const override {
    return std::unique_ptr<Engine>(new SsdEngine(info_, net_));
  }

 private:
  std::shared_ptr<const model::SsdMobilenetV1> net_;
};

class MogFaceEngine final : public EngineBase {
 public:
  MogFaceEngine(EngineInfo info, std::shared_ptr<const model::mogface::MogFaceNet> net)
      : EngineBase(std::move(info)), net_(std::move(net)) {}

  DetectOptions default_detect_options() const override {
    const model::mogface::MogFacePostOptions post;
    DetectOptions d;
    d.score_threshold = post.score_threshold;
    d.top_k = post.top_k;
    d.nms_iou = post.nms_iou;
    d.max_faces = post.max_faces;
    return d;
  }

  int64_t MacsPerImage(int width, int height) const override {
    return net_->MacsPerImage(height, width);
  }

  StatusOr<BatchOutputs> Forward(const CanvasBatch& batch) override {
    try {
      c10::InferenceMode inference_mode;
      MOGSERVE_ASSIGN_OR_RETURN(at::Tensor staged, Stage(batch));
      MOGSERVE_ASSIGN_OR_RETURN(const model::mogface::MogFaceOutputs out,
                                net_->Forward(Normalize(staged, batch)));
      return Collect(batch, out.conf, out.loc);
    } catch (const c10::Error& e) {
      return Internal(std::string("forward pass failed: ") + e.what_without_backtrace());
    }
  }

  std::vector<Detection> Postprocess(const BatchOutputs& outputs, int row,
                                     const image::Letterbox& letterbox,
                                     const DetectOptions& options) const override {
    model::mogface::MogFacePostOptions post;
    post.score_threshold = options.score_threshold;
    post.top_k = options.top_k > 0 ? options.top_k : outputs.anchors;
    post.nms_iou = options.nms_iou;
    post.max_faces = options.max_faces;
    post.content_width = static_cast<float>(letterbox.content_width);
    post.content_height = static_cast<float>(letterbox.content_height);
    // NMS with "+1" areas is not scale-invariant, so it runs in original pixels as ModelScope's
    // does: boxes are divided by the content scale before NMS. x and y scales differ only by
    // the rounding of the content size; y gets its exact factor afterwards.
    const double scale_x = 1.0 / letterbox.to_source_x;
    std::vector<Detection> faces = model::mogface::PostprocessMogFace(
        outputs.scores_of(row), outputs.boxes_of(row),
        Anchors(outputs.canvas_height, outputs.canvas_width), static_cast<float>(scale_x), post);
    const float fix_y = static_cast<float>(letterbox.to_source_y * scale_x);
    const float source_w = static_cast<float>(letterbox.content_width * letterbox.to_source_x);
    const float source_h = static_cast<float>(letterbox.content_height * letterbox.to_source_y);
    for (Detection& d : faces) {
      d.y1 *= fix_y;
      d.y2 *= fix_y;
      d.x1 = std::clamp(d.x1, 0.0f, source_w);
      d.x2 = std::clamp(d.x2, 0.0f, source_w);
      d.y1 = std::clamp(d.y1, 0.0f, source_h);
      d.y2 = std::clamp(d.y2, 0.0f, source_h);
    }
    std::erase_if(faces, [](const Detection& d) { return !(d.x2 > d.x1 && d.y2 > d.y1); });
    return faces;
  }

  StatusOr<std::unique_ptr<Engine>> NewInstance() const override {
    return std::unique_ptr<Engine>(new MogFaceEngine(info_, net_));
  }

 private:
  // Spec §6a: (v − mean) / std / 255 per RGB channel, as a channels-last float tensor; the
  // padding right of / below each picture is 0 after normalisation (spec §10.1).
  static at::Tensor Normalize(const at::Tensor& staged_nhwc, const CanvasBatch& batch) {
    static const float kMean[3] = {123.675f, 116.28f, 103.53f};
    static const float kInvStd[3] = {1.0f / (58.395f * 255.0f), 1.0f / (57.12f * 255.0f),
                                     1.0f / (57.375f * 255.0f)};
    at::Tensor x = staged_nhwc.permute({0, 3, 1, 2}).to(at::kFloat);  // keeps NHWC strides
    const at::Tensor mean = at::from_blob(const_cast<float*>(kMean), {1, 3, 1, 1}, at::kFloat);
    const at::Tensor inv_std = at::from_blob(const_cast<float*>(kInvStd), {1, 3, 1, 1}, at::kFloat);
    x.sub_(mean).mul_(inv_std);
    const int64_t rows = x.size(0);
    for (int64_t i = 0; i < rows; ++i) {
      if (batch.geometry.empty()) break;
      const image::Letterbox& g = batch.geometry[std::min<size_t>(i, batch.geometry.size() - 1)];
      at::Tensor image = x[i];
      if (g.content_height < batch.height) {
        image.narrow(1, g.content_height, batch.height - g.content_height).zero_();
      }
      if (g.content_width < batch.width) {
        image.narrow(2, g.content_width, batch.width - g.content_width).zero_();
      }
    }
    return x;
  }

  // Anchors depend only on the canvas shape; computed once per shape, shared by all threads.
  std::span<const float> Anchors(int height, int width) const {
    std::lock_guard<std::mutex> lock(anchors_mutex_);
    auto [it, inserted] = anchors_.try_emplace({height, width});
    if (inserted) it->second = model::mogface::MogFaceAnchors(height, width, net_->variant());
    return it->second;  // map nodes are stable; entries are never erased
  }

  std::shared_ptr<const model::mogface::MogFaceNet> net_;
  mutable std::mutex anchors_mutex_;
  mutable std::map<std::pair<int, int>, std::vector<float>> anchors_;
};

StatusOr<std::unique_ptr<Engine>> CreateSsd(const EngineOptions& options, EngineInfo info) {
  if (options.precision != Precision::kFp32) {
    return InvalidArgument(std::string("precision '") + PrecisionName(options.precision) +
                           "' is not available for the SSD model; allowed: fp32");
  }
  auto weights = model::LoadTfjsWeights(options.model_dir, model::SsdMobilenetV1::kWeightsName);
  if (!weights.ok()) {
    return Status(weights.status().code(),
                  weights.status().message() + " (run scripts/setup.sh to fetch the model)");
  }
  MOGSERVE_ASSIGN_OR_RETURN(std::unique_ptr<model::SsdMobilenetV1> net,
                            model::SsdMobilenetV1::Create(*weights, options.channels_last));
  info.model = "ssd-mobilenetv1";
  info.weights = options.model_dir;
  info.fixed_side = model::SsdMobilenetV1::kInputSize;
  return std::unique_ptr<Engine>(new SsdEngine(std::move(info), std::move(net)));
}

StatusOr<std::unique_ptr<Engine>> CreateMogFace(const EngineOptions& options, EngineInfo info) {
  namespace mf = model::mogface;
  if (options.precision == Precision::kFp16) {
    return InvalidArgument(
        "precision 'fp16' needs a CUDA device (a MOGSERVE_WITH_CUDA build); allowed on cpu: "
        "fp32, bf16");
  }
  const bool synthetic = !options.synthetic_weights.empty();
  if (synthetic == !options.weights.empty()) {
    return InvalidArgument(
        "MogFace needs exactly one of --weights FILE (a .pt/.pth/.safetensors checkpoint) or "
        "--synthetic-weights VARIANT (r101, e, r50)");
  }
  model::HostTensorMap weights;
  if (synthetic) {
    MOGSERVE_ASSIGN_OR_RETURN(const mf::Variant variant,
                              mf::ParseVariant(options.synthetic_weights));
    weights = mf::SyntheticWeights(variant, options.synthetic_seed, /*with_dsfd_heads=*/false);
    info.weights = "synthetic (seed " + std::to_string(options.synthetic_seed) + ")";
  } else {
    MOGSERVE_ASSIGN_OR_RETURN(weights, model::LoadCheckpoint(options.weights));
    info.weights = options.weights;
  }
  mf::MogFaceOptions net_options;
  net_options.channels_last = options.channels_last;
  net_options.dtype = options.precision == Precision::kBf16 ? at::kBFloat16 : at::kFloat;
  auto net = mf::MogFaceNet::Create(mf::NormalizeCheckpointKeys(std::move(weights)), net_options);
  if (!net.ok()) {
    if (synthetic) return net.status();
    return Status(net.status().code(), options.weights + ": " + net.status().message());
  }
  info.model = "mogface";
  info.variant = mf::VariantName((*net)->variant());
  info.multiple = 32;  // every P2..P5 map exactly twice the next (spec §10.1)
  return std::unique_ptr<Engine>(new MogFaceEngine(std::move(info), std::move(*net)));
}

}  // namespace

StatusOr<std::unique_ptr<Engine>> CreateEngine(const EngineOptions& options) {
  if (options.device != "cpu") {
    return InvalidArgument("device '" + options.device +
                           "' is not available in this build; allowed: cpu (CUDA devices need a "
                           "MOGSERVE_WITH_CUDA build)");
  }
  if (options.threads < 0) return InvalidArgument("threads must be >= 0");
  EngineInfo info;
  info.device = options.device;
  info.precision = PrecisionName(options.precision);
  info.channels_last = options.channels_last;
  info.threads = options.threads > 0 ? options.threads : AvailableCores();
  at::set_num_threads(info.threads);
  if (options.allocator_cache_bytes > 0) InstallCachingCpuAllocator(options.allocator_cache_bytes);
  return options.model == ModelKind::kSsd ? CreateSsd(options, std::move(info))
                                          : CreateMogFace(options, std::move(info));
}

}  // namespace mogserve::engine
