// The CPU backend: any model's layer plan run through LibTorch/oneDNN (plan_runner.h), the
// canvases normalised in one pass into the input, the caching CPU allocator and channels-last
// activations.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <type_traits>
#include <utility>

#include "common/cpu_info.h"
#include "engine/caching_cpu_allocator.h"
#include "engine/cpu_backend.h"
#include "engine/model_engine.h"
#include "engine/torch/plan_runner.h"
#include "model/layer_plan.h"

namespace mogserve::engine {
namespace {

using torch_backend::TorchWeights;

// The backend's process-wide state, set by the first engine: LibTorch's intra-op thread count
// is global, so engines with different counts cannot coexist.
Status InitCpuBackend(const CpuBackendOptions& options, int* threads) {
  static std::mutex mu;
  static int process_threads = 0;  // guarded by mu; 0 until the first engine
  const int wanted = options.threads > 0 ? options.threads : AvailableCores();
  std::lock_guard<std::mutex> lock(mu);
  if (process_threads == 0) {
    ApplyCpuIsaCapToLibraries();  // before oneDNN and ATen pick their kernels
    at::set_num_threads(wanted);
    process_threads = wanted;
  } else if (wanted != process_threads) {
    return FailedPrecondition("the CPU backend of this process runs " +
                              std::to_string(process_threads) +
                              " intra-op threads (set by its first engine); an engine cannot "
                              "ask for " +
                              std::to_string(wanted));
  }
  // Installed once by the first engine that wants it (then later engines only move its cap):
  // a benchmark can measure engines on the system allocator before it.
  if (options.allocator_cache_bytes > 0) InstallCachingCpuAllocator(options.allocator_cache_bytes);
  // INT8 convolutions go through the oneDNN quantized engine (plan_runner.cpp: QNNPACK, the
  // only other one this LibTorch has, is ~17x slower here).
  for (const at::QEngine e : at::globalContext().supportedQEngines()) {
    if (e == at::QEngine::ONEDNN) at::globalContext().setQEngine(e);
  }
  *threads = process_threads;
  return Status::Ok();
}

class CpuEngine final : public ModelEngine {
 public:
  CpuEngine(EngineInfo info, std::shared_ptr<const model::FaceModel> model,
            std::shared_ptr<const TorchWeights> weights)
      : ModelEngine(std::move(info), std::move(model)), weights_(std::move(weights)) {}

  // Calibration: the FP32 pass over `batch`, each calibrated tensor's values into `histograms`.
  Status Observe(const CanvasBatch& batch, const std::vector<bool>& calibrated,
                 std::vector<model::ActivationHistogram>& histograms) {
    try {
      c10::InferenceMode inference_mode;
      MOGSERVE_ASSIGN_OR_RETURN(const model::LayerPlan* plan, PlanFor(batch));
      MOGSERVE_ASSIGN_OR_RETURN(at::Tensor input, Input(batch));
      const int64_t n = static_cast<int64_t>(batch.canvases.size());
      const torch_backend::TensorObserver observe = [&](int tensor, const at::Tensor& value) {
        if (!calibrated[tensor]) return;
        // Only the real rows (padded ones repeat the last canvas).
        const at::Tensor v = value.narrow(0, 0, n).to(at::kFloat).contiguous();
        histograms[tensor].Add(v.data_ptr<float>(), v.numel());
      };
      torch_backend::RunPlan(*plan, *weights_, std::move(input), &observe);
      return Status::Ok();
    } catch (const c10::Error& e) {
      return Internal(std::string("calibration pass failed: ") + e.what_without_backtrace());
    }
  }

  StatusOr<BatchOutputs> Forward(const CanvasBatch& batch) override {
    if (batch.canvases.empty()) return InvalidArgument("empty batch");
    try {
      c10::InferenceMode inference_mode;
      MOGSERVE_ASSIGN_OR_RETURN(const model::LayerPlan* plan, PlanFor(batch));
      MOGSERVE_ASSIGN_OR_RETURN(at::Tensor input, Input(batch));
      const torch_backend::PlanOutputs out =
          torch_backend::RunPlan(*plan, *weights_, std::move(input));
      return Collect(batch, *plan, out);
    } catch (const c10::Error& e) {
      return Internal(std::string("forward pass failed: ") + e.what_without_backtrace());
    }
  }

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
  int64_t ReleaseCachedMemory() override { return ReleaseCachedCpuMemory(); }

