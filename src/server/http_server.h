// HttpServer: the HTTP API of DESIGN.md §6 on top of a Pipeline, served by the event-driven HTTP
// layer of server/http/ (Boost.Beast on Asio: a small pool of I/O threads, no thread per
// connection; detection runs in the pipeline and answers asynchronously).
//
//   POST /v1/detect   raw image / multipart (one or many `image` fields) / JSON base64
//   GET  /v1/detect/ws  the same over a WebSocket, a message per picture (detect_websocket.h)
//   GET  /healthz     alive (200 as soon as the socket listens)
//   GET  /readyz      200 once the model is loaded and warmed up (SetPipeline), else 503
//   GET  /metrics     Prometheus text format
//   GET  /v1/models   what runs: model, variant, device, precision, input policy, buffer plan
//   GET  /v1/stats    JSON for the web UI's dashboard (and connections, memory)
//   GET  /v1/events   the same, pushed as Server-Sent Events every ?interval_ms (stats_events.h)
//   /v1/streams, /v1/streams/{id}[/restart]  video streams: list, add, get, delete, restart
//                                  (stream_routes.h)
//   GET  /, /ui/...   the web UI
//   /v2/...           the Open Inference Protocol (KServe v2) REST API (oip.h): server and model
//                     metadata, health, POST /v2/models/{name}[/versions/1]/infer (JSON and
//                     binary tensors); API key on all but /v2/health/*; errors in its shape
// GET routes answer HEAD too; a known path with another method gets 405 with Allow.
//
// Security defaults: the caller binds 127.0.0.1 unless told otherwise; with an API key, every
// /v1/* route needs `Authorization: Bearer <key>` (the scheme in any case); the HTTP layer bounds
// every request while reading it (header bytes and fields, target, body, bodies in flight,
// deadlines, connections: http::HttpLimits), this class what a detect body may hold (images,
// multipart parts, JSON depth: RequestLimits). Requests are refused from their header when they
// can be — unknown route, method, API key, content type, not ready — before any body is read.
// CORS headers only for the configured origin.
//
// Lifecycle: Bind → Serve (blocks, on its own thread) → SetPipeline when warm → Stop: stop
// accepting (after taking the connections the kernel already accepted), answer every request
// already received, then Serve returns and the caller shuts the pipeline down.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "mogserve/status.h"
#include "pipeline/pipeline.h"
#include "pipeline/stack_description.h"
#include "server/detect_request.h"
#include "server/http/http_handler.h"
#include "server/routes.h"
#include "server/server_metrics.h"
#include "server/stats_events.h"

namespace mogserve::server {

namespace http {
class Listener;
}
}  // namespace mogserve::server
namespace mogserve::video {
class StreamRegistry;
}
namespace mogserve::server {

class StreamEvents;

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 7860;  // 0 = any free port (tests)
  std::string api_key;
  std::string cors_origin;  // "" = no CORS headers
  std::string model_name;   // the model's name on /v2 ("" = the engine's: ssd-mobilenetv1, mogface)
  // > 0: also serve the probes and metrics (/healthz, /readyz, /metrics, /v2/health/*) on this
  // port, on an event loop of their own, so they never wait behind detection traffic; 0: none.
  int admin_port = 0;
  RequestLimits limits;   // what one detect request may carry
  http::HttpLimits http;  // connections, headers, bodies, deadlines
  int io_threads = 2;     // event-loop threads of the HTTP layer
  enum class AccessLog { kOff, kText, kJson };
  AccessLog access_log = AccessLog::kText;
};

// What /v1/models and the banner say about the running model (the serving stack's own).
using ModelDescription = pipeline::StackDescription;

class HttpServer : private http::HttpHandler {
 public:
  explicit HttpServer(ServerOptions options);
  ~HttpServer() override;

  // Binds the socket (and the admin one); returns the port (the chosen one when options.port is
  // 0).
  StatusOr<int> Bind();
  int admin_port() const { return admin_port_; }  // after Bind; 0 without an admin listener
  // Serves until Stop(); call Bind first. Returns when every accepted request was answered.
  void Serve();
  // Stops accepting connections; requests already received are still answered. Thread-safe,
  // idempotent, may be called before Serve runs.
  void Stop();
  // Readiness turns false (/readyz 503, /v2/health/ready 400) while everything else is still
  // served: the shutdown delay before Stop. Thread-safe.
  void BeginDrain() { draining_.store(true); }

  // The pipeline's observer: pass it as PipelineOptions::observer.
  ServerMetrics* metrics() { return &metrics_; }

