#include "cli/serving_stack.h"

#include <cmath>
#include <sstream>

#include "common/cpu_info.h"
#include "common/file_util.h"
#include "common/process_memory.h"
#include "pipeline/buffer_plan.h"

namespace mogserve::cli {
namespace {

double MaxDelaySeconds(const ServeFlags& f) {
  return f.max_delay_ms ? *f.max_delay_ms / 1000.0 : f.timeout_s;
}

StatusOr<scheduler::SchedulerConfig> ToSchedulerConfig(const ServeFlags& f) {
  scheduler::SchedulerConfig c;
  auto policy = scheduler::ParsePolicy(f.scheduler);
  if (!policy.ok())
    return Status(policy.status().code(), "--scheduler: " + policy.status().message());
  c.policy = *policy;
  c.max_batch_size = f.max_batch_size;
  c.max_delay = std::chrono::duration_cast<scheduler::Duration>(
      std::chrono::duration<double>(MaxDelaySeconds(f)));
  c.max_batch_pixels = f.max_batch_pixels;
  c.queue_capacity_requests = f.queue_capacity;
  c.queue_capacity_bytes = f.queue_capacity_bytes;
  c.default_timeout = std::chrono::duration_cast<scheduler::Duration>(
      std::chrono::duration<double>(f.request_timeout_s));
  c.latency_target = std::chrono::duration_cast<scheduler::Duration>(
      std::chrono::duration<double, std::milli>(f.latency_target_ms));
  return c;
}

// "max-batch-size" -> "MOGSERVE_MAX_BATCH_SIZE".
std::string EnvName(const std::string& long_name) {
  std::string env = "MOGSERVE_";
  for (char c : long_name) env += c == '-' ? '_' : static_cast<char>(std::toupper(c));
  return env;
}

// Adds an option that can also come from the environment as MOGSERVE_<NAME>.
template <typename T>
CLI::Option* Flag(CLI::App& app, const std::string& name, T& value, const std::string& help) {
  return app.add_option(name, value, help)->envname(EnvName(name.substr(2)))->capture_default_str();
}

}  // namespace

void AddServeFlags(CLI::App& app, ServeFlags& f) {
  AddEngineFlags(app, f.engine);
  AddInputFlags(app, f.input);
  // The model flags shared with detect can come from the environment too.
  for (CLI::Option* o : app.get_options()) {
    if (o == app.get_help_ptr()) continue;
    if (o->get_lnames().empty() || !o->get_envname().empty()) continue;
    o->envname(EnvName(o->get_lnames().front()));
  }
  Flag(app, "--host", f.host, "Address to listen on (0.0.0.0: every interface)");
  Flag(app, "--port", f.port, "Port (0: any free port)")->check(CLI::Range(0, 65535));
  Flag(app, "--admin-port", f.admin_port,
       "Also serve /healthz, /readyz, /metrics and /v2/health/* on this port, on their own event "
       "loop, so probes never wait behind detection (0: off)")
      ->check(CLI::Range(0, 65535));
  Flag(app, "--api-key", f.api_key,
       "Require 'Authorization: Bearer <key>' on /v1/* (default: none, no key needed)");
  Flag(app, "--api-key-file", f.api_key_file,
       "Read the API key from this file (first line), so it is not visible in the process list "
       "(default: none)")
      ->check(CLI::ExistingFile);
  Flag(app, "--cors-origin", f.cors_origin, "Allow this browser origin (CORS); off by default");
  Flag(app, "--model-name", f.model_name,
       "The model's name in the Open Inference Protocol's /v2/models/{name} (default: "
       "ssd-mobilenetv1 or mogface)")
      ->check([](const std::string& v) {
        const bool ok = !v.empty() && v.size() <= 128 &&
                        v.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                            "0123456789._-") == std::string::npos;
        return ok ? std::string() : "a name of 1 to 128 letters, digits, '.', '_' or '-'";
      });
  Flag(app, "--max-body-bytes", f.max_body_bytes, "Largest request body (413 beyond)")
      ->check(CLI::Range(int64_t{1024}, int64_t{1} << 34));
  Flag(app, "--max-body-bytes-in-flight", f.max_body_bytes_in_flight,
       "Request bodies held at once over all connections, until answered (503 beyond)")
      ->check(CLI::Range(int64_t{1024}, int64_t{1} << 40));
  Flag(app, "--max-images", f.max_images, "Most images in one request")
      ->check(CLI::Range(1, 10000));
  Flag(app, "--max-pixels", f.max_pixels, "Refuse images with more pixels (413)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  Flag(app, "--max-header-bytes", f.max_header_bytes,
       "Largest request line + header fields (431; 414 for a long request line)")
      ->check(CLI::Range(int64_t{1024}, int64_t{1} << 20));
  Flag(app, "--max-connections", f.max_connections,
       "Open connections; at the cap a new one displaces the longest idle or slowest-header one")
      ->check(CLI::Range(1, 1'000'000));
  Flag(app, "--io-threads", f.io_threads, "HTTP event-loop threads")->check(CLI::Range(1, 64));
  Flag(app, "--header-timeout", f.header_timeout_s,
       "Seconds a client has to send a request's header (408 after)")
      ->check(CLI::Range(0.1, 3600.0));
  Flag(app, "--body-timeout", f.body_timeout_s,
       "Seconds a client has to send a request's body once its header is in (408 after)")
      ->check(CLI::Range(0.1, 3600.0));
  Flag(app, "--idle-timeout", f.idle_timeout_s,
       "Seconds a keep-alive connection may wait for its next request")
      ->check(CLI::Range(0.1, 3600.0));
  Flag(app, "--access-log", f.access_log, "text, json or off")
      ->check(CLI::IsMember({"text", "json", "off"}));
  Flag(app, "--shutdown-delay", f.shutdown_delay_s,
       "Seconds between SIGTERM and closing the listener: readiness turns false at once, "
       "requests are still served (for a balancer or Kubernetes to stop sending)")
      ->check(CLI::Range(0.0, 3600.0));
  Flag(app, "--drain-timeout", f.drain_timeout_s,
       "Seconds to finish accepted requests after SIGINT/SIGTERM before cancelling the rest")
      ->check(CLI::Range(0.0, 3600.0));
  Flag(app, "--scheduler", f.scheduler, "naive, dynamic, continuous or adaptive");
  Flag(app, "--max-batch-size", f.max_batch_size, "Most images per forward pass")
      ->check(CLI::Range(1, 1024));
  Flag(app, "--timeout", f.timeout_s,
       "Longest a batch waits to fill, in seconds (the deployment guide's --timeout)")
      ->check(CLI::Range(0.0, 10.0));
  app.add_option("--max-delay-ms", f.max_delay_ms,
                 "The same in milliseconds; overrides --timeout when given (default: unset)")
      ->envname("MOGSERVE_MAX_DELAY_MS")
      ->check(CLI::Range(0.0, 10000.0));
  Flag(app, "--max-batch-pixels", f.max_batch_pixels, "Pixel budget per batch (0: none)")
      ->check(CLI::NonNegativeNumber);
  Flag(app, "--queue-capacity", f.queue_capacity, "Most queued images; beyond: 503")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  Flag(app, "--queue-capacity-bytes", f.queue_capacity_bytes,
       "Most bytes held by queued images; beyond: 503")
      ->check(CLI::NonNegativeNumber);
  Flag(app, "--request-timeout", f.request_timeout_s,
       "Server-side deadline in seconds; a request's timeout_ms may only shorten it")
      ->check(CLI::Range(0.0, 3600.0));
  Flag(app, "--latency-target-ms", f.latency_target_ms, "Adaptive scheduler's latency target")
      ->check(CLI::Range(1.0, 600000.0));
  app.add_flag("--pad-batches", f.pad_batches,
               "Pad batches to the planned sizes (fixed shapes, as CUDA graphs need; default: "
               "off)")
      ->envname("MOGSERVE_PAD_BATCHES");
  Flag(app, "--instances", f.instances,
       "Engine instances, one worker thread each (0: 1 on cpu, 2 on cuda)")
      ->check(CLI::Range(0, 64));
  Flag(app, "--workers", f.workers, "Decode/pre-process threads (0: half the cores)")
      ->check(CLI::Range(0, 256));
  Flag(app, "--post-threads", f.post_threads, "Post-process threads")->check(CLI::Range(1, 64));
  Flag(app, "--memory-fraction", f.memory_fraction,
       "Share of RAM (CPU) or device memory the buffer plan may use")
      ->check(CLI::Range(0.01, 1.0));
  Flag(app, "--batch-knee", f.batch_knee,
       "Cap each bucket's batch at the smallest warm-up batch size reaching this fraction of the "
       "best measured throughput (bigger batches add latency, not throughput); 0 = memory only")
      ->check(CLI::Range(0.0, 1.0));
  Flag(app, "--stream", f.streams,
       "A video stream ID=URL to detect in (repeatable; more at run time: POST /v1/streams)");
  Flag(app, "--streams-file", f.streams_file,
       "A JSON file of video streams to start with: an array of objects as POST /v1/streams "
       "takes them ({\"id\", \"url\", \"detect_fps\"?})");
  Flag(app, "--max-streams", f.max_streams, "Most video streams at once")
      ->check(CLI::Range(1, 1024));
  Flag(app, "--stream-open-timeout", f.stream_open_timeout_s,
       "Seconds a stream has to connect and find its first frame")
      ->check(CLI::Range(0.1, 3600.0));
  Flag(app, "--stream-io-timeout", f.stream_io_timeout_s,
       "Seconds a stream's read may wait for data")
      ->check(CLI::Range(0.1, 3600.0));
  Flag(app, "--stream-no-frame-timeout", f.stream_no_frame_timeout_s,
       "Seconds a live stream may go without a frame before it reconnects")
      ->check(CLI::Range(0.1, 3600.0));
  Flag(app, "--hwaccel", f.hwaccel,
       "Where the streams' video is decoded: auto (NVDEC when FFmpeg finds a GPU and its driver, "
       "else software), cuda (the same, with a warning when it falls back), none (software)")
      ->check(CLI::IsMember({"auto", "cuda", "none"}));
  Flag(app, "--max-stream-subscribers", f.max_stream_subscribers,
       "Most watchers of the streams' events, results and MJPEG at once (beyond: 503)")
      ->check(CLI::Range(1, 1024));
  Flag(app, "--plan-batch-sizes", f.plan_batch_sizes,
       "Batch sizes the start-up warm-up measures (capped by --max-batch-size)")
      ->delimiter(',')
      ->check(CLI::Range(1, 1024));
}

