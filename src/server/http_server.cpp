#include "server/http_server.h"

#include <spdlog/spdlog.h>

#include <cmath>

#include "common/process_memory.h"
#include "json/result_json.h"
#include "server/api_key.h"
#include "server/http/listener.h"
#include "server/oip.h"
#include "server/stream_events.h"
#include "server/stream_routes.h"
#include "server/web_ui.h"

namespace mogserve::server {
namespace {

using http::HttpRequest;
using http::HttpResponse;

// A CORS preflight (OPTIONS, with --cors-origin set), answered for any path.
HttpResponse CorsPreflight() {
  HttpResponse r;
  r.status = 204;
  r.SetHeader("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS");
  r.SetHeader("Access-Control-Allow-Headers", "Authorization, Content-Type");
  r.SetHeader("Access-Control-Max-Age", "600");
  return r;
}

// A WebSocket route asked for with a plain GET: the upgrade is missing.
HttpResponse UpgradeRequired(const HttpRequest& request) {
  HttpResponse r = http::JsonError(
      426, "upgrade_required",
      request.path + " is a WebSocket: send Connection: Upgrade and Upgrade: websocket");
  r.SetHeader("Upgrade", "websocket");
  return r;
}

}  // namespace

std::vector<Route> HttpServer::Routes() {
  using Errors = Route::Errors;
  // Handlers that answer at once.
  auto answer = [](auto make) {
    return [make](HttpRequest request, const http::Responder& respond) { respond(make(request)); };
  };
  auto upgrade_required = answer(UpgradeRequired);
  auto web_ui = answer(WebAssetResponse);
  auto streams = [this](HttpRequest request, const http::Responder& respond) {
    if (HandleStreamWatch(*streams_.load(), stream_events_.load(), request, respond)) return;
    respond(HandleStreamRequest(*streams_.load(), request));
  };
  auto screen_streams = [this](const HttpRequest& head, const RouteParams&) {
    return ScreenStreams(head, /*websocket=*/false);
  };
  auto screen_model = [this](const HttpRequest&, const RouteParams& p) { return ScreenModel(p); };
  auto model_metadata = answer([this](const HttpRequest&) {
    return JsonResponse(oip::ModelMetadata(
        ModelName(), model_.info.device == "cpu" ? "pytorch_libtorch" : "mogserve_cudnn"));
  });
  // ModelReady answers {"ready": false} while loading; the model's name counts once ready.
  auto screen_model_ready = [this](const HttpRequest&, const RouteParams& p) {
    return ready() ? ScreenModel(p) : std::nullopt;
  };
  auto oip_ready = answer([this](const HttpRequest&) { return OipReady(); });
  auto screen_infer = [this](const HttpRequest& head, const RouteParams& p) {
    if (auto refused = ScreenModel(p)) return refused;
    if (!head.HasHeader("Content-Encoding")) return std::optional<HttpResponse>();
    return std::optional(oip::ErrorResponse(
        {415, "unsupported_media_type",
         "Content-Encoding is not supported on /infer; send the body uncompressed"}));
  };
  auto infer = [this](HttpRequest r, const http::Responder& respond) {
    Infer(std::move(r), respond);
  };
  // pattern, methods, label, API key, ready, admin, errors, content type, screen, handle, ws
  return {
      {"/v1/detect",
       "POST",
       "",
       true,
       true,
       false,
       Errors::kMogserve,
       CheckDetectContentType,
       {},
       [this](HttpRequest r, const http::Responder& respond) { Detect(std::move(r), respond); }},
      {"/v1/anonymize",
       "POST",
       "",
       true,
       true,
       false,
       Errors::kMogserve,
       CheckDetectContentType,
       {},
       [this](HttpRequest r, const http::Responder& respond) { Anonymize(std::move(r), respond); }},
      {"/v1/detect/ws", "GET", "", true, true, false, Errors::kMogserve, nullptr,
       [this](const HttpRequest& head, const RouteParams&) { return ScreenDetectWebSocket(head); },
       upgrade_required,
       [this](const HttpRequest& head, std::shared_ptr<http::WebSocketPeer> peer) {
         return AcceptDetectWebSocket(head, std::move(peer));
       }},
      {"/healthz",
       "GET",
       "",
       false,
       false,
       true,
       Errors::kMogserve,
       nullptr,
       {},
       answer([](const HttpRequest&) {
         return JsonResponse({{"status", "ok"}});
       })},
      {"/readyz",
       "GET",
       "",
       false,
       false,
       true,
       Errors::kMogserve,
       nullptr,
       {},
       answer([this](const HttpRequest&) { return Ready(); })},
      {"/metrics",
       "GET",
       "",
       false,
       false,
       true,
       Errors::kMogserve,
       nullptr,
       {},
       answer([this](const HttpRequest&) { return Metrics(); })},
      {"/v1/models",
       "GET",
       "",
       true,
       false,
       false,
       Errors::kMogserve,
       nullptr,
       {},
       answer([this](const HttpRequest&) { return Models(); })},
      {"/v1/stats",
       "GET",
       "",
       true,
       false,
       false,
       Errors::kMogserve,
       nullptr,
       {},
       answer([this](const HttpRequest&) { return JsonResponse(StatsJson()); })},
      {"/v1/events", "GET", "", true, false, false, Errors::kMogserve, nullptr,
       [this](const HttpRequest& head, const RouteParams&) { return ScreenEvents(head); },
       [this](HttpRequest r, const http::Responder& respond) { Events(r, respond); }},
      {"/v1/streams", "GET,POST", "", true, false, false, Errors::kMogserve, nullptr,
       screen_streams, streams},
      {"/v1/streams/ws", "GET", "", true, false, false, Errors::kMogserve, nullptr,
       [this](const HttpRequest& head, const RouteParams&) {
         return ScreenStreams(head, /*websocket=*/true);
       },
       upgrade_required,
       [this](const HttpRequest& head, std::shared_ptr<http::WebSocketPeer> peer) {
         return AcceptStreamWebSocket(stream_events_.load(), head, std::move(peer));
       }},
      {"/v1/streams/{id...}", "GET,POST,DELETE", "/v1/streams/", true, false, false,
       Errors::kMogserve, nullptr, screen_streams, streams},
      {"/", "GET", "", false, false, false, Errors::kMogserve, nullptr, {}, web_ui},
      {"/ui", "GET", "", false, false, false, Errors::kMogserve, nullptr, {}, web_ui},
      {"/ui/", "GET", "/ui", false, false, false, Errors::kMogserve, nullptr, {}, web_ui},
      {"/ui/{file...}", "GET", "/ui", false, false, false, Errors::kMogserve, nullptr, {}, web_ui},
      // The Open Inference Protocol (oip.h).
      {"/v2",
       "GET",
       "/v2/meta",
       true,
       false,
       false,
       Errors::kOip,
       nullptr,
       {},
       answer([](const HttpRequest&) { return JsonResponse(oip::ServerMetadata()); })},
      {"/v2/health/live",
       "GET",
       "/v2/health",
       false,
       false,
       true,
       Errors::kOip,
       nullptr,
       {},
       answer([](const HttpRequest&) {
         return JsonResponse({{"live", true}});
       })},
      {"/v2/health/ready",
       "GET",
       "/v2/health",
       false,
       false,
       true,
       Errors::kOip,
       nullptr,
       {},
       oip_ready},
      {"/v2/models/{model}", "GET", "/v2/meta", true, true, false, Errors::kOip, nullptr,
       screen_model, model_metadata},
      {"/v2/models/{model}/versions/{version}", "GET", "/v2/meta", true, true, false, Errors::kOip,
       nullptr, screen_model, model_metadata},
      {"/v2/models/{model}/ready", "GET", "/v2/health", true, false, false, Errors::kOip, nullptr,
       screen_model_ready, oip_ready},
      {"/v2/models/{model}/versions/{version}/ready", "GET", "/v2/health", true, false, false,
       Errors::kOip, nullptr, screen_model_ready, oip_ready},
      {"/v2/models/{model}/infer", "POST", "/v2/infer", true, true, false, Errors::kOip, nullptr,
       screen_infer, infer},
      {"/v2/models/{model}/versions/{version}/infer", "POST", "/v2/infer", true, true, false,
       Errors::kOip, nullptr, screen_infer, infer},
  };
}

class HttpServer::AdminHandler : public http::HttpHandler {
 public:
  explicit AdminHandler(HttpServer* server) : server_(server) {}
  std::optional<HttpResponse> Screen(HttpRequest& head) override {
    return server_->ScreenOn(head, /*admin_port=*/true);
  }
  void Handle(HttpRequest request, http::Responder respond) override {
    server_->Handle(std::move(request), std::move(respond));
  }
  void BeforeSend(const http::ExchangeRecord& record, HttpResponse& response) override {
    server_->BeforeSend(record, response);
  }
  void OnExchange(const http::ExchangeRecord&) override {}  // probes stay out of the access log

