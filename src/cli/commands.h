// The subcommands of the mogserve executable. Each Register* adds its options to the CLI app and
// returns the function that runs it (returning the process exit code).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "engine/engine.h"
#include "mogserve/detector.h"
#include "mogserve/status.h"
#include "pipeline/shape_buckets.h"

namespace mogserve::cli {

using CommandRunner = std::function<int()>;

CommandRunner RegisterDetectCommand(CLI::App& app);
// `detect-video`: registered always; without MOGSERVE_WITH_VIDEO it says so and exits 3.
CommandRunner RegisterDetectVideoCommand(CLI::App& app);
CommandRunner RegisterBenchCommand(CLI::App& app);
CommandRunner RegisterServeCommand(CLI::App& app);
CommandRunner RegisterEvalCommand(CLI::App& app);
CommandRunner RegisterProbeCommand(CLI::App& app);
CommandRunner RegisterCalibrateCommand(CLI::App& app);
// `bench serve`, added to the `bench` command by RegisterBenchCommand.
CommandRunner RegisterBenchServeCommand(CLI::App& bench);
// `bench report`, added to the `bench` command by RegisterBenchCommand.
CommandRunner RegisterBenchReportCommand(CLI::App& bench);
// `bench video`, added to the `bench` command by RegisterBenchCommand.
CommandRunner RegisterBenchVideoCommand(CLI::App& bench);

// Exit codes shared by the commands.
inline constexpr int kExitOk = 0;
inline constexpr int kExitSomeFailed = 1;  // the job ran, but some inputs failed
inline constexpr int kExitUsage = 2;       // bad flags or arguments
inline constexpr int kExitFatal = 3;       // could not start (model missing, ...)

}  // namespace mogserve::cli