StatusOr<server::ServerOptions> ToServerOptions(const ServeFlags& flags) {
  server::ServerOptions o;
  o.host = flags.host;
  o.port = flags.port;
  o.api_key = flags.api_key;
  if (!flags.api_key_file.empty()) {
    if (!flags.api_key.empty()) {
      return InvalidArgument("--api-key and --api-key-file: give one, not both");
    }
    auto bytes = ReadFileBytes(flags.api_key_file);
    if (!bytes.ok()) return InvalidArgument("--api-key-file: " + bytes.status().message());
    const std::string text(bytes->begin(), bytes->end());
    o.api_key = text.substr(0, text.find_first_of("\r\n"));
    if (o.api_key.empty()) {
      return InvalidArgument("--api-key-file: " + flags.api_key_file +
                             " is empty; put the key on its first line");
    }
  }
  o.cors_origin = flags.cors_origin;
  o.model_name = flags.model_name;
  o.admin_port = flags.admin_port;
  o.limits.max_images = flags.max_images;
  o.http.max_body_bytes = flags.max_body_bytes;
  o.http.max_body_bytes_in_flight = flags.max_body_bytes_in_flight;
  o.http.max_header_bytes = flags.max_header_bytes;
  o.http.max_connections = flags.max_connections;
  const auto ms = [](double s) { return std::chrono::milliseconds(std::llround(s * 1000)); };
  o.http.header_timeout = ms(flags.header_timeout_s);
  o.http.body_timeout = ms(flags.body_timeout_s);
  o.http.idle_timeout = ms(flags.idle_timeout_s);
  o.io_threads = flags.io_threads;
  o.access_log = flags.access_log == "json"  ? server::ServerOptions::AccessLog::kJson
                 : flags.access_log == "off" ? server::ServerOptions::AccessLog::kOff
                                             : server::ServerOptions::AccessLog::kText;
  return o;
}

