#include "server/http_server.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <charconv>
#include <cmath>
#include <functional>
#include <type_traits>
#include <variant>

#include "common/process_memory.h"
#include "json/result_json.h"
#include "options/option_table.h"
#include "scheduler/outcome.h"
#include "server/api_key.h"
#include "server/detect_call.h"
#include "server/detect_websocket.h"
#include "server/http/listener.h"
#include "server/oip.h"
#include "server/stream_events.h"
#include "server/stream_routes.h"
#include "server/web_ui.h"

namespace mogserve::server {
namespace {

using http::HttpRequest;
using http::HttpResponse;
constexpr const char* kJson = "application/json";

HttpResponse JsonResponse(const nlohmann::json& body, int status = 200) {
  HttpResponse r;
  r.status = status;
  r.content_type = kJson;
  r.body = ToJsonLine(body);
  return r;
}

HttpResponse Error(const HttpError& e) {
  return http::JsonError(e.status, e.code, e.message);
}

HttpResponse NotReady() {
  HttpResponse r = http::JsonError(503, "not_ready", "the model is still loading and warming up");
  r.SetHeader("Retry-After", "1");
  return r;
}

// The routes: exact paths, and "/ui" for everything under it. GET routes answer HEAD too.
enum class Route {
  kDetect,
  kDetectWebSocket,
  kHealthz,
  kReadyz,
  kMetrics,
  kModels,
  kStats,
  kEvents,
  kStreams,           // /v1/streams
  kStreamsWebSocket,  // /v1/streams/ws
  kStream,            // /v1/streams/{id}
  kWebUi,
  // The Open Inference Protocol (oip.h): /v2, /v2/health/{live,ready},
  // /v2/models/{name}[/versions/1][/ready|/infer].
  kV2Server,
  kV2Live,
  kV2Ready,
  kV2Model,
  kV2ModelReady,
  kV2Infer,
};
struct RouteEntry {
  const char* path;
  Route route;
  const char* method;  // one method, or several separated by ','
};
constexpr RouteEntry kRoutes[] = {
    {"/v1/detect", Route::kDetect, "POST"},       {"/v1/detect/ws", Route::kDetectWebSocket, "GET"},
    {"/healthz", Route::kHealthz, "GET"},         {"/readyz", Route::kReadyz, "GET"},
    {"/metrics", Route::kMetrics, "GET"},         {"/v1/models", Route::kModels, "GET"},
    {"/v1/stats", Route::kStats, "GET"},          {"/v1/events", Route::kEvents, "GET"},
    {"/v1/streams", Route::kStreams, "GET,POST"}, {"/", Route::kWebUi, "GET"},
    {"/v1/streams/ws", Route::kStreamsWebSocket, "GET"},
};

// The /v2 routes; their `path` is the metrics label (the model name stays out of labels).
constexpr RouteEntry kV2Routes[] = {
    {"/v2/meta", Route::kV2Server, "GET"},       {"/v2/health", Route::kV2Live, "GET"},
    {"/v2/health", Route::kV2Ready, "GET"},     {"/v2/meta", Route::kV2Model, "GET"},
    {"/v2/health", Route::kV2ModelReady, "GET"}, {"/v2/infer", Route::kV2Infer, "POST"},
};

// A /v2 path taken apart: the route, and for model routes the name and version asked for.
struct V2Path {
  Route route;
  std::string model;
  std::string version;  // "" when the path names none
};
std::optional<V2Path> ParseV2Path(std::string_view path) {
  if (path == "/v2") return V2Path{Route::kV2Server, "", ""};
  if (path == "/v2/health/live") return V2Path{Route::kV2Live, "", ""};
  if (path == "/v2/health/ready") return V2Path{Route::kV2Ready, "", ""};
  constexpr std::string_view kModels = "/v2/models/";
  if (path.rfind(kModels, 0) != 0) return std::nullopt;
  path.remove_prefix(kModels.size());
  std::vector<std::string_view> parts;
  while (!path.empty()) {
    const size_t slash = path.find('/');
    parts.push_back(path.substr(0, slash));
    path = slash == std::string_view::npos ? std::string_view() : path.substr(slash + 1);
  }
  if (parts.empty() || parts[0].empty()) return std::nullopt;
  V2Path v{Route::kV2Model, std::string(parts[0]), ""};
  size_t next = 1;
  if (parts.size() > 2 && parts[1] == "versions") {
    v.version = std::string(parts[2]);
    next = 3;
  }
  if (parts.size() == next) return v;
  if (parts.size() != next + 1) return std::nullopt;
  if (parts[next] == "ready") v.route = Route::kV2ModelReady;
  else if (parts[next] == "infer") v.route = Route::kV2Infer;
  else return std::nullopt;
  return v;
}

const RouteEntry* FindRoute(std::string_view path) {
  for (const RouteEntry& e : kRoutes) {
    if (path == e.path) return &e;
  }
  if (path == "/v2" || path.rfind("/v2/", 0) == 0) {
    const std::optional<V2Path> v = ParseV2Path(path);
    if (!v) return nullptr;
    for (const RouteEntry& e : kV2Routes) {
      if (e.route == v->route) return &e;
    }
    return nullptr;
  }
  static constexpr RouteEntry kUi = {"/ui", Route::kWebUi, "GET"};
  if (path == "/ui" || path.rfind("/ui/", 0) == 0) return &kUi;
  static constexpr RouteEntry kStream = {"/v1/streams/", Route::kStream, "GET,POST,DELETE"};
  if (path.size() > 12 && path.rfind("/v1/streams/", 0) == 0) return &kStream;
  return nullptr;
}

bool MethodAllowed(const RouteEntry& e, std::string_view method) {
  std::string_view methods = e.method;
  while (!methods.empty()) {
    const size_t comma = methods.find(',');
    const std::string_view m = methods.substr(0, comma);
    if (method == m || (method == "HEAD" && m == "GET")) return true;
    methods = comma == std::string_view::npos ? "" : methods.substr(comma + 1);
  }
  return false;
}

// The Allow header of a route: its methods, and HEAD with GET.
std::string AllowedMethods(const RouteEntry& e) {
  std::string allow;
  std::string_view methods = e.method;
  while (!methods.empty()) {
    const size_t comma = methods.find(',');
    const std::string_view m = methods.substr(0, comma);
    allow += (allow.empty() ? "" : ", ") + std::string(m) + (m == "GET" ? ", HEAD" : "");
    methods = comma == std::string_view::npos ? "" : methods.substr(comma + 1);
  }
  return allow;
}

// The route label for metrics: known paths as they are, the rest folded into one value so a
// scanner cannot grow the label set without bound.
std::string RouteLabel(std::string_view path) {
  const RouteEntry* e = FindRoute(path);
  return e == nullptr ? "other" : e->path;
}

// The detect options of a WebSocket's URL, and its latest_only flag (not a detect option).
struct WebSocketQuery {
  std::multimap<std::string, std::string> options;
  bool latest_only = false;
};
std::variant<WebSocketQuery, HttpError> ParseWebSocketQuery(
    const std::multimap<std::string, std::string>& query) {
  WebSocketQuery q;
  for (const auto& [name, value] : query) {
    if (name != "latest_only") {
      q.options.emplace(name, value);
    } else if (value == "true" || value == "1" || value == "false" || value == "0") {
      q.latest_only = value == "true" || value == "1";
    } else {
      return HttpError{422, "invalid_parameter",
                       "latest_only: '" + value + "' is not allowed; true or false"};
    }
  }
  DetectParams params;
  if (auto e = ParseDetectOptions(q.options, &params, opt::kHttp)) return *e;
  return q;
}

// GET /v1/events?interval_ms=N: 100..60000, default 1000.
std::variant<std::chrono::milliseconds, HttpError> ParseEventsInterval(
    const std::multimap<std::string, std::string>& query) {
  std::chrono::milliseconds interval(1000);
  for (const auto& [name, value] : query) {
    int ms = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), ms);
    if (name != "interval_ms") {
      return HttpError{422, "invalid_parameter",
                       "unknown parameter '" + name + "'; allowed: interval_ms"};
    }
    if (ec != std::errc() || end != value.data() + value.size() || ms < 100 || ms > 60000) {
      return HttpError{422, "invalid_parameter",
                       "interval_ms: '" + value + "' is not allowed; an integer from 100 to 60000"};
    }
    interval = std::chrono::milliseconds(ms);
  }
  return interval;
}

