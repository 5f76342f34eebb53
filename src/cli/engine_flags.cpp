#include <iostream>

#include "api/serving_stack.h"
#include "cli/commands.h"

namespace mogserve::cli {

std::string ResolveModelDir(const std::string& flag) {
  return api::ResolveModelDir(flag);
}

void AddEngineFlags(CLI::App& app, EngineFlags& flags) {
  app.add_option("--model", flags.model,
                 "ssd (the embedded SSD-MobileNetV1) or mogface (needs --weights or "
                 "--synthetic-weights)")
      ->capture_default_str();
  app.add_option("--model-dir", flags.model_dir,
                 "SSD: folder with the model files (default: $MOGSERVE_MODEL_DIR, else "
                 "models/ssd_mobilenetv1 in the working directory or next to the build, else the "
                 "model installed with mogserve: <prefix>/share/mogserve/models/ssd_mobilenetv1)");
  app.add_option("--weights", flags.weights,
                 "MogFace checkpoint: .pt/.pth written by torch.save (ModelScope's "
                 "pytorch_model.pt, model_140000.pth) or .safetensors");
  app.add_option("--synthetic-weights", flags.synthetic_weights,
                 "MogFace with deterministic random weights of this variant (r101, e, r50): "
                 "to run or benchmark without a checkpoint");
  app.add_option("--seed", flags.seed, "Seed of --synthetic-weights")->capture_default_str();
  app.add_option("--precision", flags.precision,
                 "fp32, bf16, int8 or auto on cpu (bf16 needs AVX-512 and is fast with "
                 "AVX512-BF16 or AMX; int8 needs --calibration, the SSD's is built in, and is "
                 "fast with VNNI; auto picks int8 where calibrated, else bf16 on CPUs with BF16 "
                 "in hardware, else fp32); fp32, tf32, fp16, bf16 or auto (fp16) on cuda")
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

void ApplyEngineFlags(const EngineFlags& flags, DetectorOptions* o) {
  o->model = flags.model;
  o->model_dir = flags.model_dir;
  o->weights = flags.weights;
  o->synthetic_weights = flags.synthetic_weights;
  o->seed = flags.seed;
  o->precision = flags.precision;
  o->calibration = flags.calibration;
  o->int8_float_layers = flags.int8_float_layers;
  o->device = flags.device;
  o->threads = flags.threads;
  o->cudnn_workspace_mb = flags.cudnn_workspace_mb;
  o->cudnn_autotune = flags.cudnn_autotune;
  o->max_graphs = flags.max_graphs;
}

StatusOr<std::vector<engine::Precision>> ParsePrecisions(const std::vector<std::string>& names,
                                                         bool defaulted,
                                                         const engine::EngineOptions& engine,
                                                         const std::string& flag) {
  MOGSERVE_ASSIGN_OR_RETURN(const engine::DeviceSpec device, engine::ParseDevice(engine.device));
  std::vector<engine::Precision> out;
  for (const std::string& name : names) {
    engine::Precision precision;
    if (name == "auto") {
      precision = engine::ChooseAutoPrecision(device, !engine.calibration.empty()).precision;
    } else {
      StatusOr<engine::Precision> parsed = engine::ParsePrecision(name);
      if (!parsed.ok()) return InvalidArgument(flag + ": " + parsed.status().message() + ", auto");
      precision = *parsed;
    }
    if (device.backend == "cpu") {
      const Status runs = engine::CheckCpuRunsPrecision(precision);
      if (!runs.ok() && defaulted && runs.code() == StatusCode::kUnsupported) {
        std::cerr << "note: " << name << " left out: " << runs.message() << "\n";
        continue;
      }
      if (!runs.ok()) return Status(runs.code(), flag + ": " + runs.message());
    }
    out.push_back(precision);
  }
  return out;
}

StatusOr<engine::EngineOptions> ToEngineOptions(const EngineFlags& flags) {
  DetectorOptions o;
  ApplyEngineFlags(flags, &o);
  return api::ToEngineOptions(o, api::OptionNames::Flags());
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

void ApplyInputFlags(const InputFlags& flags, DetectorOptions* o) {
  o->input_policy = flags.input_policy;
  o->target_size = flags.target_size;
  o->score_threshold = flags.score_threshold;
  o->nms_iou = flags.nms_iou;
  o->top_k = flags.top_k;
  o->max_faces = flags.max_faces;
}

StatusOr<pipeline::ShapeBuckets> ToShapeBuckets(const InputFlags& flags,
                                                const engine::EngineInfo& info) {
  DetectorOptions o;
  ApplyInputFlags(flags, &o);
  return api::ToShapeBuckets(o, info, api::OptionNames::Flags());
}

DetectOptions ToDetectOptions(const InputFlags& flags, const DetectOptions& model_defaults) {
  DetectorOptions o;
  ApplyInputFlags(flags, &o);
  return api::ToDetectOptions(o, model_defaults);
}

void AddPipelineFlags(CLI::App& app, PipelineFlags& f) {
  app.add_option("--scheduler", f.scheduler, "naive, dynamic, continuous or adaptive")
      ->capture_default_str();
  app.add_option("--max-batch-size", f.max_batch_size, "Most images per forward pass")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  app.add_option("--timeout", f.timeout_s,
                 "Longest a batch waits to fill, in seconds (the deployment guide's --timeout)")
      ->check(CLI::Range(0.0, 10.0))
      ->capture_default_str();
  app.add_option("--max-delay-ms", f.max_delay_ms,
                 "The same in milliseconds; overrides --timeout when given (default: unset)")
      ->check(CLI::Range(0.0, 10000.0));
  app.add_option("--max-batch-pixels", f.max_batch_pixels, "Pixel budget per batch (0: none)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--queue-capacity", f.queue_capacity, "Most queued images; beyond: 503")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30))
      ->capture_default_str();
  app.add_option("--queue-capacity-bytes", f.queue_capacity_bytes,
                 "Most bytes held by queued images; beyond: 503")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--request-timeout", f.request_timeout_s,
                 "Server-side deadline in seconds; a request's timeout_ms may only shorten it")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  app.add_option("--latency-target-ms", f.latency_target_ms, "Adaptive scheduler's latency target")
      ->check(CLI::Range(1.0, 600000.0))
      ->capture_default_str();
  app.add_flag("--pad-batches", f.pad_batches,
               "Pad batches to the planned sizes (fixed shapes, as CUDA graphs need; default: "
               "off)");
  app.add_option("--instances", f.instances,
                 "Engine instances, one worker thread each (0: 1 on cpu, 2 on cuda)")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  app.add_option("--workers", f.workers, "Decode/pre-process threads (0: half the cores)")
      ->check(CLI::Range(0, 256))
      ->capture_default_str();
  app.add_option("--post-threads", f.post_threads, "Post-process threads")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--memory-fraction", f.memory_fraction,
                 "Share of RAM (CPU) or device memory the buffer plan may use")
      ->check(CLI::Range(0.01, 1.0))
      ->capture_default_str();
  app.add_option("--batch-knee", f.batch_knee,
                 "Cap each bucket's batch at the smallest warm-up batch size reaching this "
                 "fraction of the best measured throughput (bigger batches add latency, not "
                 "throughput); 0 = memory only")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--plan-batch-sizes", f.plan_batch_sizes,
                 "Batch sizes the start-up warm-up measures (capped by --max-batch-size)")
      ->delimiter(',')
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
}