  // Makes the server ready: /v1/detect runs on `pipeline` (not owned; must outlive the server's
  // handlers, i.e. stay alive until Serve returns). `engines` are for memory metrics. The
  // process's resident memory at this moment is reported as the idle RSS.
  void SetPipeline(pipeline::Pipeline* pipeline, std::vector<engine::Engine*> engines,
                   ModelDescription model);
  bool ready() const { return pipeline_.load() != nullptr; }
  // Serves /v1/streams from `streams` (not owned; must stay alive until Serve returns); until
  // then, and without video support, those routes answer 404.
  // `events` (not owned, may be null) pushes their results (stream_events.h); the server stops
  // it when it stops, so that its watchers' connections can close.
  void SetStreams(video::StreamRegistry* streams, StreamEvents* events = nullptr);

 private:
  // http::HttpHandler: every request through the route table (routes.h).
  std::optional<http::HttpResponse> Screen(http::HttpRequest& head) override;
  void Handle(http::HttpRequest request, http::Responder respond) override;
  std::unique_ptr<http::WebSocketHandler> AcceptWebSocket(
      const http::HttpRequest& head, std::shared_ptr<http::WebSocketPeer> peer) override;
  void BeforeSend(const http::ExchangeRecord& record, http::HttpResponse& response) override;
  void OnExchange(const http::ExchangeRecord& record) override;

  // The route table: each route with its checks and handler (http_server.cpp).
  std::vector<Route> Routes();
  std::optional<http::HttpResponse> ScreenOn(http::HttpRequest& head, bool admin_port);

  // Detection (http_detect_routes.cpp): POST /v1/detect, its WebSocket, POST /v1/anonymize,
  // POST /v2/.../infer.
  void Detect(http::HttpRequest request, const http::Responder& respond);
  void Anonymize(http::HttpRequest request, const http::Responder& respond);
  std::optional<http::HttpResponse> ScreenDetectWebSocket(const http::HttpRequest& head) const;
  std::unique_ptr<http::WebSocketHandler> AcceptDetectWebSocket(
      const http::HttpRequest& head, std::shared_ptr<http::WebSocketPeer> peer);
  void Infer(http::HttpRequest request, const http::Responder& respond);
  // The /v2 model routes' own check: the model and version asked for are the one served.
  std::optional<http::HttpResponse> ScreenModel(const RouteParams& params) const;
  // The scheduler's client of a request (fairness, latest_only): its address, or one client for
  // all holders of the API key.
  std::string Client(const http::HttpRequest& request) const;
  // What /v2 calls the model: --model-name, else the engine's model name.
  std::string ModelName() const;

  // What the server tells about itself (http_info_routes.cpp).
  http::HttpResponse Ready() const;     // /readyz
  http::HttpResponse OipReady() const;  // /v2/health/ready, /v2/models/{m}/ready
  http::HttpResponse Models() const;    // /v1/models
  nlohmann::json StatsJson();           // /v1/stats, /v1/events
  http::HttpResponse Metrics();         // /metrics
  std::optional<http::HttpResponse> ScreenEvents(const http::HttpRequest& head) const;
  void Events(const http::HttpRequest& request, const http::Responder& respond);
  // The /v1/streams routes: 404 without video; the WebSocket also the watchers' cap.
  std::optional<http::HttpResponse> ScreenStreams(const http::HttpRequest& head,
                                                  bool websocket) const;

  class AdminHandler;  // the admin port's routes: forwards the probes and metrics, 404 the rest

  ServerOptions options_;
  const RouteTable routes_;
  ServerMetrics metrics_;
  std::unique_ptr<http::Listener> listener_;
  std::unique_ptr<AdminHandler> admin_handler_;
  std::unique_ptr<http::Listener> admin_listener_;  // null without --admin-port
  std::thread admin_thread_;
  int admin_port_ = 0;
  std::unique_ptr<StatsEvents> events_;  // GET /v1/events
  std::atomic<pipeline::Pipeline*> pipeline_{nullptr};
  std::atomic<video::StreamRegistry*> streams_{nullptr};
  std::atomic<StreamEvents*> stream_events_{nullptr};
  std::vector<engine::Engine*> engines_;  // written once before pipeline_ is published
  ModelDescription model_;                // same
  int64_t idle_rss_bytes_ = 0;            // same
  std::atomic<bool> stopped_{false};
  std::atomic<bool> draining_{false};
  std::atomic<uint64_t> next_socket_id_{1};  // WebSockets, for their fairness keys
};

}  // namespace mogserve::server