  StatusOr<std::unique_ptr<Engine>> NewInstance() const override {
    return std::unique_ptr<Engine>(new CpuEngine(info_, model_, weights_));
  }

 private:
  static constexpr size_t kMaxCachedPlans = 64;

  // The plan of this canvas shape, built on first use and kept (one map per instance: Forward
  // is not thread-safe, so no lock).
  StatusOr<const model::LayerPlan*> PlanFor(const CanvasBatch& batch) {
    auto it = plans_.find({batch.height, batch.width});
    if (it == plans_.end()) {
      auto plan = model::LayerPlan::Create(model_->network(), batch.height, batch.width);
      if (!plan.ok()) {
        return InvalidArgument(model_->name() + " canvases: " + plan.status().message());
      }
      // The modelscope policy runs every picture's exact shape: keep the cache bounded.
      if (plans_.size() >= kMaxCachedPlans) plans_.clear();
      it = plans_.emplace(std::make_pair(batch.height, batch.width), std::move(*plan)).first;
    }
    return &it->second;
  }

  // The batch as the network's input: [rows, 3, H, W] in the run's dtype, channels-last (a
  // view of NHWC values) or NCHW. One pass over the canvases converts, normalises and, with
  // zero padding, writes 0 right of / below each picture (MogFace, spec §10.1); padded rows
  // repeat the last canvas. (LibTorch's cast, multiply and subtract over channels-last strides
  // took three passes, ~1.5 ms of a ~25 ms SSD pass.)
  StatusOr<at::Tensor> Input(const CanvasBatch& batch) const {
    const int64_t n = static_cast<int64_t>(batch.canvases.size());
    if (!batch.geometry.empty() && static_cast<int64_t>(batch.geometry.size()) != n) {
      return InvalidArgument("geometry must have one entry per canvas");
    }
    const int64_t rows = std::max<int64_t>(n, batch.padded_batch_size);
    const int64_t h = batch.height, w = batch.width;
    const model::InputNormalization& norm = model_->network()->normalization();
    float scale[3], offset[3];  // x = v * scale + offset
    for (int c = 0; c < 3; ++c) {
      scale[c] = static_cast<float>(1.0 / norm.divisor[c]);
      offset[c] = static_cast<float>(-norm.mean[c] / norm.divisor[c]);
    }
    at::Tensor nhwc = at::empty({rows, h, w, 3}, at::TensorOptions().dtype(weights_->dtype));
    const auto fill = [&](auto* out) {
      using T = std::remove_pointer_t<decltype(out)>;
      at::parallel_for(0, rows * h, 16, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          const int64_t i = r / h, y = r % h;
          const size_t src_index = static_cast<size_t>(std::min(i, n - 1));
          const uint8_t* src = batch.canvases[src_index] + y * w * 3;
          T* dst = out + r * w * 3;
          int64_t content = w;  // pixels of this row that are picture, not zero padding
          if (norm.zero_padding && !batch.geometry.empty()) {
            const image::Letterbox& g = batch.geometry[src_index];
            content = y < g.content_height ? std::min<int64_t>(g.content_width, w) : 0;
          }
          for (int64_t x = 0; x < content; ++x) {
            for (int c = 0; c < 3; ++c) {
              dst[x * 3 + c] = static_cast<T>(src[x * 3 + c] * scale[c] + offset[c]);
            }
          }
          std::fill(dst + content * 3, dst + w * 3, static_cast<T>(0.0f));
        }
      });
    };
    if (weights_->dtype == at::kBFloat16) {
      fill(nhwc.data_ptr<at::BFloat16>());
    } else {
      fill(nhwc.data_ptr<float>());
    }
    const at::Tensor x = nhwc.permute({0, 3, 1, 2});  // channels-last strides, no copy
    return weights_->channels_last ? x : x.contiguous();
  }

