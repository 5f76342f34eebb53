// The subcommands of the mogserve executable. Each Register* adds its options to the CLI app and
// returns the function that runs it (returning the process exit code).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "api/serving_stack.h"
#include "engine/engine.h"
#include "mogserve/detector.h"
#include "mogserve/status.h"
#include "options/option_table.h"
#include "pipeline/shape_buckets.h"

namespace mogserve::cli {

using CommandRunner = std::function<int()>;

CommandRunner RegisterDetectCommand(CLI::App& app);
// `detect-video`: registered always; without MOGSERVE_WITH_VIDEO it says so and exits 3.
CommandRunner RegisterDetectVideoCommand(CLI::App& app);
// `anonymize`: pictures with their faces blurred, pixelated or filled.
CommandRunner RegisterAnonymizeCommand(CLI::App& app);
CommandRunner RegisterBenchCommand(CLI::App& app);
CommandRunner RegisterServeCommand(CLI::App& app);
CommandRunner RegisterEvalCommand(CLI::App& app);
CommandRunner RegisterProbeCommand(CLI::App& app);
CommandRunner RegisterCalibrateCommand(CLI::App& app);
// `model inspect FILE.onnx`: an ONNX detector's input, outputs, family, operators and MACs.
CommandRunner RegisterModelCommand(CLI::App& app);
// `options`: the option table as Markdown (docs/CLI.md and docs/API.md hold its output).
CommandRunner RegisterOptionsCommand(CLI::App& app);
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

// The model folder (api::ResolveModelDir): `flag` when given, else the model's own folder
// (`model`: a registry name; $MOGSERVE_MODEL_DIR for the default model) under models/ in the
// working directory, next to the build, or installed with the library.
std::string ResolveModelDir(const std::string& flag, const std::string& model = "");

// The flags of the option table's `groups` (options/option_table.h: serve has them all; detect,
// eval and the benchmarks the model and input groups), bound to `options`' fields, with the
// table's ranges, help and defaults. The flags of one group stay one set of names everywhere.
void AddOptionFlags(CLI::App& app, DetectorOptions& options,
                    std::initializer_list<opt::Group> groups);
// The same for the server's groups (kServer, kStreams, kGrpc), bound to ServingOptions' fields.
void AddServingFlags(CLI::App& app, ServingOptions& options,
                     std::initializer_list<opt::Group> groups);
// One flag of the table (a command that takes --max-pixels but not the whole pipeline group).
CLI::Option* AddOptionFlag(CLI::App& app, DetectorOptions& options, std::string_view flag);

// The model and weights the flags name and the engine's options (api::ToEngineSetup), errors
// naming the flag.
StatusOr<api::EngineSetup> ToEngineSetup(const DetectorOptions& flags);

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
// Checks `options` (every option, errors under `names`) and loads its engines; on failure prints
// "error: ..." to stderr and returns the exit code (kExitUsage for a bad option, else kExitFatal).
std::variant<api::LoadedEngines, int> CheckAndLoadEngines(const DetectorOptions& options,
                                                          const opt::OptionNames& names);
struct EngineInstances {
  std::vector<std::unique_ptr<engine::Engine>> owned;
  std::vector<engine::Engine*> all;  // owned, as raw pointers; all[0] is the first
  std::shared_ptr<const pipeline::FaceStage> face_stage;  // --landmarks' stage (null: none)
};
std::variant<EngineInstances, int> CreateEngineInstances(const DetectorOptions& flags,
                                                         int instances);

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

// SSD takes its fixed square whatever the flags say; MogFace the chosen policy.
StatusOr<pipeline::ShapeBuckets> ToShapeBuckets(const DetectorOptions& flags,
                                                const engine::EngineInfo& info);
// The serving stack's options for a batch job (`detect`, `detect-video`): the model and input
// flags of `flags`, the job's instances, policy and batch size; no warm-up (a job is one burst,
// its batch size the cap), no server deadline, count-only queue bounds (the job bounds what it
// holds).
DetectorOptions BatchJobOptions(const DetectorOptions& flags, const BatchJobFlags& job);

}  // namespace mogserve::cli