// POST /v1/detect's answer: one image → its result (or error) with its status; several → 200
// with one entry per image, in order, each failed one carrying its own error (and "status", the
// code it would have had alone).
HttpResponse DetectResponse(const DetectRequest& request,
                            const std::vector<pipeline::RequestResult>& results) {
  const bool modelscope = request.params.modelscope_format();
  if (!request.many) {
    const auto [status, code] = HttpStatusOf(results[0]);
    HttpResponse r = JsonResponse(ResultBody(results[0], modelscope), status);
    if (status == 503) r.SetHeader("Retry-After", "1");
    return r;
  }
  nlohmann::json list = nlohmann::json::array();
  for (size_t i = 0; i < results.size(); ++i) {
    nlohmann::json entry = ResultBody(results[i], modelscope);
    entry["name"] = request.images[i].name;
    entry["status"] = HttpStatusOf(results[i]).first;
    list.push_back(std::move(entry));
  }
  return JsonResponse({{"results", list}});
}

// The routes the admin port serves: probes and metrics, answered from the event loop.
bool IsAdminRoute(std::string_view path) {
  return path == "/healthz" || path == "/readyz" || path == "/metrics" ||
         path == "/v2/health/live" || path == "/v2/health/ready";
}

}  // namespace

class HttpServer::AdminHandler : public http::HttpHandler {
 public:
  explicit AdminHandler(HttpServer* server) : server_(server) {}
  std::optional<HttpResponse> Screen(const HttpRequest& head) override {
    if (!IsAdminRoute(head.path)) {
      return http::JsonError(404, "not_found",
                             "the admin port serves /healthz, /readyz, /metrics and "
                             "/v2/health/{live,ready} only");
    }
    return server_->Screen(head);
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

HttpServer::HttpServer(ServerOptions options) : options_(std::move(options)) {
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
    if (!admin.ok()) return Status(admin.status().code(), "--admin-port: " + admin.status().message());
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

bool HttpServer::Authorized(const HttpRequest& head) const {
  return BearerKeyMatches(head.Header("Authorization"), options_.api_key);
}

namespace {

// A CORS preflight (OPTIONS, with --cors-origin set), answered for any path.
HttpResponse CorsPreflight() {
  HttpResponse r;
  r.status = 204;
  r.SetHeader("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS");
  r.SetHeader("Access-Control-Allow-Headers", "Authorization, Content-Type");
  r.SetHeader("Access-Control-Max-Age", "600");
  return r;
}

// The checks every request passes first, in this order: a route for the path (404), the method
// (405), the API key where one is needed (401). /v2 answers in the Open Inference Protocol's
// error shape, /v1 and the rest in ours.
std::optional<HttpResponse> ScreenRouteMethodAndKey(const HttpRequest& head,
                                                    const RouteEntry* route, bool v2,
                                                    bool key_required, bool authorized) {
  auto refuse = [v2](int status, const char* code, std::string message) {
    return v2 ? oip::ErrorResponse({status, code, std::move(message)})
              : http::JsonError(status, code, message);
  };
  if (route == nullptr) return refuse(404, "not_found", "no route " + head.method + " " + head.path);
  if (!MethodAllowed(*route, head.method)) {
    const std::string allow = AllowedMethods(*route);
    const bool get_only = std::string_view(route->method) == "GET";
    HttpResponse r = refuse(
        405, "method_not_allowed",
        head.path + " answers " + (get_only ? "GET and HEAD" : allow) + ", not " + head.method);
    r.SetHeader("Allow", allow);
    return r;
  }
  const bool needs_key = head.path.rfind("/v1/", 0) == 0 ||
                         (v2 && head.path.rfind("/v2/health/", 0) != 0);
  if (key_required && needs_key && !authorized) {
    HttpResponse r =
        refuse(401, "unauthorized",
               head.HasHeader("Authorization")
                   ? "the API key is not valid (send 'Authorization: Bearer <key>')"
                   : "this server needs an API key: send 'Authorization: Bearer <key>'");
    r.SetHeader("WWW-Authenticate", "Bearer");
    return r;
  }
  return std::nullopt;
}

HttpResponse TooManySubscribers(std::string message) {
  HttpResponse r = http::JsonError(503, "too_many_subscribers", std::move(message));
  r.SetHeader("Retry-After", "5");
  return r;
}

}  // namespace

std::optional<HttpResponse> HttpServer::Screen(const HttpRequest& head) {
  if (head.method == "OPTIONS" && !options_.cors_origin.empty()) return CorsPreflight();
  const bool v2 = head.path == "/v2" || head.path.rfind("/v2/", 0) == 0;
  const RouteEntry* route = FindRoute(head.path);
  const bool key_required = !options_.api_key.empty();
  if (auto refused = ScreenRouteMethodAndKey(head, route, v2, key_required,
                                             key_required && Authorized(head))) {
    return refused;
  }
  const int route_value = static_cast<int>(route->route);
  return v2 ? ScreenV2(head, route_value) : ScreenV1(head, route_value);
}

std::optional<HttpResponse> HttpServer::ScreenV1(const HttpRequest& head, int route_value) {
  const auto route = static_cast<Route>(route_value);
  if (route == Route::kDetect) {
    if (!ready()) return NotReady();
    if (auto e = CheckDetectContentType(head.Header("Content-Type"))) return Error(*e);
  }
  if (route == Route::kEvents) {
    auto interval = ParseEventsInterval(head.query);
    if (auto* e = std::get_if<HttpError>(&interval)) return Error(*e);
    if (events_->subscribers() >= StatsEvents::kMaxSubscribers) {
      return TooManySubscribers("/v1/events has " + std::to_string(StatsEvents::kMaxSubscribers) +
                                " subscribers already");
    }
  }
  const bool streams_route =
      route == Route::kStreams || route == Route::kStream || route == Route::kStreamsWebSocket;
  if (streams_route && streams_.load() == nullptr) {
    return http::JsonError(404, "not_found",
                           "this server has no video streams (" + head.path +
                               "): mogserve serve was built without video");
  }
  if (route == Route::kStreamsWebSocket) {
    // The cap shared with the streamed watchers, checked before the upgrade (and again as the
    // socket subscribes: another may have come meanwhile).
    StreamEvents* events = stream_events_.load();
    if (events == nullptr || events->full()) {
      return TooManySubscribers(
          "the streams have their most watchers already (--max-stream-subscribers)");
    }
  }
  if (route == Route::kDetectWebSocket) {
    if (!ready()) return NotReady();
    auto query = ParseWebSocketQuery(head.query);
    if (auto* e = std::get_if<HttpError>(&query)) return Error(*e);
  }
  return std::nullopt;
}

std::optional<HttpResponse> HttpServer::ScreenV2(const HttpRequest& head, int route_value) {
  const auto route = static_cast<Route>(route_value);
  const V2Path v = *ParseV2Path(head.path);  // FindRoute found it
  const bool model_route = route == Route::kV2Model || route == Route::kV2ModelReady ||
                           route == Route::kV2Infer;
  if (model_route && (route != Route::kV2ModelReady || ready())) {
    if (!ready()) return oip::ErrorResponse({503, "not_ready", "the model is still loading"});
    if (v.model != ModelName() || !(v.version.empty() || v.version == "1")) {
      return oip::ErrorResponse(
          {404, "model_not_found",
           "no model '" + v.model + "'" + (v.version.empty() ? "" : " version " + v.version) +
               " here; this server runs '" + ModelName() + "', version 1"});
    }
  }
  if (route == Route::kV2Infer && head.HasHeader("Content-Encoding")) {
    return oip::ErrorResponse({415, "unsupported_media_type",
                               "Content-Encoding is not supported on /infer; send the body "
                               "uncompressed"});
  }
  return std::nullopt;
}

std::string HttpServer::ModelName() const {
  return options_.model_name.empty() ? model_.info.model : options_.model_name;
}

void HttpServer::Handle(HttpRequest request, http::Responder respond) {
  switch (FindRoute(request.path)->route) {
    case Route::kDetect:
      return Detect(std::move(request), respond);
    case Route::kDetectWebSocket:
    case Route::kStreamsWebSocket: {  // a plain GET: the upgrade is missing
      HttpResponse r = http::JsonError(
          426, "upgrade_required",
          request.path + " is a WebSocket: send Connection: Upgrade and Upgrade: websocket");
      r.SetHeader("Upgrade", "websocket");
      return respond(std::move(r));
    }
    case Route::kHealthz:
      return respond(JsonResponse({{"status", "ok"}}));
    case Route::kReadyz:
      return respond(Ready());
    case Route::kMetrics:
      return respond(Metrics());
    case Route::kModels:
      return respond(Models());
    case Route::kStats:
      return respond(JsonResponse(StatsJson()));
    case Route::kEvents: {
      HttpResponse head;
      head.content_type = "text/event-stream";
      head.SetHeader("Cache-Control", "no-cache");
      head.SetHeader("X-Accel-Buffering", "no");  // nginx: pass events through unbuffered
      std::shared_ptr<http::ResponseStream> stream = respond.Stream(std::move(head));
      const auto interval = std::get<std::chrono::milliseconds>(ParseEventsInterval(request.query));
      if (!events_->Subscribe(stream, interval)) {
        stream->Write(": too many subscribers, or shutting down\n\n");
        stream->End();
      }
      return;
    }
    case Route::kStreams:
    case Route::kStream:
      if (HandleStreamWatch(*streams_.load(), stream_events_.load(), request, respond)) return;
      return respond(HandleStreamRequest(*streams_.load(), request));
    case Route::kWebUi:
      return respond(WebAssetResponse(request));
    case Route::kV2Server:
      return respond(JsonResponse(oip::ServerMetadata()));
    case Route::kV2Live:
      return respond(JsonResponse({{"live", true}}));
    case Route::kV2Ready:
    case Route::kV2ModelReady: {
      // The protocol reads readiness from the status: any 4xx is "not ready".
      const bool ok = ready() && !stopped_.load() && !draining_.load();
      return respond(JsonResponse({{"ready", ok}}, ok ? 200 : 400));
    }
    case Route::kV2Model:
      return respond(JsonResponse(oip::ModelMetadata(
          ModelName(), model_.info.device == "cpu" ? "pytorch_libtorch" : "mogserve_cudnn")));
    case Route::kV2Infer:
      return Infer(std::move(request), respond);
  }
}

void HttpServer::SetStreams(video::StreamRegistry* streams, StreamEvents* events) {
  stream_events_ = events;
  streams_ = streams;
}

std::unique_ptr<http::WebSocketHandler> HttpServer::AcceptWebSocket(
    const HttpRequest& head, std::shared_ptr<http::WebSocketPeer> peer) {
  if (FindRoute(head.path)->route == Route::kStreamsWebSocket) {
    return AcceptStreamWebSocket(stream_events_.load(), head, std::move(peer));
  }
  pipeline::Pipeline* pipeline = pipeline_.load();
  if (pipeline == nullptr || FindRoute(head.path)->route != Route::kDetectWebSocket) return nullptr;
  auto query = std::get<WebSocketQuery>(ParseWebSocketQuery(head.query));  // Screen checked it
  DetectWebSocketOptions o;
  o.query = std::move(query.options);
  o.latest_only = query.latest_only;
  // Each socket is its own client: its frames supersede only each other.
  o.client = "ws:" + std::to_string(next_socket_id_.fetch_add(1)) + ":" + head.remote_addr;
  o.limits = options_.limits;
  return std::make_unique<DetectWebSocket>(pipeline, std::move(peer), std::move(o));
}

void HttpServer::BeforeSend(const http::ExchangeRecord& record, HttpResponse& response) {
  // Counted before the write: a client that scrapes /metrics once it has its answer sees it.
  metrics_.OnHttpResponse(RouteLabel(record.path), response.status);
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
    spdlog::info("{} \"{} {}\" {} {}B {:.1f}ms{}{}", record.remote_addr, record.method,
                 record.path, record.status, record.body_bytes, ms,
                 record.written ? "" : " (client gone)",
                 record.request_id.empty() ? "" : " id=" + record.request_id);
  }
}

void HttpServer::Detect(HttpRequest request, const http::Responder& respond) {
  pipeline::Pipeline* pipeline = pipeline_.load();
  if (pipeline == nullptr) return respond(NotReady());
  ParsedDetectRequest parsed = ParseDetectRequest(
      request.Header("Content-Type"), std::move(request.body), request.query, options_.limits);
  if (parsed.error) return respond(Error(*parsed.error));
  pipeline::DetectCall call =
      MakeDetectCall(parsed.request.images, parsed.request.params, Client(request));
  // The images' bytes stay counted against the in-flight budget until the answer: requests
  // still decoding hold them.
  auto detect = std::make_shared<const DetectRequest>(std::move(parsed.request));
  pipeline::SubmitAll(*pipeline, std::move(call),
                      [detect, respond, lease = std::make_shared<http::BodyLease>(
                                            std::move(request.body_lease))](
                          std::vector<pipeline::RequestResult> results) {
                        respond(DetectResponse(*detect, results));
                      });
}

void HttpServer::Infer(HttpRequest request, const http::Responder& respond) {
  pipeline::Pipeline* pipeline = pipeline_.load();
  if (pipeline == nullptr) return respond(NotReady());
  auto parsed = oip::ParseInferRequest(request.Header("Inference-Header-Content-Length"),
                                       request.body, options_.limits);
  if (auto* e = std::get_if<HttpError>(&parsed)) return respond(oip::ErrorResponse(*e));
  auto infer = std::make_shared<oip::InferRequest>(std::move(std::get<oip::InferRequest>(parsed)));
  std::string().swap(request.body);  // the images are copies: the body goes now
  if (infer->id.empty()) infer->id = std::string(request.Header("X-Request-Id"));
  pipeline::DetectCall call = MakeDetectCall(infer->images, infer->params, Client(request));
  pipeline::SubmitAll(*pipeline, std::move(call),
                      [infer, name = ModelName(), respond,
                       lease = std::make_shared<http::BodyLease>(std::move(request.body_lease))](
                          std::vector<pipeline::RequestResult> results) {
                        respond(oip::InferResponse(*infer, name, results));
                      });
}

std::string HttpServer::Client(const HttpRequest& request) const {
  return options_.api_key.empty() ? request.remote_addr : "key";
}

HttpResponse HttpServer::Ready() const {
  if (stopped_.load() || draining_.load()) {
    return JsonResponse({{"ready", false}, {"reason", "shutting down"}}, 503);
  }
  if (ready()) return JsonResponse({{"ready", true}});
  HttpResponse r =
      JsonResponse({{"ready", false}, {"reason", "loading and warming up the model"}}, 503);
  r.SetHeader("Retry-After", "1");
  return r;
}

HttpResponse HttpServer::Models() const {
  if (!ready()) return JsonResponse({{"models", nlohmann::json::array()}});
  const engine::EngineInfo& i = model_.info;
  nlohmann::json m = {{"name", i.model},
                      {"variant", i.variant},
                      {"weights", i.weights},
                      {"device", i.device},
                      {"precision", i.precision},
                      {"precision_choice", i.precision_choice},
                      {"cpu",
                       {{"model", i.cpu_model},
                        {"isa", i.cpu_isa},
                        {"features", i.cpu_features},
                        {"cap", i.cpu_cap}}},
                      {"threads", i.threads},
                      {"instances", model_.instances},
                      {"input_policy", model_.input_policy},
                      {"scheduler", model_.scheduler},
                      {"buffer_plan", model_.buffer_plan}};
  // Every per-image setting of the option table, as this server applies it by default.
  nlohmann::json& defaults = m["defaults"] = nlohmann::json::object();
  for (const opt::Option& o : opt::Table()) {
    std::visit(
        [&](auto field) {
          if constexpr (!std::is_same_v<decltype(field), std::monostate>) {
            defaults[std::string(o.name)] = model_.defaults.*field;
          }
        },
        o.detect);
  }
  return JsonResponse({{"models", {m}}});
}

nlohmann::json HttpServer::StatsJson() {
  const pipeline::Pipeline* pipeline = pipeline_.load();
  nlohmann::json stats =
      metrics_.Stats(pipeline, pipeline ? engines_ : std::vector<engine::Engine*>{});
  const http::ListenerStats l = listener_->Stats();
  stats["http"] = {{"connections_open", l.connections.open},
                   {"connections_accepted", l.connections.accepted_total},
                   {"connections_displaced", l.connections.displaced_total},
                   {"connections_refused", l.connections.refused_total},
                   {"body_bytes_in_flight", l.body_bytes_in_flight}};
  const ProcessMemory memory = ReadProcessMemory();
  stats["process"] = {{"rss_bytes", memory.rss_bytes},
                      {"peak_rss_bytes", memory.peak_rss_bytes},
                      {"idle_rss_bytes", pipeline ? idle_rss_bytes_ : 0}};
  return stats;
}

HttpResponse HttpServer::Metrics() {
  const pipeline::Pipeline* pipeline = pipeline_.load();
  metrics_.SetHttpStats(listener_->Stats(), ReadProcessMemory());
  metrics_.SetDraining(draining_.load() || stopped_.load());
  HttpResponse r;
  r.content_type = "text/plain; version=0.0.4; charset=utf-8";
  r.body = metrics_.Render(pipeline, pipeline ? engines_ : std::vector<engine::Engine*>{});
  if (const video::StreamRegistry* streams = streams_.load()) {
    r.body += StreamMetricsText(*streams);  // per-stream series, gone with their stream
  }
  return r;
}

}  // namespace mogserve::server
