#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "common/file_util.h"

namespace mogserve::cli {
namespace {

// Where scripts/setup.sh puts the embedded SSD-MobileNetV1, under models/.
constexpr const char* kDefaultModelFolder = "ssd_mobilenetv1";

// Prefixes a parse error with the flag it came from.
Status FlagError(const std::string& flag, const Status& status) {
  return Status(status.code(), flag + ": " + status.message());
}

}  // namespace

std::string ResolveModelDir(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("MOGSERVE_MODEL_DIR"); env != nullptr && *env != '\0') {
    return env;
  }
  const std::string relative = std::string("models/") + kDefaultModelFolder;
  const std::string found = FindProjectFolder(relative);
  return found.empty() ? relative : found;
}

std::string DefaultSsdCalibration() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  return (exe.parent_path() / "calibration" / "ssd_mobilenetv1_int8.json").string();
}

void AddEngineFlags(CLI::App& app, EngineFlags& flags) {
  app.add_option("--model", flags.model,
                 "ssd (the embedded SSD-MobileNetV1) or mogface (needs --weights or "
                 "--synthetic-weights)")
      ->capture_default_str();
  app.add_option("--model-dir", flags.model_dir,
                 "SSD: folder with the model files (default: $MOGSERVE_MODEL_DIR, else "
                 "models/ssd_mobilenetv1 in the working directory or next to the build)");
  app.add_option("--weights", flags.weights,
                 "MogFace checkpoint: .pt/.pth written by torch.save (ModelScope's "
                 "pytorch_model.pt, model_140000.pth) or .safetensors");
  app.add_option("--synthetic-weights", flags.synthetic_weights,
                 "MogFace with deterministic random weights of this variant (r101, e, r50): "
                 "to run or benchmark without a checkpoint");
  app.add_option("--seed", flags.seed, "Seed of --synthetic-weights")->capture_default_str();
  app.add_option("--precision", flags.precision,
                 "fp32, bf16 or int8 on cpu (bf16 is fast on CPUs with AVX512-BF16 or AMX, int8 "
                 "with VNNI; int8 needs --calibration); fp16 and tf32 need --device cuda")
      ->capture_default_str();
  app.add_option("--calibration", flags.calibration,
                 "int8: activation scales written by 'mogserve calibrate' for this model "
                 "(default for the SSD: calibration/ssd_mobilenetv1_int8.json beside the "
                 "executable, which the build writes)");
  app.add_option("--int8-float-layers", flags.int8_float_layers,
                 "int8: convolutions kept in FP32: first,heads (the input convolution and the "
                 "output heads), first, heads or none")
      ->capture_default_str();
  app.add_option("--device", flags.device,
                 "cpu, or cuda / cuda:N (cuDNN and own kernels on an NVIDIA GPU, in builds "
                 "with MOGSERVE_WITH_CUDA; exits 3 naming the cause without a usable GPU)")
      ->capture_default_str();
  app.add_option("--threads", flags.threads,
                 "Intra-op threads for the forward pass (0 = all cores)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--cudnn-workspace-mb", flags.cudnn_workspace_mb,
                 "CUDA: cap of one instance's cuDNN workspace, MiB")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20))
      ->capture_default_str();
  app.add_flag("--cudnn-autotune", flags.cudnn_autotune,
               "CUDA: time cuDNN's algorithms per convolution shape at start-up");
  app.add_option("--max-graphs", flags.max_graphs,
                 "CUDA: CUDA graphs kept per instance (LRU); 0 = run eagerly")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
}

StatusOr<engine::EngineOptions> ToEngineOptions(const EngineFlags& flags) {
  engine::EngineOptions options;
  auto model = engine::ParseModelKind(flags.model);
  if (!model.ok()) return FlagError("--model", model.status());
  options.model = *model;
  auto precision = engine::ParsePrecision(flags.precision);
  if (!precision.ok()) return FlagError("--precision", precision.status());
  options.precision = *precision;
  options.calibration = flags.calibration;
  using Layers = engine::EngineOptions::Int8FloatLayers;
  if (flags.int8_float_layers == "first,heads" || flags.int8_float_layers == "heads,first") {
    options.int8_float_layers = Layers::kFirstAndHeads;
  } else if (flags.int8_float_layers == "first") {
    options.int8_float_layers = Layers::kFirst;
  } else if (flags.int8_float_layers == "heads") {
    options.int8_float_layers = Layers::kHeads;
  } else if (flags.int8_float_layers == "none") {
    options.int8_float_layers = Layers::kNone;
  } else {
    return InvalidArgument("--int8-float-layers: '" + flags.int8_float_layers +
                           "' is not known; allowed: first,heads, first, heads, none");
  }
  if (options.model == engine::ModelKind::kSsd &&
      !(flags.weights.empty() && flags.synthetic_weights.empty())) {
    return InvalidArgument(
        "--weights and --synthetic-weights are for --model mogface; the SSD model is read "
        "from --model-dir");
  }
  options.model_dir = ResolveModelDir(flags.model_dir);
  // The SSD's default calibration (used by int8 only; filled at any precision because commands
  // such as bench engine --precisions and eval compare switch the precision afterwards): the
  // build's, else one installed beside the model (the container image's).
  if (options.calibration.empty() && options.model == engine::ModelKind::kSsd) {
    for (const std::string& candidate :
         {DefaultSsdCalibration(), options.model_dir + "/int8_calibration.json"}) {
      std::error_code ec;
      if (!candidate.empty() && std::filesystem::is_regular_file(candidate, ec)) {
        options.calibration = candidate;
        break;
      }
    }
  }
  options.weights = flags.weights;
  options.synthetic_weights = flags.synthetic_weights;
  options.synthetic_seed = flags.seed;
  if (!flags.synthetic_weights.empty()) {
    spdlog::warn(
        "--synthetic-weights {}: random weights (seed {}), so the detections are meaningless; "
        "use them to measure speed and memory, and --weights FILE for real faces",
        flags.synthetic_weights, flags.seed);
  }
  auto device = engine::ParseDevice(flags.device);
  if (!device.ok()) return FlagError("--device", device.status());
  options.device = flags.device;
  options.cpu.threads = flags.threads;
  options.cuda.cudnn_workspace_bytes = flags.cudnn_workspace_mb << 20;
  options.cuda.cudnn_autotune = flags.cudnn_autotune;
  options.cuda.max_graphs = flags.max_graphs;
  return options;
}

