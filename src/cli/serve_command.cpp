// `mogserve serve`: the HTTP server (server/http_server.h) on the pipeline, with the buffer plan
// measured at start-up, and graceful shutdown on SIGINT / SIGTERM.
#include <signal.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <future>
#include <iostream>
#include <thread>

#include "cli/commands.h"
#include "common/cpu_info.h"
#include "pipeline/buffer_plan.h"
#include "pipeline/pipeline.h"
#include "server/http_server.h"

namespace mogserve::cli {
namespace {

struct ServeFlags {
  EngineFlags engine;
  InputFlags input;
  std::string host = "127.0.0.1";
  int port = 7860;
  std::string api_key;
  std::string cors_origin;
  int64_t max_body_bytes = 64 << 20;
  int max_images = 32;
  int64_t max_pixels = 50'000'000;
  int max_connections = 64;
  std::string access_log = "text";
  double drain_timeout_s = 30;
  // Scheduler.
  std::string scheduler = "continuous";
  int max_batch_size = 16;
  double timeout_s = 0.002;  // the deployment guide's --timeout: the max batching delay
  int64_t max_batch_pixels = 0;
  int64_t queue_capacity = 4096;
  int64_t queue_capacity_bytes = int64_t{1} << 30;
  double request_timeout_s = 30;
  double latency_target_ms = 100;
  bool pad_batches = false;
  // Mechanism.
  int instances = 1;
  int workers = 0;  // decode threads; 0 = half the cores
  int post_threads = 1;
  double memory_fraction = 0.8;
  std::vector<int> plan_batch_sizes = {1, 2, 4, 8, 16};
};

StatusOr<scheduler::SchedulerConfig> ToSchedulerConfig(const ServeFlags& f) {
  scheduler::SchedulerConfig c;
  auto policy = scheduler::ParsePolicy(f.scheduler);
  if (!policy.ok())
    return Status(policy.status().code(), "--scheduler: " + policy.status().message());
  c.policy = *policy;
  c.max_batch_size = f.max_batch_size;
  c.max_delay =
      std::chrono::duration_cast<scheduler::Duration>(std::chrono::duration<double>(f.timeout_s));
  c.max_batch_pixels = f.max_batch_pixels;
  c.queue_capacity_requests = f.queue_capacity;
  c.queue_capacity_bytes = f.queue_capacity_bytes;
  c.default_timeout = std::chrono::duration_cast<scheduler::Duration>(
      std::chrono::duration<double>(f.request_timeout_s));
  c.latency_target = std::chrono::duration_cast<scheduler::Duration>(
      std::chrono::duration<double, std::milli>(f.latency_target_ms));
  return c;
}

// Blocks SIGINT and SIGTERM in this thread and every thread it starts afterwards, so that only
// the sigwait below receives them (no handler runs on a random thread mid-request).
sigset_t BlockShutdownSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

int RunServe(const ServeFlags& flags) {
  const sigset_t signals = BlockShutdownSignals();
  auto engine_options = ToEngineOptions(flags.engine);
  if (!engine_options.ok()) {
    std::cerr << "error: " << engine_options.status().message() << "\n";
    return kExitUsage;
  }
  auto scheduler_config = ToSchedulerConfig(flags);
  if (!scheduler_config.ok()) {
    std::cerr << "error: " << scheduler_config.status().message() << "\n";
    return kExitUsage;
  }
  spdlog::info("loading {} ...", flags.engine.model);
  auto engine = engine::CreateEngine(*engine_options);
  if (!engine.ok()) {
    std::cerr << "error: cannot load the model: " << engine.status().ToString() << "\n";
    return engine.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFatal;
  }
  auto buckets = ToShapeBuckets(flags.input, (*engine)->info());
  if (!buckets.ok()) {
    std::cerr << "error: " << buckets.status().message() << "\n";
    return kExitUsage;
  }
  std::vector<std::unique_ptr<engine::Engine>> owned;
  owned.push_back(std::move(*engine));
  for (int i = 1; i < flags.instances; ++i) {
    auto another = owned.front()->NewInstance();
    if (!another.ok()) {
      std::cerr << "error: " << another.status().ToString() << "\n";
      return kExitFatal;
    }
    owned.push_back(std::move(*another));
  }
  std::vector<engine::Engine*> engines;
  for (auto& e : owned) engines.push_back(e.get());

  server::ServerOptions server_options;
  server_options.host = flags.host;
  server_options.port = flags.port;
  server_options.api_key = flags.api_key;
  server_options.cors_origin = flags.cors_origin;
  server_options.limits.max_body_bytes = flags.max_body_bytes;
  server_options.limits.max_images = flags.max_images;
  server_options.max_connections = flags.max_connections;
  server_options.access_log = flags.access_log == "json"  ? server::ServerOptions::AccessLog::kJson
                              : flags.access_log == "off" ? server::ServerOptions::AccessLog::kOff
                                                          : server::ServerOptions::AccessLog::kText;
  server::HttpServer http(server_options);
  auto port = http.Bind();
  if (!port.ok()) {
    std::cerr << "error: " << port.status().message() << "\n";
    return kExitFatal;
  }
  const std::string url = "http://" + flags.host + ":" + std::to_string(*port) + "/";
  std::thread serving([&http] { http.Serve(); });
  spdlog::info("listening on {} (not ready: warming up)", url);

  // Warm-up: measure each bucket and batch size, size batches from the memory budget.
  pipeline::BufferPlanOptions plan_options;
  plan_options.batch_sizes.clear();
  for (int b : flags.plan_batch_sizes) {
    if (b <= flags.max_batch_size) plan_options.batch_sizes.push_back(b);
  }
  if (plan_options.batch_sizes.empty()) plan_options.batch_sizes = {1};
  plan_options.memory_fraction = flags.memory_fraction;
  auto plan = pipeline::BufferPlan::Measure(*engines.front(), *buckets, plan_options);
  if (!plan.ok()) {
    std::cerr << "error: warm-up failed: " << plan.status().ToString() << "\n";
    http.Stop();
    serving.join();
    return kExitFatal;
  }
  scheduler::SchedulerConfig config = *scheduler_config;
  plan->ApplyTo(&config, flags.pad_batches);

  pipeline::PipelineOptions pipeline_options;
  pipeline_options.buckets = *buckets;
  pipeline_options.scheduler = config;
  pipeline_options.latency_seed = plan->latency_samples();
  pipeline_options.preprocess_threads =
      flags.workers > 0 ? flags.workers : std::max(1, AvailableCores() / 2);
  pipeline_options.postprocess_threads = flags.post_threads;
  pipeline_options.decode.max_pixels = flags.max_pixels;
  const DetectOptions defaults =
      ToDetectOptions(flags.input, engines.front()->default_detect_options());
  pipeline_options.detect = defaults;
  pipeline_options.observer = http.metrics();
  auto pipeline = pipeline::Pipeline::Create(engines, pipeline_options);
  if (!pipeline.ok()) {
    std::cerr << "error: " << pipeline.status().message() << "\n";
    http.Stop();
    serving.join();
    return kExitUsage;
  }

  server::ModelDescription model;
  model.info = engines.front()->info();
  model.input_policy = buckets->Describe();
  model.buffer_plan = plan->Describe();
  model.defaults = defaults;
  model.instances = flags.instances;
  model.scheduler = std::string(scheduler::PolicyName(config.policy)) + ", max batch " +
                    std::to_string(config.max_batch_size) + ", max delay " +
                    std::to_string(flags.timeout_s * 1000) + " ms";
  http.SetPipeline(pipeline->get(), engines, model);
  spdlog::info("model: {} ({})", model.info.Describe(), model.info.weights);
  spdlog::info("instances: {}, decode threads: {}, scheduler: {}", flags.instances,
               pipeline_options.preprocess_threads, model.scheduler);
  spdlog::info("input: {}", model.input_policy);
  spdlog::info("buffer plan:\n{}", model.buffer_plan);
  spdlog::info("ready: open {} in a browser, or POST images to {}v1/detect", url, url);

  int signal_number = 0;
  sigwait(&signals, &signal_number);
  spdlog::info("{}: stopping; answering the requests already accepted (up to {} s)",
               signal_number == SIGINT ? "SIGINT" : "SIGTERM", flags.drain_timeout_s);
  http.Stop();
  // If draining takes too long, the queued requests end as cancelled (503) so every accepted
  // request still gets an answer.
  auto drained = std::async(std::launch::async, [&serving] { serving.join(); });
  if (drained.wait_for(std::chrono::duration<double>(flags.drain_timeout_s)) !=
      std::future_status::ready) {
    spdlog::warn("drain timeout: cancelling the requests still queued");
    (*pipeline)->Shutdown(pipeline::ShutdownMode::kCancel);
  }
  drained.wait();
  (*pipeline)->Shutdown(pipeline::ShutdownMode::kDrain);
  const pipeline::PipelineStats stats = (*pipeline)->Stats();
  spdlog::info("stopped: {} images done, {} ended otherwise",
               stats.count(scheduler::Outcome::kDone),
               stats.ended() - stats.count(scheduler::Outcome::kDone));
  return kExitOk;
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

CommandRunner RegisterServeCommand(CLI::App& app) {
  auto f = std::make_shared<ServeFlags>();
  AddEngineFlags(app, f->engine);
  AddInputFlags(app, f->input);
  // The model flags shared with detect can come from the environment too.
  for (CLI::Option* o : app.get_options()) {
    if (o->get_lnames().empty() || !o->get_envname().empty()) continue;
    o->envname(EnvName(o->get_lnames().front()));
  }
  Flag(app, "--host", f->host, "Address to listen on (0.0.0.0: every interface)");
  Flag(app, "--port", f->port, "Port (0: any free port)")->check(CLI::Range(0, 65535));
  Flag(app, "--api-key", f->api_key, "Require 'Authorization: Bearer <key>' on /v1/*");
  Flag(app, "--cors-origin", f->cors_origin, "Allow this browser origin (CORS); off by default");
  Flag(app, "--max-body-bytes", f->max_body_bytes, "Largest request body")
      ->check(CLI::Range(int64_t{1024}, int64_t{1} << 34));
  Flag(app, "--max-images", f->max_images, "Most images in one request")
      ->check(CLI::Range(1, 10000));
  Flag(app, "--max-pixels", f->max_pixels, "Refuse images with more pixels (413)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  Flag(app, "--max-connections", f->max_connections,
       "Connections served at once; more wait to be accepted")
      ->check(CLI::Range(1, 4096));
  Flag(app, "--access-log", f->access_log, "text, json or off")
      ->check(CLI::IsMember({"text", "json", "off"}));
  Flag(app, "--drain-timeout", f->drain_timeout_s,
       "Seconds to finish accepted requests after SIGINT/SIGTERM before cancelling the rest")
      ->check(CLI::Range(0.0, 3600.0));
  Flag(app, "--scheduler", f->scheduler, "naive, dynamic, continuous or adaptive");
  Flag(app, "--max-batch-size", f->max_batch_size, "Most images per forward pass")
      ->check(CLI::Range(1, 1024));
  Flag(app, "--timeout", f->timeout_s,
       "Longest a batch waits to fill, in seconds (the deployment guide's --timeout)")
      ->check(CLI::Range(0.0, 10.0));
  Flag(app, "--max-batch-pixels", f->max_batch_pixels, "Pixel budget per batch (0: none)")
      ->check(CLI::NonNegativeNumber);
  Flag(app, "--queue-capacity", f->queue_capacity, "Most queued images; beyond: 503")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  Flag(app, "--queue-capacity-bytes", f->queue_capacity_bytes,
       "Most bytes held by queued images; beyond: 503")
      ->check(CLI::NonNegativeNumber);
  Flag(app, "--request-timeout", f->request_timeout_s,
       "Server-side deadline in seconds; a request's timeout_ms may only shorten it")
      ->check(CLI::Range(0.0, 3600.0));
  Flag(app, "--latency-target-ms", f->latency_target_ms, "Adaptive scheduler's latency target")
      ->check(CLI::Range(1.0, 600000.0));
  app.add_flag("--pad-batches", f->pad_batches,
               "Pad batches to the planned sizes (fixed shapes, as CUDA graphs need)")
      ->envname("MOGSERVE_PAD_BATCHES");
  Flag(app, "--instances", f->instances, "Engine instances, one worker thread each")
      ->check(CLI::Range(1, 64));
  Flag(app, "--workers", f->workers, "Decode/pre-process threads (0: half the cores)")
      ->check(CLI::Range(0, 256));
  Flag(app, "--post-threads", f->post_threads, "Post-process threads")->check(CLI::Range(1, 64));
  Flag(app, "--memory-fraction", f->memory_fraction,
       "Share of RAM (CPU) or device memory the buffer plan may use")
      ->check(CLI::Range(0.01, 1.0));
  Flag(app, "--plan-batch-sizes", f->plan_batch_sizes,
       "Batch sizes the start-up warm-up measures (capped by --max-batch-size)")
      ->delimiter(',')
      ->check(CLI::Range(1, 1024));
  return [f] { return RunServe(*f); };
}

}  // namespace mogserve::cli
