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
#include <vector>

#include "engine/engine.h"
#include "mogserve/detector.h"
#include "pipeline/pipeline.h"
#include "pipeline/pipeline_observer.h"
#include "pipeline/shape_buckets.h"
#include "scheduler/scheduler_config.h"

namespace mogserve::api {

// The name each checked option has in error messages.
struct OptionNames {
  std::string model = "model";
  std::string model_dir = "model_dir";
  std::string weights = "weights";
  std::string synthetic_weights = "synthetic_weights";
  std::string precision = "precision";
  std::string int8_float_layers = "int8_float_layers";
  std::string device = "device";
  std::string input_policy = "input_policy";
  std::string target_size = "target_size";
  std::string scheduler = "scheduler";
  std::string max_batch_size = "max_batch_size";
  std::string instances = "instances";
  std::string decode_threads = "decode_threads";
  std::string postprocess_threads = "postprocess_threads";
  std::string plan_batch_sizes = "plan_batch_sizes";
  std::string max_pixels = "max_pixels";
  std::string threads = "threads";
  std::string cudnn_workspace_mb = "cudnn_workspace_mb";
  std::string max_graphs = "max_graphs";
  std::string score_threshold = "score_threshold";
  std::string nms_iou = "nms_iou";
  std::string top_k = "top_k";
  std::string max_faces = "max_faces";
  std::string max_delay_ms = "max_delay_ms";
  std::string max_batch_pixels = "max_batch_pixels";
  std::string queue_capacity = "queue_capacity";
  std::string queue_capacity_bytes = "queue_capacity_bytes";
  std::string request_timeout_ms = "request_timeout_ms";
  std::string latency_target_ms = "latency_target_ms";
  std::string memory_fraction = "memory_fraction";
  std::string batch_knee = "batch_knee";
  // The command-line flags (`serve`'s names).
  static OptionNames Flags();
};

// The model folder: `option` when given, else $MOGSERVE_MODEL_DIR, else models/ssd_mobilenetv1
// in the working directory, else the same next to the build (<folder of the executable>/..),
// else the model installed with mogserve (<datadir>/mogserve/models/ssd_mobilenetv1, found from
// the installed library's or executable's own path). When none exists: models/ssd_mobilenetv1 (the
// engine's error then names it).
std::string ResolveModelDir(const std::string& option);

// The SSD's INT8 calibration the build writes: <folder of the executable>/calibration/
// ssd_mobilenetv1_int8.json.
std::string DefaultSsdCalibration();

// The engine's options; InvalidArgument naming the option and the allowed values.
StatusOr<engine::EngineOptions> ToEngineOptions(const DetectorOptions& options,
                                                const OptionNames& names = {});
// The scheduler's options (its Validate runs later, in Pipeline::Create, naming the field).
StatusOr<scheduler::SchedulerConfig> ToSchedulerConfig(const DetectorOptions& options,
                                                       const OptionNames& names = {});
// SSD takes its fixed square whatever the options say; MogFace the chosen policy.
StatusOr<pipeline::ShapeBuckets> ToShapeBuckets(const DetectorOptions& options,
                                                const engine::EngineInfo& info,
                                                const OptionNames& names = {});
// The model's defaults with the options' overrides.
DetectOptions ToDetectOptions(const DetectorOptions& options, const DetectOptions& model_defaults);
// Every option checked before the slow model load, each within the range its command-line flag
// allows (InvalidArgument naming it); then the engine's options (ToEngineOptions).
StatusOr<engine::EngineOptions> CheckOptions(const DetectorOptions& options,
                                             const OptionNames& names = {});

struct LoadedEngines {
  std::vector<std::unique_ptr<engine::Engine>> owned;  // options.instances, sharing weights
  std::vector<engine::Engine*> engines;                // owned, as raw pointers
  pipeline::ShapeBuckets buckets;
};
// Loads the engine `engine_options` describe (from ToEngineOptions) and options.instances - 1
// more sharing its weights (0: engine::DefaultInstances of the device), and the shape buckets.
// Errors: "cannot start the engine: ..." with the engine's code.
StatusOr<LoadedEngines> LoadEngines(const engine::EngineOptions& engine_options,
                                    const DetectorOptions& options, const OptionNames& names = {});

// What StartPipeline built, for banners, /v1/models and DetectorInfo.
struct StackDescription {
  engine::EngineInfo info;
  std::string input_policy;  // ShapeBuckets::Describe()
  std::string buffer_plan;   // BufferPlan::Describe(); "" without a warm-up
  DetectOptions defaults;
  std::string scheduler;  // "continuous, max batch 16, max delay 2 ms"
  int instances = 1;
};

struct ServingPipeline {
  std::unique_ptr<pipeline::Pipeline> pipeline;
  StackDescription description;
  int preprocess_threads = 0;
};

// The pipeline's options from `o` around a scheduler `config` (the caller's plan already applied):
// the decode and post-processing threads, the pre-processing bound, the pixel limit and the
// detection defaults (the model's, `first`'s, with the options' overrides). StartPipeline and
// the in-process benchmarks (bench/pipeline_driver.cpp) build their pipelines from it.
pipeline::PipelineOptions ToPipelineOptions(const DetectorOptions& o,
                                            const scheduler::SchedulerConfig& config,
                                            const pipeline::ShapeBuckets& buckets,
                                            const engine::Engine& first);

// Measures the buffer plan (the warm-up over options.plan_batch_sizes up to max_batch_size; an
// empty plan_batch_sizes skips it), applies it to the scheduler, starts the pipeline. `observer`
// (may be null) must outlive the pipeline.
StatusOr<ServingPipeline> StartPipeline(const DetectorOptions& options, const LoadedEngines& loaded,
                                        pipeline::PipelineObserver* observer,
                                        const OptionNames& names = {});

}  // namespace mogserve::api
