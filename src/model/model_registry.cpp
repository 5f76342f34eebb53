#include "model/model_registry.h"

#include "model/checkpoint_loader.h"
#include "model/mogface/mogface_model.h"
#include "model/mogface/synthetic_weights.h"
#include "model/onnx/blazeface_model.h"
#include "model/onnx/onnx_model.h"
#include "model/ssd_model.h"

namespace mogserve::model {
namespace {

StatusOr<LoadedModel> LoadSsd(const ModelSource& source) {
  MOGSERVE_ASSIGN_OR_RETURN(std::unique_ptr<SsdModel> ssd, SsdModel::Load(source.model_dir));
  return LoadedModel{std::move(ssd), source.model_dir};
}

StatusOr<LoadedModel> LoadBlazeFace(const ModelSource& source) {
  MOGSERVE_ASSIGN_OR_RETURN(std::unique_ptr<onnx::BlazeFaceModel> model,
                            onnx::BlazeFaceModel::Load(source.model_dir));
  return LoadedModel{std::move(model), source.model_dir};
}

StatusOr<LoadedModel> LoadMogFace(const ModelSource& source) {
  namespace mf = mogface;
  const bool synthetic = !source.synthetic_weights.empty();
  if (synthetic == !source.weights.empty()) {
    return InvalidArgument(
        "MogFace needs exactly one of --weights FILE (a .pt/.pth/.safetensors checkpoint) or "
        "--synthetic-weights VARIANT (r101, e, r50)");
  }
  HostTensorMap weights;
  LoadedModel out;
  if (synthetic) {
    MOGSERVE_ASSIGN_OR_RETURN(const mf::Variant variant, mf::ParseVariant(source.synthetic_weights));
    weights = mf::SyntheticWeights(variant, source.synthetic_seed, /*with_dsfd_heads=*/false);
    out.source = "synthetic (seed " + std::to_string(source.synthetic_seed) + ")";
  } else {
    MOGSERVE_ASSIGN_OR_RETURN(weights, LoadCheckpoint(source.weights));
    out.source = source.weights;
  }
  auto loaded = mf::MogFaceModel::Create(weights);
  if (!loaded.ok()) {
    if (synthetic) return loaded.status();
    return Status(loaded.status().code(), source.weights + ": " + loaded.status().message());
  }
  out.model = std::move(*loaded);
  return out;
}

StatusOr<LoadedModel> LoadOnnx(const ModelSource& source) {
  if (source.weights.empty()) {
    return InvalidArgument("an ONNX model needs its file: --model FILE.onnx (or --model onnx "
                           "--weights FILE.onnx)");
  }
  if (!source.synthetic_weights.empty()) {
    return InvalidArgument("--synthetic-weights is for MogFace, not an ONNX model");
  }
  MOGSERVE_ASSIGN_OR_RETURN(std::unique_ptr<FaceModel> model,
                            onnx::LoadOnnxDetector(source.weights, source.family));
  return LoadedModel{std::move(model), source.weights};
}

// clang-format off
constexpr ModelSpec kModels[] = {
  {.name = "ssd", .full_name = "ssd-mobilenetv1",
   .summary = "SSD-MobileNetV1 (face-api.js), 512x512, the embedded default",
   .weights = ModelSpec::Weights::kModelDir, .folder = "ssd_mobilenetv1",
   .builtin_calibration = "ssd_mobilenetv1_int8.json",
   .load = LoadSsd},
  {.name = "blazeface", .full_name = "blazeface",
   .summary = "MediaPipe BlazeFace (back camera, 256x256) with five landmarks: the fast model",
   .weights = ModelSpec::Weights::kModelDir, .folder = "blazeface",
   .landmarks = true,
   .load = LoadBlazeFace},
  {.name = "mogface", .full_name = "mogface",
   .summary = "MogFace (ModelScope's MogFace-large, ResNet-101; also E and R50), any size",
   .weights = ModelSpec::Weights::kCheckpoint,
   .inclusive_corners = true, .wider_nms_iou = 0.3f, .wider_top_k = 5000,
   .bench_reduced_precision = "bf16",
   .load = LoadMogFace},
  {.name = "onnx", .full_name = "onnx",
   .summary = "An ONNX face detector (--model FILE.onnx): insightface SCRFD decoded so far",
   .weights = ModelSpec::Weights::kOnnxFile,
   .landmarks = true,
   .load = LoadOnnx},
};
// clang-format on

}  // namespace

std::span<const ModelSpec> Models() {
  return kModels;
}

const ModelSpec& DefaultModel() {
  return kModels[0];
}

bool IsOnnxFileName(std::string_view name) {
  return name.size() > 5 && name.substr(name.size() - 5) == ".onnx";
}

StatusOr<const ModelSpec*> FindModel(std::string_view name) {
  if (IsOnnxFileName(name)) name = "onnx";
  for (const ModelSpec& spec : kModels) {
    if (name == spec.name || name == spec.full_name) return &spec;
  }
  return InvalidArgument("model '" + std::string(name) + "' is not known; allowed: " + ModelNames());
}

StatusOr<LoadedModel> LoadModel(const ModelChoice& choice) {
  if (choice.spec == nullptr) return InvalidArgument("no model chosen");
  const ModelSpec& spec = *choice.spec;
  MOGSERVE_ASSIGN_OR_RETURN(LoadedModel loaded, spec.load(choice.source));
  loaded.spec = &spec;
  return loaded;
}

std::string ModelNames() {
  std::string names;
  for (const ModelSpec& spec : kModels) names += (names.empty() ? "" : ", ") + std::string(spec.name);
  return names;
}

}  // namespace mogserve::model
