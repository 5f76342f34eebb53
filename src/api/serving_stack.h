// The one serving stack: how engines, the batching scheduler and the pipeline are assembled from
// one set of options (mogserve::DetectorOptions, whose defaults are THE defaults). `mogserve
// serve`, `bench serve` / `bench video`, `mogserve detect` and the public Detector all build
// their pipeline here, so the numbers a benchmark measures are the server's and the library's.
//
//   options → ToEngineOptions → LoadEngines (instances sharing weights, shape buckets)
//           → StartPipeline (buffer-plan warm-up, scheduler caps, threads) → pipeline::Pipeline
//
// Errors name the option. The CLI passes OptionNames holding its flag names, so the same check
// says "--scheduler: ..." on the command line and "scheduler: ..." in the library.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine.h"
#include "model/model_registry.h"
#include "mogserve/options.h"
#include "options/option_table.h"
#include "pipeline/face_stage.h"
#include "pipeline/pipeline.h"
#include "pipeline/pipeline_observer.h"
#include "pipeline/shape_buckets.h"
#include "pipeline/stack_description.h"
#include "scheduler/scheduler_config.h"

namespace mogserve::api {

using OptionNames = opt::OptionNames;

// A model's folder (ModelSpec::folder: "ssd_mobilenetv1", "blazeface"): `option` when given,
// else (the default model only) $MOGSERVE_MODEL_DIR, else models/<folder> in the working
// directory, else the same next to the build (<folder of the executable>/..), else the model
// installed with mogserve (<datadir>/mogserve/models/<folder>, found from the installed
// library's or executable's own path). When none exists: models/<folder> (the engine's error
// then names it).
std::string ResolveModelDir(const std::string& option,
                            std::string_view model_folder = model::DefaultModel().folder);

// The INT8 calibration the build writes for a model that ships one (ModelSpec::
// builtin_calibration): <folder of the executable>/calibration/<its file>.
std::string BuiltinCalibration(const model::ModelSpec& spec);

// The model the options name: its registry spec (`model`) and its weights (`weights`,
// `synthetic_weights`, `seed`, and `model_dir` as ResolveModelDir finds it); InvalidArgument
// naming the option and the allowed values.
StatusOr<model::ModelChoice> ToModelChoice(const DetectorOptions& options,
                                           const OptionNames& names = {});
// The engine's options (device, precision, calibration - the model's built-in one when none is
// named -, backend options); InvalidArgument naming the option and the allowed values.
StatusOr<engine::EngineOptions> ToEngineOptions(const DetectorOptions& options,
                                                const OptionNames& names = {});
// What loads one engine: the model with its weights, and how the engine runs it.
struct EngineSetup {
  model::ModelChoice model;
  engine::EngineOptions engine;
};
// ToModelChoice and ToEngineOptions at once.
StatusOr<EngineSetup> ToEngineSetup(const DetectorOptions& options, const OptionNames& names = {});
// One engine: the options checked first (engine::CheckEngineOptions: the device, its backend,
// the precision; milliseconds), then the model loaded by its spec (model::LoadModel), then
// handed to the device's backend (engine::CreateEngine). Errors as those give them.
StatusOr<std::unique_ptr<engine::Engine>> LoadEngine(const model::ModelChoice& model,
                                                     const engine::EngineOptions& options);
// The scheduler's options (its Validate runs later, in Pipeline::Create, naming the field).
StatusOr<scheduler::SchedulerConfig> ToSchedulerConfig(const DetectorOptions& options,
                                                       const OptionNames& names = {});
// SSD takes its fixed square whatever the options say; MogFace the chosen policy.
StatusOr<pipeline::ShapeBuckets> ToShapeBuckets(const DetectorOptions& options,
                                                const engine::EngineInfo& info,
                                                const OptionNames& names = {});
// Every option checked before the slow model load, each within the option table's range
// (InvalidArgument naming it); then the engine's options (ToEngineOptions).
StatusOr<engine::EngineOptions> CheckOptions(const DetectorOptions& options,
                                             const OptionNames& names = {});

// --landmarks: where the five points come from.
enum class LandmarkChoice { kAuto, k68, kModel, kOff };
StatusOr<LandmarkChoice> ParseLandmarks(std::string_view text, const OptionNames& names = {});
// Whether faces get five points under `choice` with `spec`'s model (the net or the model's own;
// auto without the net's files answers without them, with a warning at start).
bool GivesLandmarks(LandmarkChoice choice, const model::ModelSpec& spec);
// "the model's own", "face-api's 68-point net, five points", "none", ...
std::string DescribeLandmarks(LandmarkChoice choice, const model::ModelSpec& spec);
// The 68-point landmark net's folder: `landmarks_dir` when given, else face_landmark_68 beside
// the detector's folder when one was named (model_dir, else $MOGSERVE_MODEL_DIR: a models/ folder
// holds both), else as ResolveModelDir finds models/face_landmark_68.
std::string ResolveLandmarkDir(const DetectorOptions& options);
// The stage `landmarks` asks for with `spec`'s model: the 68-point landmark net (api::
// LandmarkStage, on engine_options' device in FP32), one that removes the model's own points
// (off), or none (null: the model's own points, or none, as decoded); and its description. auto
// without the net's files: none, with a warning at start; 68 without them: the error, naming
// the option. Errors name the option.
struct LoadedFaceStage {
  std::shared_ptr<const pipeline::FaceStage> stage;
  std::string description;  // DescribeLandmarks, or why there are none
};
StatusOr<LoadedFaceStage> LoadFaceStage(const DetectorOptions& options,
                                        const model::ModelSpec& spec,
                                        const engine::EngineOptions& engine_options,
                                        const OptionNames& names = {});

struct LoadedEngines {
  std::vector<std::unique_ptr<engine::Engine>> owned;  // options.instances, sharing weights
  std::vector<engine::Engine*> engines;                // owned, as raw pointers
  // The model they run; its decoder (model::OutputDecoder) turns their output rows into faces.
  std::shared_ptr<const model::FaceModel> model;
  pipeline::ShapeBuckets buckets;
  // Run on each image's faces after decoding (LoadFaceStage); null = none.
  std::shared_ptr<const pipeline::FaceStage> face_stage{};
  std::string landmarks{};  // where the faces' points come from (DescribeLandmarks)
};
// Loads the model `options` name (ToModelChoice), the engine `engine_options` describe (from
// ToEngineOptions) and options.instances - 1 more sharing its weights (0:
// engine::DefaultInstances of the device), and the shape buckets.
// Errors: "cannot start the engine: ..." with the engine's code.
StatusOr<LoadedEngines> LoadEngines(const engine::EngineOptions& engine_options,
                                    const DetectorOptions& options, const OptionNames& names = {});

// What StartPipeline built, for banners, /v1/models and DetectorInfo.
using StackDescription = pipeline::StackDescription;

struct ServingPipeline {
  std::unique_ptr<pipeline::Pipeline> pipeline;
  StackDescription description;
  int preprocess_threads = 0;
};

// The pipeline's options from `o` around a scheduler `config` (the caller's plan already applied):
// the decode and post-processing threads, the pre-processing bound, the pixel limit and the
// detection defaults (the model's, `decoder`'s, with the options' overrides). StartPipeline and
// the in-process benchmarks (bench/pipeline_driver.cpp) build their pipelines from it.
pipeline::PipelineOptions ToPipelineOptions(const DetectorOptions& o,
                                            const scheduler::SchedulerConfig& config,
                                            const pipeline::ShapeBuckets& buckets,
                                            const model::OutputDecoder& decoder);

// Measures the buffer plan (the warm-up over options.plan_batch_sizes up to max_batch_size; an
// empty plan_batch_sizes skips it), applies it to the scheduler, starts the pipeline. `observer`
// (may be null) must outlive the pipeline.
StatusOr<ServingPipeline> StartPipeline(const DetectorOptions& options, const LoadedEngines& loaded,
                                        pipeline::PipelineObserver* observer,
                                        const OptionNames& names = {});

}  // namespace mogserve::api
