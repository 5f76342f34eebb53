// The torch-free half of the engine layer: names and parsing of the options, EngineInfo's text,
// and CreateEngine: check the options, load the model, hand it to the device's backend.
#include <algorithm>

#include "engine/cpu_backend.h"
#include "engine/engine.h"
#include "engine/model_loading.h"

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

// What the CPU backend runs, checked before the (slow) model load.
Status CheckCpuOptions(const EngineOptions& options) {
  if (options.cpu.threads < 0) return InvalidArgument("threads must be >= 0");
  if (options.model == ModelKind::kSsd && options.precision != Precision::kFp32) {
    return InvalidArgument(std::string("precision '") + PrecisionName(options.precision) +
                           "' is not available for the SSD model; allowed: fp32");
  }
  if (options.precision == Precision::kFp16) {
    return InvalidArgument(
        "precision 'fp16' is not available on cpu (allowed: fp32, bf16); it needs a CUDA "
        "backend, which mogserve does not have yet");
  }
  return Status::Ok();
}

// The backend table, keyed by device.
struct Backend {
  const char* device;
  bool (*built)();
  Status (*check)(const EngineOptions&);
  StatusOr<std::unique_ptr<Engine>> (*create)(const EngineOptions&,
                                              std::shared_ptr<const model::FaceModel>, EngineInfo);
};

constexpr Backend kBackends[] = {
    {"cpu", &CpuBackendBuilt, &CheckCpuOptions, &CreateCpuEngine},
};

}  // namespace

std::vector<BackendEntry> Backends() {
  std::vector<BackendEntry> out;
  for (const Backend& b : kBackends) out.push_back({b.device, b.built()});
  return out;
}

StatusOr<std::unique_ptr<Engine>> CreateEngine(const EngineOptions& options) {
  const Backend* backend =
      std::find_if(std::begin(kBackends), std::end(kBackends),
                   [&](const Backend& b) { return options.device == b.device; });
  if (backend == std::end(kBackends)) {
    return InvalidArgument("device '" + options.device +
                           "' is not known; allowed: cpu (mogserve has no CUDA backend yet)");
  }
  if (!backend->built()) {
    return Unsupported(
        "this build has no CPU engine: mogserve was built with "
        "MOGSERVE_WITH_TORCH=OFF (configure with -DMOGSERVE_WITH_TORCH=ON, "
        "which needs LibTorch, to run models)");
  }
  MOGSERVE_RETURN_IF_ERROR(backend->check(options));
  EngineInfo info;
  info.device = options.device;
  info.precision = PrecisionName(options.precision);
  MOGSERVE_ASSIGN_OR_RETURN(std::shared_ptr<const model::FaceModel> model,
                            LoadFaceModel(options, &info.weights));
  info.model = model->name();
  info.variant = model->variant();
  info.fixed_side = model->fixed_side();
  info.multiple = model->multiple();
  return backend->create(options, std::move(model), std::move(info));
}

}  // namespace mogserve::engine