void AddInputFlags(CLI::App& app, InputFlags& flags) {
  app.add_option("--input-policy", flags.input_policy,
                 "MogFace: bucket (long side scaled to --target-size, batched by shape) or "
                 "modelscope (original size, long side > 1500 scaled to 1000, as ModelScope)")
      ->capture_default_str();
  app.add_option("--target-size", flags.target_size,
                 "MogFace bucket policy: the long side, a multiple of 32")
      ->check(CLI::Range(32, 4096))
      ->capture_default_str();
  app.add_option("--score-threshold", flags.score_threshold,
                 "Keep faces scoring above this (default: the model's, SSD 0.5, MogFace 0.82)")
      ->check(CLI::Range(0.0f, 1.0f));
  app.add_option("--nms-iou", flags.nms_iou,
                 "Drop a face overlapping a better one by more than this IoU (default: SSD "
                 "0.5, MogFace 0.4)")
      ->check(CLI::Range(0.0f, 1.0f));
  app.add_option("--top-k", flags.top_k, "Candidates entering NMS (default: SSD all, MogFace 5000)")
      ->check(CLI::Range(1, 1000000));
  app.add_option("--max-faces", flags.max_faces,
                 "At most this many faces per image (default: SSD 100, MogFace 750)")
      ->check(CLI::Range(1, 10000));
}

StatusOr<pipeline::ShapeBuckets> ToShapeBuckets(const InputFlags& flags,
                                                const engine::EngineInfo& info) {
  if (info.fixed_side > 0) return pipeline::ShapeBuckets::FixedSquare(info.fixed_side);
  auto policy = pipeline::ParseInputPolicy(flags.input_policy);
  if (!policy.ok()) return FlagError("--input-policy", policy.status());
  if (*policy == pipeline::InputPolicy::kModelScope) {
    return pipeline::ShapeBuckets::ModelScope(info.multiple);
  }
  auto buckets = pipeline::ShapeBuckets::Target(flags.target_size, info.multiple);
  if (!buckets.ok()) return FlagError("--target-size", buckets.status());
  return buckets;
}

DetectOptions ToDetectOptions(const InputFlags& flags, const DetectOptions& model_defaults) {
  DetectOptions d = model_defaults;
  if (flags.score_threshold) d.score_threshold = *flags.score_threshold;
  if (flags.nms_iou) d.nms_iou = *flags.nms_iou;
  if (flags.top_k) d.top_k = *flags.top_k;
  if (flags.max_faces) d.max_faces = *flags.max_faces;
  return d;
}

std::variant<EngineInstances, int> CreateEngineInstances(const EngineFlags& flags, int instances) {
  auto options = ToEngineOptions(flags);
  if (!options.ok()) {
    std::cerr << "error: " << options.status().message() << "\n";
    return kExitUsage;
  }
  auto engine = engine::CreateEngine(*options);
  if (!engine.ok()) {
    std::cerr << "error: cannot start the engine: " << engine.status().ToString() << "\n";
    return engine.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFatal;
  }
  EngineInstances out;
  out.owned.push_back(std::move(*engine));
  if (instances == 0) instances = engine::DefaultInstances(options->device);
  for (int i = 1; i < instances; ++i) {
    auto another = out.owned.front()->NewInstance();
    if (!another.ok()) {
      std::cerr << "error: " << another.status().ToString() << "\n";
      return kExitFatal;
    }
    out.owned.push_back(std::move(*another));
  }
  for (const auto& e : out.owned) out.all.push_back(e.get());
  return out;
}

void AddBatchJobFlags(CLI::App& app, BatchJobFlags& flags, const std::string& unit) {
  app.add_option("-o,--output", flags.output, "Write JSON lines here instead of stdout");
  app.add_option("--instances", flags.instances,
                 "Engine instances sharing the weights, one worker thread each (0: 1 on cpu, 2 "
                 "on cuda)")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  app.add_option("--policy", flags.policy,
                 "Batching policy: naive, dynamic, continuous or adaptive")
      ->capture_default_str();
  app.add_option("--batch-size", flags.batch_size,
                 "Most " + unit + " per forward pass (fewer run when fewer are ready)")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
}

}  // namespace mogserve::cli
