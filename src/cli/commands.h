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

// The model folder: `flag` when given, else $MOGSERVE_MODEL_DIR, else models/ssd_mobilenetv1 in
// the working directory when it exists, else the same under <folder of the executable>/.. (a
// build/ next to the sources, as scripts/build.sh makes it).
std::string ResolveModelDir(const std::string& flag);

// The model and how it runs: --model, --model-dir, --weights, --synthetic-weights, --seed,
// --precision, --device, --threads, and the CUDA backend's --cudnn-workspace-mb,
// --cudnn-autotune, --max-graphs.
struct EngineFlags {
  std::string model = "ssd";
  std::string model_dir;
  std::string weights;
  std::string synthetic_weights;
  uint64_t seed = 1;
  std::string precision = "fp32";
  std::string calibration;  // int8: activation scales (default: DefaultSsdCalibration())
  std::string int8_float_layers = "first,heads";
  std::string device = "cpu";
  int threads = 0;
  int64_t cudnn_workspace_mb = 256;
  bool cudnn_autotune = false;
  int max_graphs = 64;
};
void AddEngineFlags(CLI::App& app, EngineFlags& flags);
// The SSD's INT8 calibration file the build writes (`mogserve calibrate` over
// tests/data/photos): <folder of the executable>/calibration/ssd_mobilenetv1_int8.json. Without
// it, int8 looks for <model folder>/int8_calibration.json (where the container image puts it).
std::string DefaultSsdCalibration();
// InvalidArgument naming the flag and the allowed values.
StatusOr<engine::EngineOptions> ToEngineOptions(const EngineFlags& flags);

// The engine the flags describe and `instances` - 1 more sharing its weights (one worker thread
// each in a pipeline); 0 instances: engine::DefaultInstances of the device (1 cpu, 2 cuda). On failure, prints "error: ..." to stderr and returns the exit code
// (kExitUsage for a bad flag, kExitFatal otherwise).
struct EngineInstances {
  std::vector<std::unique_ptr<engine::Engine>> owned;
  std::vector<engine::Engine*> all;  // owned, as raw pointers; all[0] is the first
};
std::variant<EngineInstances, int> CreateEngineInstances(const EngineFlags& flags, int instances);

// The options of a batch job through the pipeline (`detect`, `detect-video`): -o/--output,
// --instances, --policy, --batch-size. `unit` names what is batched ("images", "frames").
struct BatchJobFlags {
  std::string output;
  int instances = 0;  // 0: engine::DefaultInstances of the device
  std::string policy = "continuous";
  int batch_size = 8;
};
void AddBatchJobFlags(CLI::App& app, BatchJobFlags& flags, const std::string& unit);

// How pictures become canvases, and what survives post-processing: --input-policy,
// --target-size, --score-threshold, --nms-iou, --top-k, --max-faces. Unset values take the
// model's defaults.
struct InputFlags {
  std::string input_policy = "bucket";
  int target_size = 640;
  std::optional<float> score_threshold;
  std::optional<float> nms_iou;
  std::optional<int> top_k;
  std::optional<int> max_faces;
};
void AddInputFlags(CLI::App& app, InputFlags& flags);
// SSD takes its fixed square whatever the flags say; MogFace the chosen policy.
StatusOr<pipeline::ShapeBuckets> ToShapeBuckets(const InputFlags& flags,
                                                const engine::EngineInfo& info);
DetectOptions ToDetectOptions(const InputFlags& flags, const DetectOptions& model_defaults);

}  // namespace mogserve::cli