  // Copies the first `n` rows of the outputs into plain arrays.
  static BatchOutputs Collect(const CanvasBatch& batch, const model::LayerPlan& plan,
                              const torch_backend::PlanOutputs& out) {
    const int64_t n = static_cast<int64_t>(batch.canvases.size());
    const at::Tensor s = out.scores.narrow(0, 0, n).contiguous();
    const at::Tensor b = out.boxes.narrow(0, 0, n).contiguous();
    BatchOutputs o;
    o.batch = static_cast<int>(n);
    o.anchors = static_cast<int>(b.size(1));
    o.canvas_width = batch.width;
    o.canvas_height = batch.height;
    o.scores.assign(s.data_ptr<float>(), s.data_ptr<float>() + s.numel());
    o.box_encodings.assign(b.data_ptr<float>(), b.data_ptr<float>() + b.numel());
    if (out.raw.defined()) {
      const at::Tensor r = out.raw.narrow(0, 0, n).contiguous();
      o.raw_floats = r.size(1);
      o.raw.assign(r.data_ptr<float>(), r.data_ptr<float>() + r.numel());
      o.raw_offsets = plan.raw_bounds();
    }
    return o;
  }

  std::shared_ptr<const TorchWeights> weights_;
  std::map<std::pair<int, int>, model::LayerPlan> plans_;
};

}  // namespace

bool CpuBackendBuilt() {
  return true;
}

StatusOr<std::unique_ptr<Engine>> CreateCpuEngine(const EngineOptions& options,
                                                  std::shared_ptr<const model::FaceModel> model,
                                                  EngineInfo info) {
  MOGSERVE_RETURN_IF_ERROR(InitCpuBackend(options.cpu, &info.threads));
  info.channels_last = options.cpu.channels_last;
  model::ActivationScales scales;
  if (options.precision == Precision::kInt8) {
    if (!options.cpu.channels_last) {
      return InvalidArgument("precision int8 runs channels-last activations only");
    }
    MOGSERVE_ASSIGN_OR_RETURN(scales,
                              model::ReadActivationScales(options.calibration, *model->network()));
  }
  try {
    c10::InferenceMode inference_mode;
    const at::ScalarType dtype = options.precision == Precision::kBf16 ? at::kBFloat16 : at::kFloat;
    auto weights = std::make_shared<TorchWeights>(torch_backend::MakeTorchWeights(
        *model->network(), model->weights(), dtype, options.cpu.channels_last));
    if (options.precision == Precision::kInt8) {
      using Layers = EngineOptions::Int8FloatLayers;
      const Layers l = options.int8_float_layers;
      torch_backend::Int8Choice choice;
      choice.first_float = l == Layers::kFirst || l == Layers::kFirstAndHeads;
      choice.heads_float = l == Layers::kHeads || l == Layers::kFirstAndHeads;
      torch_backend::AddInt8Convs(*model->network(), scales, choice, weights.get());
    }
    return std::unique_ptr<Engine>(
        new CpuEngine(std::move(info), std::move(model), std::move(weights)));
  } catch (const c10::Error& e) {
    return Internal(std::string("preparing the CPU weights failed: ") + e.what_without_backtrace());
  }
}

Status CollectActivationHistograms(const EngineOptions& options,
                                   std::shared_ptr<const model::FaceModel> model,
                                   const std::vector<CanvasBatch>& batches,
                                   std::vector<model::ActivationHistogram>* histograms) {
  EngineInfo info;
  MOGSERVE_RETURN_IF_ERROR(InitCpuBackend(options.cpu, &info.threads));
  const model::Network& net = *model->network();
  std::vector<bool> calibrated(net.tensor_channels().size(), false);
  for (int t : model::CalibratedTensors(net)) calibrated[t] = true;
  if (histograms->empty()) histograms->resize(calibrated.size());
  if (histograms->size() != calibrated.size()) {
    return Internal("calibration histograms are for another network");
  }
  try {
    c10::InferenceMode inference_mode;
    auto weights = std::make_shared<TorchWeights>(torch_backend::MakeTorchWeights(
        *model->network(), model->weights(), at::kFloat, options.cpu.channels_last));
    CpuEngine engine(std::move(info), std::move(model), std::move(weights));
    for (const CanvasBatch& batch : batches) {
      MOGSERVE_RETURN_IF_ERROR(engine.Observe(batch, calibrated, *histograms));
    }
    return Status::Ok();
  } catch (const c10::Error& e) {
    return Internal(std::string("preparing the CPU weights failed: ") + e.what_without_backtrace());
  }
}

}  // namespace mogserve::engine
