// `mogserve serve`: the HTTP server (server/http_server.h) on the pipeline (cli/serving_stack.h),
// with the buffer plan measured at start-up, and graceful shutdown on SIGINT / SIGTERM.
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <future>
#include <iostream>
#include <thread>

#include "cli/commands.h"
#include "cli/serve_streams.h"
#include "cli/serving_stack.h"
#include "cli/shutdown_signals.h"
#include "common/process_memory.h"
#include "server/http_server.h"
#if MOGSERVE_WITH_GRPC
#include "server/grpc/grpc_service.h"
#endif

namespace mogserve::cli {
namespace {

// Raises the open-file limit to the hard limit (each connection is a descriptor) and caps
// --max-connections to what it allows, keeping room for the model, logs and listeners.
void FitConnectionsToFileLimit(server::ServerOptions& options) {
  constexpr int kReserved = 256;
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
    getrlimit(RLIMIT_NOFILE, &limit);
  }
  if (limit.rlim_cur == RLIM_INFINITY) return;
  const int64_t room = static_cast<int64_t>(limit.rlim_cur) - kReserved;
  if (options.http.max_connections > room) {
    spdlog::warn(
        "--max-connections {} is over what the open-file limit ({}) allows: using {} "
        "(raise it with ulimit -n)",
        options.http.max_connections, limit.rlim_cur, std::max<int64_t>(1, room));
    options.http.max_connections = static_cast<int>(std::max<int64_t>(1, room));
  }
}

// Waits for SIGINT or SIGTERM and returns it. Meanwhile, every 5 s: when the pipeline was idle
// through the last 5 s and the process holds 32 MiB more than after its last trim, frees the
// pipeline's cached memory (canvases, the engine's allocator cache) and gives the C heap's free
// pages back — a burst's bodies, pictures and activations would otherwise stay resident. The
// first batch after that pays the page faults again (tens of ms), once per idle period.
int WaitForShutdownSignal(const sigset_t& signals, pipeline::Pipeline& pipeline) {
  constexpr int64_t kSlackBytes = 32 << 20;
  int64_t trimmed_rss = ReadProcessMemory().rss_bytes;
  int64_t ended_before = -1;
  for (;;) {
    const timespec wait{5, 0};
    const int signal_number = sigtimedwait(&signals, nullptr, &wait);
    if (signal_number > 0) return signal_number;
    const pipeline::PipelineStats s = pipeline.Stats();
    const bool idle = s.preprocessing == 0 && s.queue.total.requests == 0 && s.running == 0 &&
                      s.ended() == ended_before;
    ended_before = s.ended();
    if (!idle || ReadProcessMemory().rss_bytes <= trimmed_rss + kSlackBytes) continue;
    const int64_t before = ReadProcessMemory().rss_bytes;
    pipeline.ReleaseIdleMemory();
    ReleaseFreeHeapMemory();
    trimmed_rss = ReadProcessMemory().rss_bytes;
    spdlog::info("idle: gave {} MiB of free heap back ({} MiB resident)",
                 (before - trimmed_rss) >> 20, trimmed_rss >> 20);
  }
}

int Fail(const Status& status) {
  std::cerr << "error: " << status.message() << "\n";
  return ExitCodeFor(status);
}

#if MOGSERVE_WITH_GRPC
// The gRPC API on --grpc-port (0: none), started before the warm-up like the HTTP listener so
// ServerLive answers (and ServerReady says false) while the model loads.
StatusOr<std::unique_ptr<server::grpc_api::GrpcServer>> StartGrpc(
    const ServeFlags& flags, const server::ServerOptions& options, server::ServerMetrics* metrics) {
  if (flags.grpc_port == 0) return std::unique_ptr<server::grpc_api::GrpcServer>();
  auto grpc = std::make_unique<server::grpc_api::GrpcServer>(
      server::grpc_api::GrpcOptions{.host = flags.host,
                                    .port = flags.grpc_port,
                                    .api_key = options.api_key,
                                    .model_name = options.model_name,
                                    .max_message_bytes = flags.max_body_bytes,
                                    .max_bytes_in_flight = flags.max_body_bytes_in_flight,
                                    .limits = options.limits},
      metrics);
  MOGSERVE_ASSIGN_OR_RETURN(const int port, grpc->Start());
  spdlog::info("gRPC (Open Inference Protocol) on {}:{}", flags.host, port);
  return grpc;
}
using GrpcServerPtr = std::unique_ptr<server::grpc_api::GrpcServer>;
#else
// This build has no gRPC: --grpc-port is refused before anything starts (see RunServe).
struct NoGrpc {
  void SetPipeline(pipeline::Pipeline*, const server::ModelDescription&) {}
  void BeginDrain() {}
  void Shutdown(std::chrono::system_clock::time_point) {}
};
using GrpcServerPtr = std::unique_ptr<NoGrpc>;
#endif

// The start-up banner once the model is warm: what runs, where, and the memory it took.
void LogReady(const std::string& url, const ServingPipeline& started,
              const LoadedEngines& loaded) {
  const server::ModelDescription& model = started.description;
  spdlog::info("model: {} ({})", model.info.Describe(), model.info.weights);
  spdlog::info("cpu: {}", model.info.DescribeCpu());
  if (!model.info.precision_choice.empty()) {
    spdlog::info("precision auto: {}", model.info.precision_choice);
  }
  spdlog::info("instances: {}, decode threads: {}, scheduler: {}", model.instances,
               started.preprocess_threads, model.scheduler);
  spdlog::info("input: {}", model.input_policy);
  spdlog::info("landmarks: {}", model.landmarks);
  spdlog::info("buffer plan:\n{}", model.buffer_plan);
  const ProcessMemory memory = ReadProcessMemory();
  const engine::MemoryStats engine_memory = loaded.engines.front()->Memory();
  spdlog::info("memory: {} MiB resident (peak {} MiB during the warm-up); engine cache {} MiB",
               memory.rss_bytes >> 20, memory.peak_rss_bytes >> 20,
               (engine_memory.reserved_bytes - engine_memory.in_use_bytes) >> 20);
  spdlog::info("ready: open {} in a browser, or POST images to {}v1/detect", url, url);

}

// After the shutdown signal: readiness false for --shutdown-delay (requests still served), then
// no new requests; every accepted one (gRPC's alongside) is answered within --drain-timeout, and
// what is still queued then ends as cancelled.
template <typename Grpc>
void Drain(const ServeFlags& flags, const sigset_t& signals, int signal_number,
           server::HttpServer& http, Grpc* grpc, std::thread& serving,
           pipeline::Pipeline& pipeline) {
  const char* signal_name = signal_number == SIGINT ? "SIGINT" : "SIGTERM";
  if (flags.shutdown_delay_s > 0) {
    // Readiness goes false first; balancers and Kubernetes take a while to stop sending, and
    // until then requests are served as usual. A second signal ends the wait.
    http.BeginDrain();
    if (grpc) grpc->BeginDrain();
    spdlog::info("{}: not ready; serving {} s more before closing the listener", signal_name,
                 flags.shutdown_delay_s);
    const double whole = std::floor(flags.shutdown_delay_s);
    const timespec delay{static_cast<time_t>(whole),
                         static_cast<long>((flags.shutdown_delay_s - whole) * 1e9)};
    sigtimedwait(&signals, nullptr, &delay);
  }
  spdlog::info("{}: stopping; answering the requests already accepted (up to {} s)", signal_name,
               flags.drain_timeout_s);
  http.Stop();
  // gRPC drains alongside: no new calls, every accepted one answered (the pipeline runs on),
  // the ones still open at the drain deadline cancelled.
  const auto drain_for = std::chrono::duration_cast<std::chrono::system_clock::duration>(
      std::chrono::duration<double>(flags.drain_timeout_s));
  const auto drain_deadline = std::chrono::system_clock::now() + drain_for;
  if (grpc) grpc->BeginDrain();
  auto grpc_drained = std::async(std::launch::async, [grpc, drain_deadline] {
    if (grpc) grpc->Shutdown(drain_deadline);
  });
  // If draining takes too long, the queued requests end as cancelled (503) so every accepted
  // request still gets an answer.
  auto drained = std::async(std::launch::async, [&serving] { serving.join(); });
  if (drained.wait_until(drain_deadline) != std::future_status::ready ||
      grpc_drained.wait_until(drain_deadline) != std::future_status::ready) {
    spdlog::warn("drain timeout: cancelling the requests still queued");
    pipeline.Shutdown(pipeline::ShutdownMode::kCancel);
  }
  drained.wait();
  grpc_drained.wait();
}

int RunServe(const ServeFlags& flags) {
  const sigset_t signals = BlockShutdownSignals();
  auto server_options = ToServerOptions(flags);
  if (!server_options.ok()) return Fail(server_options.status());
  if (Status streams = ServeStreams::CheckFlags(flags); !streams.ok()) return Fail(streams);
#if !MOGSERVE_WITH_GRPC
  if (flags.grpc_port != 0) {
    return Fail(InvalidArgument(
        "--grpc-port: this mogserve was built without gRPC (-DMOGSERVE_WITH_GRPC=OFF); rebuild "
        "with it ON, or use the REST API (/v2) on --port"));
  }
#endif
  FitConnectionsToFileLimit(*server_options);
  spdlog::info("loading {} ...", flags.options.model);
  auto loaded = LoadEngines(flags);
  if (!loaded.ok()) return Fail(loaded.status());
  server::HttpServer http(*server_options);
  auto port = http.Bind();
  if (!port.ok()) {
    std::cerr << "error: " << port.status().message() << "\n";
    return kExitFatal;
  }
  const std::string url = "http://" + flags.host + ":" + std::to_string(*port) + "/";
  std::thread serving([&http] { http.Serve(); });
  spdlog::info("listening on {} (not ready: warming up)", url);
  if (http.admin_port() > 0) {
    spdlog::info("admin (probes, metrics) on http://{}:{}/metrics", flags.host, http.admin_port());
  }
  GrpcServerPtr grpc;
#if MOGSERVE_WITH_GRPC
  auto grpc_started = StartGrpc(flags, *server_options, http.metrics());
  if (!grpc_started.ok()) {
    http.Stop();
    serving.join();
    std::cerr << "error: " << grpc_started.status().message() << "\n";
    return kExitFatal;
  }
  grpc = std::move(*grpc_started);
#endif

  auto started = StartPipeline(flags, *loaded, http.metrics());
  if (!started.ok()) {
    http.Stop();
    serving.join();
    if (grpc) grpc->Shutdown(std::chrono::system_clock::now());
    return Fail(started.status());
  }
  pipeline::Pipeline& pipeline = *started->pipeline;
  const server::ModelDescription& model = started->description;
  http.SetPipeline(&pipeline, loaded->engines, model);
  if (grpc) grpc->SetPipeline(&pipeline, model);
  auto streams = ServeStreams::Start(flags, pipeline, http);
  if (!streams.ok()) {
    http.Stop();
    serving.join();
    if (grpc) grpc->Shutdown(std::chrono::system_clock::now());
    return Fail(streams.status());
  }
  LogReady(url, *started, *loaded);

  const int signal_number = WaitForShutdownSignal(signals, pipeline);
  Drain(flags, signals, signal_number, http, grpc.get(), serving, pipeline);
  streams->reset();  // no handler uses them any more; their last frames still finish
  pipeline.Shutdown(pipeline::ShutdownMode::kDrain);
  const pipeline::PipelineStats stats = pipeline.Stats();
  spdlog::info("stopped: {} images done, {} ended otherwise",
               stats.count(scheduler::Outcome::kDone),
               stats.ended() - stats.count(scheduler::Outcome::kDone));
  return kExitOk;
}

}  // namespace

CommandRunner RegisterServeCommand(CLI::App& app) {
  auto flags = std::make_shared<ServeFlags>();
  AddServeFlags(app, *flags, {opt::Group::kServer, opt::Group::kStreams, opt::Group::kGrpc});
  return [flags] { return RunServe(*flags); };
}

}  // namespace mogserve::cli