namespace mogserve::cli {

// THE defaults (mogserve::DetectorOptions): every flag of the model, the input, the scheduler
// and the pipeline takes its default from here, so the CLI, the benchmarks and the library agree.
inline const DetectorOptions kDefaults{};

// The model folder (api::ResolveModelDir): `flag` when given, else $MOGSERVE_MODEL_DIR, else
// models/ssd_mobilenetv1 in the working directory when it exists, else the same under <folder of
// the executable>/.. (a build/ next to the sources, as scripts/build.sh makes it), else the model
// installed with the library.
std::string ResolveModelDir(const std::string& flag);

// The model and how it runs: --model, --model-dir, --weights, --synthetic-weights, --seed,
// --precision, --device, --threads, and the CUDA backend's --cudnn-workspace-mb,
// --cudnn-autotune, --max-graphs.
struct EngineFlags {
  std::string model = kDefaults.model;
  std::string model_dir = kDefaults.model_dir;
  std::string weights = kDefaults.weights;
  std::string synthetic_weights = kDefaults.synthetic_weights;
  uint64_t seed = kDefaults.seed;
  std::string precision = kDefaults.precision;
  std::string calibration = kDefaults.calibration;  // int8 (default: api::DefaultSsdCalibration())
  std::string int8_float_layers = kDefaults.int8_float_layers;
  std::string device = kDefaults.device;
  int threads = kDefaults.threads;
  int64_t cudnn_workspace_mb = kDefaults.cudnn_workspace_mb;
  bool cudnn_autotune = kDefaults.cudnn_autotune;
  int max_graphs = kDefaults.max_graphs;
};
void AddEngineFlags(CLI::App& app, EngineFlags& flags);
// InvalidArgument naming the flag and the allowed values.
StatusOr<engine::EngineOptions> ToEngineOptions(const EngineFlags& flags);
// Copies the flags into the options the serving stack takes (api/serving_stack.h).
void ApplyEngineFlags(const EngineFlags& flags, DetectorOptions* options);

// A benchmark's precision list (`flag`: "--precisions"): each name parsed, "auto" resolved for
// `engine`'s device and calibration. A precision this CPU cannot run is an Unsupported error
// naming what it lacks when the user named it, and left out with a note on stderr when it came
// from `defaulted` (the command's own defaults), so a benchmark runs on any CPU.
StatusOr<std::vector<engine::Precision>> ParsePrecisions(const std::vector<std::string>& names,
                                                         bool defaulted,
                                                         const engine::EngineOptions& engine,
                                                         const std::string& flag);

// The engine the flags describe and `instances` - 1 more sharing its weights (one worker thread
// each in a pipeline); 0 instances: engine::DefaultInstances of the device (1 cpu, 2 cuda). On
// failure, prints "error: ..." to stderr and returns the exit code (kExitUsage for a bad flag,
// kExitFatal otherwise).
struct EngineInstances {
  std::vector<std::unique_ptr<engine::Engine>> owned;
  std::vector<engine::Engine*> all;  // owned, as raw pointers; all[0] is the first
};
std::variant<EngineInstances, int> CreateEngineInstances(const EngineFlags& flags, int instances);

// The options of a batch job through the pipeline (`detect`, `detect-video`): -o/--output,
// --instances, --policy, --batch-size. `unit` names what is batched ("images", "frames").
struct BatchJobFlags {
  std::string output;
  int instances = kDefaults.instances;  // 0: engine::DefaultInstances of the device
  std::string policy = kDefaults.scheduler;
  // An offline job's batches: smaller than the server's max_batch_size, so that the reorder
  // window (batch x instances x 3) keeps few decoded images in memory.
  int batch_size = 8;
};
void AddBatchJobFlags(CLI::App& app, BatchJobFlags& flags, const std::string& unit);

// How pictures become canvases, and what survives post-processing: --input-policy,
// --target-size, --score-threshold, --nms-iou, --top-k, --max-faces. Unset values take the
// model's defaults.
struct InputFlags {
  std::string input_policy = kDefaults.input_policy;
  int target_size = kDefaults.target_size;
  std::optional<float> score_threshold = kDefaults.score_threshold;
  std::optional<float> nms_iou = kDefaults.nms_iou;
  std::optional<int> top_k = kDefaults.top_k;
  std::optional<int> max_faces = kDefaults.max_faces;
};
void AddInputFlags(CLI::App& app, InputFlags& flags);
// SSD takes its fixed square whatever the flags say; MogFace the chosen policy.
StatusOr<pipeline::ShapeBuckets> ToShapeBuckets(const InputFlags& flags,
                                                const engine::EngineInfo& info);
DetectOptions ToDetectOptions(const InputFlags& flags, const DetectOptions& model_defaults);
void ApplyInputFlags(const InputFlags& flags, DetectorOptions* options);
// The serving stack's options for a batch job (`detect`, `detect-video`): the engine and input
// flags, the job's instances, policy and batch size; no warm-up (a job is one burst, its batch
// size the cap), no server deadline, count-only queue bounds (the job bounds what it holds).
DetectorOptions BatchJobOptions(const EngineFlags& engine, const InputFlags& input,
                                const BatchJobFlags& job);

// The batching scheduler and the pipeline's threads and warm-up: --scheduler, --max-batch-size,
// --timeout / --max-delay-ms, --max-batch-pixels, --queue-capacity, --queue-capacity-bytes,
// --request-timeout, --latency-target-ms, --pad-batches, --instances, --workers, --post-threads,
// --memory-fraction, --batch-knee, --plan-batch-sizes. Each also a MOGSERVE_* environment
// variable (serve); every default is kDefaults'.
struct PipelineFlags {
  std::string scheduler = kDefaults.scheduler;
  int max_batch_size = kDefaults.max_batch_size;
  // The deployment guide's --timeout: the max batching delay in seconds.
  double timeout_s = kDefaults.max_delay_ms / 1000;
  std::optional<double> max_delay_ms;  // the same in milliseconds; overrides --timeout
  int64_t max_batch_pixels = kDefaults.max_batch_pixels;
  int64_t queue_capacity = kDefaults.queue_capacity;
  int64_t queue_capacity_bytes = kDefaults.queue_capacity_bytes;
  double request_timeout_s = kDefaults.request_timeout_ms / 1000;
  double latency_target_ms = kDefaults.latency_target_ms;
  bool pad_batches = kDefaults.pad_batches;
  int instances = kDefaults.instances;     // 0: engine::DefaultInstances of the device
  int workers = kDefaults.decode_threads;  // decode threads; 0 = half the cores
  int post_threads = kDefaults.postprocess_threads;
  double memory_fraction = kDefaults.memory_fraction;
  double batch_knee = kDefaults.batch_knee;
  std::vector<int> plan_batch_sizes = kDefaults.plan_batch_sizes;
};
void AddPipelineFlags(CLI::App& app, PipelineFlags& flags);
void ApplyPipelineFlags(const PipelineFlags& flags, DetectorOptions* options);

}  // namespace mogserve::cli