 private:
  HttpServer* server_;
};

HttpServer::HttpServer(ServerOptions options) : options_(std::move(options)), routes_(Routes()) {
  http::ListenerOptions listener;
  listener.host = options_.host;
  listener.port = options_.port;
  listener.limits = options_.http;
  listener.io_threads = options_.io_threads;
  http::HttpHandler* handler = this;
  if (options_.admin_port > 0) {
    http::ListenerOptions admin = listener;
    admin.port = options_.admin_port;
    admin.io_threads = 1;
    admin.limits.max_connections = std::min(admin.limits.max_connections, 256);
    admin_handler_ = std::make_unique<AdminHandler>(this);
    admin_listener_ = std::make_unique<http::Listener>(std::move(admin), admin_handler_.get());
  }
  listener_ = std::make_unique<http::Listener>(std::move(listener), handler);
  events_ = std::make_unique<StatsEvents>([this] { return ToJsonLine(StatsJson()); });
}

HttpServer::~HttpServer() {
  events_->Stop();
}

StatusOr<int> HttpServer::Bind() {
  if (admin_listener_) {
    auto admin = admin_listener_->Bind();
    if (!admin.ok())
      return Status(admin.status().code(), "--admin-port: " + admin.status().message());
    admin_port_ = *admin;
  }
  return listener_->Bind();
}

void HttpServer::Serve() {
  if (admin_listener_) admin_thread_ = std::thread([this] { admin_listener_->Run(); });
  listener_->Run();
  // The probes answer through the whole drain (live, not ready): only now does the admin port
  // close.
  if (admin_listener_) {
    admin_listener_->Stop();
    admin_thread_.join();
  }
}

void HttpServer::Stop() {
  if (stopped_.exchange(true)) return;
  listener_->Stop();
  events_->Stop();  // ends the event streams, so their connections can close
  if (StreamEvents* watchers = stream_events_.load()) watchers->Stop();
}

void HttpServer::SetPipeline(pipeline::Pipeline* pipeline, std::vector<engine::Engine*> engines,
                             ModelDescription model) {
  engines_ = std::move(engines);
  model_ = std::move(model);
  idle_rss_bytes_ = ReadProcessMemory().rss_bytes;
  pipeline_.store(pipeline);
}

std::optional<HttpResponse> HttpServer::Screen(HttpRequest& head) {
  return ScreenOn(head, /*admin_port=*/false);
}

std::optional<HttpResponse> HttpServer::ScreenOn(HttpRequest& head, bool admin_port) {
  if (head.method == "OPTIONS" && !options_.cors_origin.empty()) return CorsPreflight();
  const bool authorized =
      options_.api_key.empty() || BearerKeyMatches(head.Header("Authorization"), options_.api_key);
  return routes_.Screen(head, authorized, ready(), admin_port);
}

void HttpServer::Handle(HttpRequest request, http::Responder respond) {
  const Route& route = routes_.at(request.route);  // Screen found it
  route.handle(std::move(request), respond);
}

void HttpServer::SetStreams(video::StreamRegistry* streams, StreamEvents* events) {
  stream_events_ = events;
  streams_ = streams;
}

std::unique_ptr<http::WebSocketHandler> HttpServer::AcceptWebSocket(
    const HttpRequest& head, std::shared_ptr<http::WebSocketPeer> peer) {
  const Route& route = routes_.at(head.route);  // Screen found it
  return route.websocket ? route.websocket(head, std::move(peer)) : nullptr;
}

void HttpServer::BeforeSend(const http::ExchangeRecord& record, HttpResponse& response) {
  // Counted before the write: a client that scrapes /metrics once it has its answer sees it.
  // A refusal of the HTTP layer before Screen (431, 408, ...) is labelled by its path.
  int route = record.route;
  if (route < 0) {
    if (auto match = routes_.Find(record.path)) route = routes_.IndexOf(*match->route);
  }
  metrics_.OnHttpResponse(std::string(routes_.Label(route)), response.status);
  if (!record.request_id.empty()) response.SetHeader("X-Request-Id", record.request_id);
  if (!options_.cors_origin.empty()) {
    response.SetHeader("Access-Control-Allow-Origin", options_.cors_origin);
    response.SetHeader("Vary", "Origin");
  }
}

void HttpServer::OnExchange(const http::ExchangeRecord& record) {
  if (options_.access_log == ServerOptions::AccessLog::kOff) return;
  const double ms = std::chrono::duration<double, std::milli>(record.duration).count();
  if (options_.access_log == ServerOptions::AccessLog::kJson) {
    spdlog::info(ToJsonLine({{"remote", record.remote_addr},
                             {"method", record.method},
                             {"path", record.path},
                             {"status", record.status},
                             {"bytes", record.body_bytes},
                             {"ms", std::round(ms * 100) / 100},
                             {"delivered", record.written},
                             {"request_id", record.request_id}}));
  } else {
    spdlog::info("{} \"{} {}\" {} {}B {:.1f}ms{}{}", record.remote_addr, record.method, record.path,
                 record.status, record.body_bytes, ms, record.written ? "" : " (client gone)",
                 record.request_id.empty() ? "" : " id=" + record.request_id);
  }
}

}  // namespace mogserve::server