void ApplyPipelineFlags(const PipelineFlags& f, DetectorOptions* o) {
  o->scheduler = f.scheduler;
  o->max_batch_size = f.max_batch_size;
  o->max_delay_ms = f.max_delay_ms ? *f.max_delay_ms : f.timeout_s * 1000;
  o->max_batch_pixels = f.max_batch_pixels;
  o->queue_capacity = f.queue_capacity;
  o->queue_capacity_bytes = f.queue_capacity_bytes;
  o->request_timeout_ms = f.request_timeout_s * 1000;
  o->latency_target_ms = f.latency_target_ms;
  o->pad_batches = f.pad_batches;
  o->instances = f.instances;
  o->decode_threads = f.workers;
  o->postprocess_threads = f.post_threads;
  o->memory_fraction = f.memory_fraction;
  o->batch_knee = f.batch_knee;
  o->plan_batch_sizes = f.plan_batch_sizes;
}

std::variant<EngineInstances, int> CreateEngineInstances(const EngineFlags& flags, int instances) {
  DetectorOptions o;
  ApplyEngineFlags(flags, &o);
  o.instances = instances;
  const api::OptionNames names = api::OptionNames::Flags();
  auto options = api::ToEngineOptions(o, names);
  if (!options.ok()) {
    std::cerr << "error: " << options.status().message() << "\n";
    return kExitUsage;
  }
  auto loaded = api::LoadEngines(*options, o, names);
  if (!loaded.ok()) {
    std::cerr << "error: " << loaded.status().message() << "\n";
    return loaded.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFatal;
  }
  EngineInstances out;
  out.owned = std::move(loaded->owned);
  out.all = std::move(loaded->engines);
  return out;
}

DetectorOptions BatchJobOptions(const EngineFlags& engine, const InputFlags& input,
                                const BatchJobFlags& job) {
  DetectorOptions o;
  ApplyEngineFlags(engine, &o);
  ApplyInputFlags(input, &o);
  o.instances = job.instances;
  o.scheduler = job.policy;
  o.max_batch_size = job.batch_size;
  o.plan_batch_sizes.clear();
  o.request_timeout_ms = 0;
  o.queue_capacity_bytes = 0;
  return o;
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
