// The model registry: every face model mogserve runs, by name, as a spec — where its weights come
// from and how they load, what it can do, and the settings tools need from it (eval's box
// corners and WIDER thresholds, the benchmarks' input and precisions). `--model NAME`, the
// library's DetectorOptions::model, EngineOptions::model and the tools all go through it; nothing
// above compares model names as strings.
//
// Adding a model: its network and FaceModel (layer plan, weights loader, Decode), then one entry
// in model_registry.cpp (and its name in the option table's `model` choices, which a test keeps
// equal to the registry).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "model/face_model.h"
#include "mogserve/status.h"

namespace mogserve::model {

// What names a model's weights (DetectorOptions' model_dir, weights, synthetic_weights, seed).
struct ModelSource {
  std::string model_dir;          // a folder of model files (the SSD's face-api files, BlazeFace's)
  std::string weights;            // a checkpoint file
  std::string synthetic_weights;  // a variant to fill with deterministic random weights
  uint64_t synthetic_seed = 1;
  std::string family = "auto";  // an ONNX file's family (model/onnx/family.h)
};

struct ModelSpec;

struct LoadedModel {
  std::shared_ptr<const FaceModel> model;
  std::string source;  // what the weights are: the folder, the file, "synthetic (seed 1)"
  const ModelSpec* spec = nullptr;  // its registry entry (LoadModel sets it)
};

struct ModelSpec {
  enum class Weights {
    kModelDir,    // a folder of files shipped by scripts/setup.sh (weights and synthetic refused)
    kCheckpoint,  // exactly one of a checkpoint file or synthetic weights of a variant
    kOnnxFile,    // an ONNX file (ModelSource::weights) of a detector family
  };

  std::string_view name;       // --model: "ssd", "blazeface", "mogface", "onnx"
  std::string_view full_name;  // EngineInfo::model, /v1/models, OIP: "ssd-mobilenetv1"
  std::string_view summary;    // one line for --help and the docs
  Weights weights = Weights::kModelDir;
  // kModelDir: its folder under models/ (scripts/setup.sh) and the installed share/mogserve/models.
  std::string_view folder{};
  // INT8: the file name of the activation scales the build ships (beside the executable in
  // calibration/, or int8_calibration.json in the model folder); "" = calibrate it yourself.
  std::string_view builtin_calibration{};
  bool landmarks = false;  // its faces carry five landmarks
  // Eval: its reference counts a box's corner pixels inside (MogFace's +1 areas), and the WIDER
  // protocol's NMS and top-k when the model's own differ (0: keep the model's).
  bool inclusive_corners = false;
  float wider_nms_iou = 0;
  int wider_top_k = 0;
  // Benchmarks: the reduced precision measured by default beside fp32 ("" = none).
  std::string_view bench_reduced_precision{};

  StatusOr<LoadedModel> (*load)(const ModelSource& source) = nullptr;
};

// Every model, the default (the embedded SSD) first.
std::span<const ModelSpec> Models();
const ModelSpec& DefaultModel();
// The spec of `name` (its name or full name; a name ending in ".onnx" is the onnx entry's file);
// InvalidArgument naming the allowed names.
StatusOr<const ModelSpec*> FindModel(std::string_view name);
// Whether `name` names an ONNX file (`--model FILE.onnx`).
bool IsOnnxFileName(std::string_view name);
// "ssd, blazeface, mogface".
std::string ModelNames();

// A model and the weights to load it with: what `--model` and the weight options name.
struct ModelChoice {
  const ModelSpec* spec = &DefaultModel();
  ModelSource source;
};

// Loads the chosen model by its spec: the SSD and BlazeFace from source.model_dir, MogFace from
// source.weights (a checkpoint) or source.synthetic_weights (a variant: deterministic random
// weights). Errors name the file (with scripts/setup.sh for a missing SSD) or the bad option.
StatusOr<LoadedModel> LoadModel(const ModelChoice& choice);

}  // namespace mogserve::model