int ExitCodeFor(const Status& status) {
  return status.code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFatal;
}

StatusOr<LoadedEngines> LoadEngines(const ServeFlags& flags) {
  MOGSERVE_ASSIGN_OR_RETURN(const engine::EngineOptions options, ToEngineOptions(flags.engine));
  MOGSERVE_RETURN_IF_ERROR(ToSchedulerConfig(flags).status());  // bad flags before the slow load
  auto engine = engine::CreateEngine(options);
  if (!engine.ok()) {
    return Status(engine.status().code(), "cannot start the engine: " + engine.status().ToString());
  }
  MOGSERVE_ASSIGN_OR_RETURN(pipeline::ShapeBuckets buckets,
                            ToShapeBuckets(flags.input, (*engine)->info()));
  LoadedEngines loaded{{}, {}, std::move(buckets)};
  loaded.owned.push_back(std::move(*engine));
  const int instances =
      flags.instances > 0 ? flags.instances : engine::DefaultInstances(options.device);
  for (int i = 1; i < instances; ++i) {
    MOGSERVE_ASSIGN_OR_RETURN(std::unique_ptr<engine::Engine> another,
                              loaded.owned.front()->NewInstance());
    loaded.owned.push_back(std::move(another));
  }
  for (auto& e : loaded.owned) loaded.engines.push_back(e.get());
  return loaded;
}

