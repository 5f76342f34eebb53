#include "api/serving_stack.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <sstream>

#include <spdlog/spdlog.h>

#include "api/landmark_stage.h"
#include "common/cpu_info.h"
#include "common/file_util.h"
#include "common/process_memory.h"
#include "model/face_landmark_68.h"
#include "model/onnx/onnx_model.h"
#include "pipeline/buffer_plan.h"

namespace mogserve::api {
namespace {

namespace fs = std::filesystem;

// Prefixes an error with the option it came from.
Status OptionError(const std::string& option, const Status& status) {
  return Status(status.code(), option + ": " + status.message());
}

bool IsDirectory(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

// The model installed with mogserve (<datadir>/mogserve/models/<folder>), found from the folder of
// the binary holding this code: the installed libmogserve.so (in <libdir>) or the mogserve
// executable (in <bindir>); CMake compiles in both relative paths. Empty when neither exists.
std::string InstalledModelDir(std::string_view model_folder) {
  Dl_info where{};
  if (dladdr(reinterpret_cast<const void*>(&InstalledModelDir), &where) == 0 ||
      where.dli_fname == nullptr) {
    return "";
  }
  std::error_code ec;
  const fs::path folder = fs::canonical(where.dli_fname, ec).parent_path();
  if (ec) return "";
  for (const char* to_models : {MOGSERVE_LIBDIR_TO_MODELS, MOGSERVE_BINDIR_TO_MODELS}) {
    const fs::path dir = folder / to_models / model_folder;
    if (IsDirectory(dir)) return dir.lexically_normal().string();
  }
  return "";
}

double Seconds(double ms) {
  return ms / 1000.0;
}

scheduler::Duration FromMs(double ms) {
  return std::chrono::duration_cast<scheduler::Duration>(
      std::chrono::duration<double, std::milli>(ms));
}

}  // namespace

std::string ResolveModelDir(const std::string& option, std::string_view model_folder) {
  if (!option.empty()) return option;
  const char* env = std::getenv("MOGSERVE_MODEL_DIR");
  if (model_folder == model::DefaultModel().folder && env != nullptr && *env != '\0') return env;
  const std::string relative = "models/" + std::string(model_folder);
  if (std::string found = FindProjectFolder(relative); !found.empty()) return found;
  if (std::string installed = InstalledModelDir(model_folder); !installed.empty()) return installed;
  return relative;
}

std::string BuiltinCalibration(const model::ModelSpec& spec) {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  return (exe.parent_path() / "calibration" / std::string(spec.builtin_calibration)).string();
}

StatusOr<model::ModelChoice> ToModelChoice(const DetectorOptions& o, const OptionNames& names) {
  model::ModelChoice choice;
  auto spec = model::FindModel(o.model);
  if (!spec.ok()) return OptionError(names("model"), spec.status());
  choice.spec = *spec;
  if (choice.spec->weights == model::ModelSpec::Weights::kModelDir &&
      !(o.weights.empty() && o.synthetic_weights.empty())) {
    return InvalidArgument(names("weights") + " and " + names("synthetic_weights") + " are for " +
                           names("model") + " mogface; the " + std::string(choice.spec->name) +
                           " model is read from " + names("model_dir"));
  }
  choice.source = {ResolveModelDir(o.model_dir, choice.spec->folder), o.weights,
                   o.synthetic_weights, o.seed, o.model_family};
  if (choice.spec->weights == model::ModelSpec::Weights::kOnnxFile &&
      model::IsOnnxFileName(o.model)) {
    if (!o.weights.empty()) {
      return InvalidArgument(names("weights") + ": the ONNX file is already named by " +
                             names("model") + " (" + o.model + ")");
    }
    choice.source.weights = o.model;
  }
  return choice;
}

StatusOr<engine::EngineOptions> ToEngineOptions(const DetectorOptions& o,
                                                const OptionNames& names) {
  engine::EngineOptions options;
  MOGSERVE_ASSIGN_OR_RETURN(const model::ModelChoice model, ToModelChoice(o, names));
  const bool auto_precision = o.precision == "auto";
  if (!auto_precision) {
    auto precision = engine::ParsePrecision(o.precision);
    if (!precision.ok()) {
      return InvalidArgument(names("precision") + ": " + precision.status().message() + ", auto");
    }
    options.precision = *precision;
  }
  options.calibration = o.calibration;
  using Layers = engine::EngineOptions::Int8FloatLayers;
  if (o.int8_float_layers == "first,heads" || o.int8_float_layers == "heads,first") {
    options.int8_float_layers = Layers::kFirstAndHeads;
  } else if (o.int8_float_layers == "first") {
    options.int8_float_layers = Layers::kFirst;
  } else if (o.int8_float_layers == "heads") {
    options.int8_float_layers = Layers::kHeads;
  } else if (o.int8_float_layers == "none") {
    options.int8_float_layers = Layers::kNone;
  } else {
    return InvalidArgument(names("int8_float_layers") + ": '" + o.int8_float_layers +
                           "' is not known; allowed: first,heads, first, heads, none");
  }
  // The SSD's default calibration (used by int8 only; filled at any precision because commands
  // such as bench engine --precisions and eval compare switch the precision afterwards): the
  // build's, else one installed beside the model (the container image's).
  if (options.calibration.empty() && !model.spec->builtin_calibration.empty()) {
    for (const std::string& candidate :
         {BuiltinCalibration(*model.spec), model.source.model_dir + "/int8_calibration.json"}) {
      std::error_code ec;
      if (!candidate.empty() && fs::is_regular_file(candidate, ec)) {
        options.calibration = candidate;
        break;
      }
    }
  }
  if (!o.synthetic_weights.empty()) {
    spdlog::warn(
        "{} {}: random weights (seed {}), so the detections are meaningless; use them to "
        "measure speed and memory, and {} for real faces",
        names("synthetic_weights"), o.synthetic_weights, o.seed, names("weights"));
  }
  auto device = engine::ParseDevice(o.device);
  if (!device.ok()) return OptionError(names("device"), device.status());
  options.device = o.device;
  if (auto_precision) {
    const engine::PrecisionChoice choice =
        engine::ChooseAutoPrecision(*device, !options.calibration.empty());
    options.precision = choice.precision;
    options.precision_choice = choice.why;
  }
  if (device->backend == "cpu" && options.precision == engine::Precision::kBf16 &&
      HostCpu().RunsBf16() && !HostCpu().NativeBf16()) {
    spdlog::warn(
        "{} bf16: this CPU has no AVX512-BF16 or AMX, so oneDNN emulates BF16 "
        "(slower than fp32; int8 or fp32 are faster here)",
        names("precision"));
  }
  options.cpu.threads = o.threads;
  options.cuda.cudnn_workspace_bytes = o.cudnn_workspace_mb << 20;
  options.cuda.cudnn_autotune = o.cudnn_autotune;
  options.cuda.max_graphs = o.max_graphs;
  return options;
}

StatusOr<scheduler::SchedulerConfig> ToSchedulerConfig(const DetectorOptions& o,
                                                       const OptionNames& names) {
  scheduler::SchedulerConfig c;
  auto policy = scheduler::ParsePolicy(o.scheduler);
  if (!policy.ok()) {
    std::string message = policy.status().message();  // "policy: unknown scheduling policy ..."
    if (message.rfind("policy: ", 0) == 0) message.erase(0, 8);
    return InvalidArgument(names("scheduler") + ": " + message);
  }
  c.policy = *policy;
  c.max_batch_size = o.max_batch_size;
  c.max_delay = std::chrono::duration_cast<scheduler::Duration>(
      std::chrono::duration<double>(Seconds(o.max_delay_ms)));
  c.max_batch_pixels = o.max_batch_pixels;
  c.queue_capacity_requests = o.queue_capacity;
  c.queue_capacity_bytes = o.queue_capacity_bytes;
  c.default_timeout = FromMs(o.request_timeout_ms);
  c.latency_target = FromMs(o.latency_target_ms);
  return c;
}

StatusOr<pipeline::ShapeBuckets> ToShapeBuckets(const DetectorOptions& o,
                                                const engine::EngineInfo& info,
                                                const OptionNames& names) {
  if (info.fixed_side > 0) {
    return pipeline::ShapeBuckets::FixedSquare(info.fixed_side, info.fixed_fit);
  }
  if (info.native_multiple > 0) return pipeline::ShapeBuckets::Native(info.native_multiple);
  auto policy = pipeline::ParseInputPolicy(o.input_policy);
  if (!policy.ok()) return OptionError(names("input_policy"), policy.status());
  if (*policy == pipeline::InputPolicy::kModelScope) {
    return pipeline::ShapeBuckets::ModelScope(info.multiple);
  }
  auto buckets = pipeline::ShapeBuckets::Target(o.target_size, info.multiple);
  if (!buckets.ok()) return OptionError(names("target_size"), buckets.status());
  return buckets;
}

StatusOr<engine::EngineOptions> CheckOptions(const DetectorOptions& o, const OptionNames& names) {
  MOGSERVE_RETURN_IF_ERROR(opt::CheckRanges(o, names));
  // The input policy can only be checked against the model's geometry; its name now.
  if (!pipeline::ParseInputPolicy(o.input_policy).ok()) {
    return OptionError(names("input_policy"), pipeline::ParseInputPolicy(o.input_policy).status());
  }
  MOGSERVE_ASSIGN_OR_RETURN(scheduler::SchedulerConfig config, ToSchedulerConfig(o, names));
  MOGSERVE_RETURN_IF_ERROR(config.Validate());  // what the ranges above leave
  MOGSERVE_RETURN_IF_ERROR(ParseLandmarks(o.landmarks, names).status());
  if (o.model_family != "auto" && !model::onnx::ParseFamily(o.model_family)) {
    return InvalidArgument(names("model_family") + ": '" + o.model_family +
                           "' is not known; allowed: " + model::onnx::FamilyChoices());
  }
  return ToEngineOptions(o, names);
}

StatusOr<LandmarkChoice> ParseLandmarks(std::string_view text, const OptionNames& names) {
  if (text == "auto") return LandmarkChoice::kAuto;
  if (text == "68") return LandmarkChoice::k68;
  if (text == "model") return LandmarkChoice::kModel;
  if (text == "off") return LandmarkChoice::kOff;
  return InvalidArgument(names("landmarks") + ": '" + std::string(text) +
                         "' is not known; allowed: auto, 68, model, off");
}

bool GivesLandmarks(LandmarkChoice choice, const model::ModelSpec& spec) {
  return choice == LandmarkChoice::kAuto || choice == LandmarkChoice::k68 ||
         (choice == LandmarkChoice::kModel && spec.landmarks);
}

std::string DescribeLandmarks(LandmarkChoice choice, const model::ModelSpec& spec) {
  switch (choice) {
    case LandmarkChoice::kOff:
      return "none";
    case LandmarkChoice::kModel:
      return spec.landmarks ? "the model's own" : "none";
    case LandmarkChoice::kAuto:
      return spec.landmarks ? "the model's own" : "face-api's 68-point net, five points";
    case LandmarkChoice::k68:
      return "face-api's 68-point net, five points and all 68";
  }
  return "";
}

std::string ResolveLandmarkDir(const DetectorOptions& o) {
  if (!o.landmarks_dir.empty()) return o.landmarks_dir;
  // A models/ folder holds both: beside the detector's folder when one was named.
  const char* env = std::getenv("MOGSERVE_MODEL_DIR");
  const std::string named = !o.model_dir.empty() ? o.model_dir : (env != nullptr ? env : "");
  if (!named.empty()) {
    fs::path folder(named);
    if (!folder.has_filename()) folder = folder.parent_path();  // "models/ssd/"
    const fs::path sibling = folder.parent_path() / model::kLandmark68Folder;
    std::error_code ec;
    if (fs::is_directory(sibling, ec)) return sibling.string();
  }
  return ResolveModelDir("", model::kLandmark68Folder);
}

StatusOr<LoadedFaceStage> LoadFaceStage(const DetectorOptions& o, const model::ModelSpec& spec,
                                        const engine::EngineOptions& engine_options,
                                        const OptionNames& names) {
  MOGSERVE_ASSIGN_OR_RETURN(const LandmarkChoice choice, ParseLandmarks(o.landmarks, names));
  LoadedFaceStage out;
  out.description = DescribeLandmarks(choice, spec);
  if (choice == LandmarkChoice::kOff) {
    if (spec.landmarks) out.stage = std::make_shared<const NoLandmarks>();
    return out;
  }
  if (choice == LandmarkChoice::kModel || (choice == LandmarkChoice::kAuto && spec.landmarks)) {
    return out;
  }
  const std::string dir = ResolveLandmarkDir(o);
  auto stage = LandmarkStage::Create(
      dir, engine_options,
      choice == LandmarkChoice::k68 ? LandmarkOutput::kFiveAnd68 : LandmarkOutput::kFive);
  if (stage.ok()) {
    out.stage = std::move(*stage);
    return out;
  }
  // auto is "where there are any": without the net's files the faces come without points, said
  // once at start; 68, asked for by name, refuses to start.
  if (choice == LandmarkChoice::kAuto && stage.status().code() == StatusCode::kNotFound) {
    out.description = "none: face-api's 68-point net is not in " + dir +
                      " (scripts/setup.sh fetches it; " + names("landmarks_dir") + " names it)";
    spdlog::warn("landmarks: {}", out.description);
    return out;
  }
  return Status(stage.status().code(), names("landmarks") + " " + o.landmarks + ": " +
                                           stage.status().message() + " (or " + names("landmarks") +
                                           " model)");
}

StatusOr<EngineSetup> ToEngineSetup(const DetectorOptions& o, const OptionNames& names) {
  EngineSetup setup;
  MOGSERVE_ASSIGN_OR_RETURN(setup.engine, ToEngineOptions(o, names));
  MOGSERVE_ASSIGN_OR_RETURN(setup.model, ToModelChoice(o, names));
  return setup;
}

StatusOr<std::unique_ptr<engine::Engine>> LoadEngine(const model::ModelChoice& model,
                                                     const engine::EngineOptions& options) {
  MOGSERVE_RETURN_IF_ERROR(engine::CheckEngineOptions(options));
  MOGSERVE_ASSIGN_OR_RETURN(const model::LoadedModel loaded, model::LoadModel(model));
  return engine::CreateEngine(loaded, options);
}

StatusOr<LoadedEngines> LoadEngines(const engine::EngineOptions& engine_options,
                                    const DetectorOptions& options, const OptionNames& names) {
  MOGSERVE_ASSIGN_OR_RETURN(const model::ModelChoice model, ToModelChoice(options, names));
  auto engine = LoadEngine(model, engine_options);
  if (!engine.ok()) {
    return Status(engine.status().code(), "cannot start the engine: " + engine.status().ToString());
  }
  MOGSERVE_ASSIGN_OR_RETURN(pipeline::ShapeBuckets buckets,
                            ToShapeBuckets(options, (*engine)->info(), names));
  LoadedEngines loaded{{}, {}, (*engine)->model(), std::move(buckets)};
  loaded.owned.push_back(std::move(*engine));
  const int instances =
      options.instances > 0 ? options.instances : engine::DefaultInstances(engine_options.device);
  for (int i = 1; i < instances; ++i) {
    MOGSERVE_ASSIGN_OR_RETURN(std::unique_ptr<engine::Engine> another,
                              loaded.owned.front()->NewInstance());
    loaded.owned.push_back(std::move(another));
  }
  for (auto& e : loaded.owned) loaded.engines.push_back(e.get());
  MOGSERVE_ASSIGN_OR_RETURN(LoadedFaceStage stage,
                            LoadFaceStage(options, *model.spec, engine_options, names));
  loaded.face_stage = std::move(stage.stage);
  loaded.landmarks = std::move(stage.description);
  return loaded;
}

pipeline::PipelineOptions ToPipelineOptions(const DetectorOptions& o,
                                            const scheduler::SchedulerConfig& config,
                                            const pipeline::ShapeBuckets& buckets,
                                            const model::OutputDecoder& decoder) {
  pipeline::PipelineOptions options;
  options.buckets = buckets;
  options.scheduler = config;
  // Requests still decoding hold their encoded bytes; the queue capacity bounds them too (the
  // server's body budget, --max-body-bytes-in-flight, bounds their bytes until answered).
  options.max_preprocessing = static_cast<int>(std::min<int64_t>(o.queue_capacity, 1 << 30));
  // The forward pass already uses every core; more decoders than half the cores only preempt
  // its OpenMP threads (measured on 2 cores: 200 photos in 8.7 s with 1 decoder, 9.8 s with 2).
  options.preprocess_threads =
      o.decode_threads > 0 ? o.decode_threads : std::max(1, AvailableCores() / 2);
  options.postprocess_threads = o.postprocess_threads;
  options.decode.max_pixels = o.max_pixels;
  options.detect = opt::ApplyDetectOverrides(o, decoder.default_detect_options());
  return options;
}

StatusOr<ServingPipeline> StartPipeline(const DetectorOptions& o, const LoadedEngines& loaded,
                                        pipeline::PipelineObserver* observer,
                                        const OptionNames& names) {
  MOGSERVE_ASSIGN_OR_RETURN(scheduler::SchedulerConfig config, ToSchedulerConfig(o, names));
  std::string buffer_plan;
  std::vector<pipeline::LatencySample> latency_seed;
  if (!o.plan_batch_sizes.empty()) {
    // Warm-up: measure each bucket and batch size, size batches from the memory budget.
    pipeline::BufferPlanOptions plan_options;
    plan_options.batch_sizes.clear();
    for (int b : o.plan_batch_sizes) {
      if (b <= o.max_batch_size) plan_options.batch_sizes.push_back(b);
    }
    if (plan_options.batch_sizes.empty()) plan_options.batch_sizes = {1};
    plan_options.memory_fraction = o.memory_fraction;
    plan_options.throughput_knee = o.batch_knee;
    auto plan =
        pipeline::BufferPlan::Measure(*loaded.engines.front(), loaded.buckets, plan_options);
    if (!plan.ok()) {
      return Status(plan.status().code(), "warm-up failed: " + plan.status().ToString());
    }
    plan->ApplyTo(&config, o.pad_batches);
    // The warm-up ran every candidate batch; the caps let only smaller ones run from now on.
    // Give the warm-up's cached blocks back: the first batches refill the cache with what the
    // batches that do run need. (Capping the cache at the measured peak instead cost 25-35 % of
    // the throughput: a pass allocates more distinct blocks than its peak, so the cache evicted
    // and page-faulted fresh blocks on every pass.)
    loaded.engines.front()->ReleaseCachedMemory();
    ReleaseFreeHeapMemory();
    buffer_plan = plan->Describe();
    latency_seed = plan->latency_samples();
  }

  pipeline::PipelineOptions options = ToPipelineOptions(o, config, loaded.buckets, *loaded.model);
  options.face_stage = loaded.face_stage.get();
  options.latency_seed = std::move(latency_seed);
  options.observer = observer;
  const DetectOptions defaults = *options.detect;
  ServingPipeline out;
  MOGSERVE_ASSIGN_OR_RETURN(
      out.pipeline, pipeline::Pipeline::Create(loaded.engines, loaded.model.get(), options));
  out.preprocess_threads = options.preprocess_threads;
  out.description.info = loaded.engines.front()->info();
  out.description.input_policy = loaded.buckets.Describe();
  out.description.landmarks = loaded.landmarks;
  out.description.buffer_plan = buffer_plan;
  out.description.defaults = defaults;
  out.description.instances = static_cast<int>(loaded.engines.size());
  std::ostringstream scheduler;
  scheduler << scheduler::PolicyName(config.policy) << ", max batch " << config.max_batch_size
            << ", max delay " << Seconds(o.max_delay_ms) * 1000 << " ms";
  out.description.scheduler = scheduler.str();
  return out;
}

}  // namespace mogserve::api
