// HttpServer: the HTTP API of DESIGN.md §6 on top of a Pipeline (cpp-httplib underneath).
//
//   POST /v1/detect   raw image / multipart (one or many `image` fields) / JSON base64
//   GET  /healthz     alive (200 as soon as the socket listens)
//   GET  /readyz      200 once the model is loaded and warmed up (SetPipeline), else 503
//   GET  /metrics     Prometheus text format
//   GET  /v1/models   what runs: model, variant, device, precision, input policy, buffer plan
//   GET  /v1/stats    JSON for the web UI's dashboard
//
// Security defaults: the caller binds 127.0.0.1 unless told otherwise; with an API key, every
// /v1/* route needs `Authorization: Bearer <key>`; body bytes, images per request, pixels per
// image (the pipeline's decode limit) and concurrent connections are bounded; CORS headers only
// for the configured origin.
//
// Lifecycle: Bind → Serve (blocks, on its own thread) → SetPipeline when warm → Stop: stop
// accepting, let every request already accepted finish (the pipeline keeps running), then
// Serve returns and the caller shuts the pipeline down.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "mogserve/status.h"
#include "pipeline/pipeline.h"
#include "server/detect_request.h"
#include "server/server_metrics.h"

namespace httplib {
class Server;
}

namespace mogserve::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 7860;  // 0 = any free port (tests)
  std::string api_key;
  std::string cors_origin;  // "" = no CORS headers
  RequestLimits limits;
  int max_connections = 64;  // connections served at once (HTTP worker threads)
  int read_timeout_s = 10;   // a client that sends nothing for this long is dropped
  enum class AccessLog { kOff, kText, kJson };
  AccessLog access_log = AccessLog::kText;
};

// What /v1/models and the banner say about the running model.
struct ModelDescription {
  engine::EngineInfo info;
  std::string input_policy;  // ShapeBuckets::Describe()
  std::string buffer_plan;   // BufferPlan::Describe()
  DetectOptions defaults;
  std::string scheduler;  // policy name and limits
  int instances = 1;
};

class HttpServer {
 public:
  explicit HttpServer(ServerOptions options);
  ~HttpServer();

  // Binds the socket; returns the port (the chosen one when options.port is 0).
  StatusOr<int> Bind();
  // Serves until Stop(); call Bind first. Returns when every accepted request was answered.
  void Serve();
  // Stops accepting connections; requests already accepted are still answered. Thread-safe,
  // idempotent, may be called before Serve runs.
  void Stop();

  // The pipeline's observer: pass it as PipelineOptions::observer.
  ServerMetrics* metrics() { return &metrics_; }

  // Makes the server ready: /v1/detect runs on `pipeline` (not owned; must outlive the server's
  // handlers, i.e. stay alive until Serve returns). `engines` are for memory metrics.
  void SetPipeline(pipeline::Pipeline* pipeline, std::vector<engine::Engine*> engines,
                   ModelDescription model);
  bool ready() const { return pipeline_.load() != nullptr; }

 private:
  void InstallRoutes();

  ServerOptions options_;
  std::unique_ptr<httplib::Server> http_;
  ServerMetrics metrics_;
  std::atomic<pipeline::Pipeline*> pipeline_{nullptr};
  std::vector<engine::Engine*> engines_;  // written once before pipeline_ is published
  ModelDescription model_;                // same
  std::atomic<bool> stopped_{false};
};

}  // namespace mogserve::server