StatusOr<ServingPipeline> StartPipeline(const ServeFlags& flags, const LoadedEngines& loaded,
                                        pipeline::PipelineObserver* observer) {
  MOGSERVE_ASSIGN_OR_RETURN(scheduler::SchedulerConfig config, ToSchedulerConfig(flags));
  // Warm-up: measure each bucket and batch size, size batches from the memory budget.
  pipeline::BufferPlanOptions plan_options;
  plan_options.batch_sizes.clear();
  for (int b : flags.plan_batch_sizes) {
    if (b <= flags.max_batch_size) plan_options.batch_sizes.push_back(b);
  }
  if (plan_options.batch_sizes.empty()) plan_options.batch_sizes = {1};
  plan_options.memory_fraction = flags.memory_fraction;
  plan_options.throughput_knee = flags.batch_knee;
  auto plan = pipeline::BufferPlan::Measure(*loaded.engines.front(), loaded.buckets, plan_options);
  if (!plan.ok()) {
    return Status(plan.status().code(), "warm-up failed: " + plan.status().ToString());
  }
  plan->ApplyTo(&config, flags.pad_batches);
  // The warm-up ran every candidate batch; the caps let only smaller ones run from now on. Give
  // the warm-up's cached blocks back: the first batches refill the cache with what the batches
  // that do run need. (Capping the cache at the measured peak instead cost 25-35 % of the
  // throughput: a pass allocates more distinct blocks than its peak, so the cache evicted and
  // page-faulted fresh blocks on every pass.)
  loaded.engines.front()->ReleaseCachedMemory();
  ReleaseFreeHeapMemory();

  pipeline::PipelineOptions options;
  options.buckets = loaded.buckets;
  options.scheduler = config;
  options.latency_seed = plan->latency_samples();
  // Requests still decoding hold their encoded bytes, which the HTTP layer's body budget
  // (--max-body-bytes-in-flight) bounds until each request is answered.
  options.max_preprocessing = static_cast<int>(flags.queue_capacity);
  options.preprocess_threads =
      flags.workers > 0 ? flags.workers : std::max(1, AvailableCores() / 2);
  options.postprocess_threads = flags.post_threads;
  options.decode.max_pixels = flags.max_pixels;
  const DetectOptions defaults =
      ToDetectOptions(flags.input, loaded.engines.front()->default_detect_options());
  options.detect = defaults;
  options.observer = observer;
  ServingPipeline out;
  MOGSERVE_ASSIGN_OR_RETURN(out.pipeline, pipeline::Pipeline::Create(loaded.engines, options));
  out.preprocess_threads = options.preprocess_threads;
  out.model.info = loaded.engines.front()->info();
  out.model.input_policy = loaded.buckets.Describe();
  out.model.buffer_plan = plan->Describe();
  out.model.defaults = defaults;
  out.model.instances = static_cast<int>(loaded.engines.size());
  std::ostringstream scheduler;
  scheduler << scheduler::PolicyName(config.policy) << ", max batch " << config.max_batch_size
            << ", max delay " << MaxDelaySeconds(flags) * 1000 << " ms";
  out.model.scheduler = scheduler.str();
  return out;
}

}  // namespace mogserve::cli
