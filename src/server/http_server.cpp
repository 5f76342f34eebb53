#include "server/http_server.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <charconv>
#include <cmath>
#include <variant>

#include "common/process_memory.h"
#include "scheduler/outcome.h"
#include "server/detect_call.h"
#include "server/detect_websocket.h"
#include "server/http/listener.h"
#include "server/result_json.h"
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

// Compares in time independent of where the strings differ (API keys).
bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
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
  kStreams,  // /v1/streams
  kStream,   // /v1/streams/{id}
  kWebUi
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
};

const RouteEntry* FindRoute(std::string_view path) {
  for (const RouteEntry& e : kRoutes) {
    if (path == e.path) return &e;
  }
  static constexpr RouteEntry kUi = {"/ui", Route::kWebUi, "GET"};
  if (path == "/ui" || path.rfind("/ui/", 0) == 0) return &kUi;
  static constexpr RouteEntry kStream = {"/v1/streams/", Route::kStream, "GET,DELETE"};
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
  if (auto e = ParseDetectOptions(q.options, &params)) return *e;
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

// The results of one HTTP request's images, answered when the last one ends.
class DetectAnswer : public std::enable_shared_from_this<DetectAnswer> {
 public:
  // `body` holds the request's bytes in the in-flight budget until the answer.
  DetectAnswer(DetectRequest request, http::BodyLease body, http::Responder respond)
      : request_(std::move(request)),
        body_(std::move(body)),
        respond_(std::move(respond)),
        results_(request_.images.size()),
        pending_(request_.images.size()) {}

  pipeline::ResultCallback Slot(size_t i) {
    return [self = shared_from_this(), i](pipeline::RequestResult r) {
      self->results_[i] = std::move(r);
      if (self->pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) self->Answer();
    };
  }

 private:
  nlohmann::json BodyOf(const pipeline::RequestResult& r) const {
    return ResultBody(r, request_.params.modelscope_format);
  }

  void Answer() {
    if (!request_.many) {
      const auto [status, code] = HttpStatusOf(results_[0]);
      HttpResponse r = JsonResponse(BodyOf(results_[0]), status);
      if (status == 503) r.SetHeader("Retry-After", "1");
      return respond_(std::move(r));
    }
    // Several images: 200 with one entry per image, in order; each failed one carries its own
    // error (and "status", the code it would have had alone).
    nlohmann::json list = nlohmann::json::array();
    for (size_t i = 0; i < results_.size(); ++i) {
      nlohmann::json entry = BodyOf(results_[i]);
      entry["name"] = request_.images[i].name;
      entry["status"] = HttpStatusOf(results_[i]).first;
      list.push_back(std::move(entry));
    }
    respond_(JsonResponse({{"results", list}}));
  }

  DetectRequest request_;  // the images' bytes are moved out when submitted
  http::BodyLease body_;
  http::Responder respond_;
  std::vector<pipeline::RequestResult> results_;
  std::atomic<size_t> pending_;
};

}  // namespace

HttpServer::HttpServer(ServerOptions options) : options_(std::move(options)) {
  http::ListenerOptions listener;
  listener.host = options_.host;
  listener.port = options_.port;
  listener.limits = options_.http;
  listener.io_threads = options_.io_threads;
  http::HttpHandler* handler = this;
  listener_ = std::make_unique<http::Listener>(std::move(listener), handler);
  events_ = std::make_unique<StatsEvents>([this] { return ToJsonLine(StatsJson()); });
}

HttpServer::~HttpServer() {
  events_->Stop();
}

StatusOr<int> HttpServer::Bind() {
  return listener_->Bind();
}

void HttpServer::Serve() {
  listener_->Run();
}

void HttpServer::Stop() {
  if (stopped_.exchange(true)) return;
  listener_->Stop();
  events_->Stop();  // ends the event streams, so their connections can close
}

void HttpServer::SetPipeline(pipeline::Pipeline* pipeline, std::vector<engine::Engine*> engines,
                             ModelDescription model) {
  engines_ = std::move(engines);
  model_ = std::move(model);
  idle_rss_bytes_ = ReadProcessMemory().rss_bytes;
  pipeline_.store(pipeline);
}

bool HttpServer::Authorized(const HttpRequest& head) const {
  // "Bearer <key>"; the scheme is case-insensitive (RFC 9110 §11.1).
  std::string_view auth = head.Header("Authorization");
  const size_t space = auth.find(' ');
  if (space == std::string_view::npos || !http::EqualsIgnoreCase(auth.substr(0, space), "Bearer")) {
    return false;
  }
  auth.remove_prefix(space);
  while (!auth.empty() && auth.front() == ' ') auth.remove_prefix(1);
  while (!auth.empty() && auth.back() == ' ') auth.remove_suffix(1);
  return ConstantTimeEquals(auth, options_.api_key);
}

std::optional<HttpResponse> HttpServer::Screen(const HttpRequest& head) {
  if (head.method == "OPTIONS" && !options_.cors_origin.empty()) {
    HttpResponse r;  // a CORS preflight, answered for any path
    r.status = 204;
    r.SetHeader("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS");
    r.SetHeader("Access-Control-Allow-Headers", "Authorization, Content-Type");
    r.SetHeader("Access-Control-Max-Age", "600");
    return r;
  }
  const RouteEntry* route = FindRoute(head.path);
  if (route == nullptr) {
    return http::JsonError(404, "not_found", "no route " + head.method + " " + head.path);
  }
  if (!MethodAllowed(*route, head.method)) {
    const std::string allow = AllowedMethods(*route);
    const bool get_only = std::string_view(route->method) == "GET";
    HttpResponse r = http::JsonError(
        405, "method_not_allowed",
        head.path + " answers " + (get_only ? "GET and HEAD" : allow) + ", not " + head.method);
    r.SetHeader("Allow", allow);
    return r;
  }
  if (!options_.api_key.empty() && head.path.rfind("/v1/", 0) == 0 && !Authorized(head)) {
    HttpResponse r =
        http::JsonError(401, "unauthorized",
                        head.HasHeader("Authorization")
                            ? "the API key is not valid (send 'Authorization: Bearer <key>')"
                            : "this server needs an API key: send 'Authorization: Bearer <key>'");
    r.SetHeader("WWW-Authenticate", "Bearer");
    return r;
  }
  if (route->route == Route::kDetect) {
    if (!ready()) return NotReady();
    if (auto e = CheckDetectContentType(head.Header("Content-Type"))) return Error(*e);
  }
  if (route->route == Route::kEvents) {
    auto interval = ParseEventsInterval(head.query);
    if (auto* e = std::get_if<HttpError>(&interval)) return Error(*e);
    if (events_->subscribers() >= StatsEvents::kMaxSubscribers) {
      HttpResponse r =
          http::JsonError(503, "too_many_subscribers",
                          "/v1/events has " + std::to_string(StatsEvents::kMaxSubscribers) +
                              " subscribers already");
      r.SetHeader("Retry-After", "5");
      return r;
    }
  }
  if ((route->route == Route::kStreams || route->route == Route::kStream) &&
      streams_.load() == nullptr) {
    return http::JsonError(404, "not_found",
                           "this server has no video streams (" + head.path +
                               "): mogserve serve was built without video");
  }
  if (route->route == Route::kDetectWebSocket) {
    if (!ready()) return NotReady();
    auto query = ParseWebSocketQuery(head.query);
    if (auto* e = std::get_if<HttpError>(&query)) return Error(*e);
  }
  return std::nullopt;
}

void HttpServer::Handle(HttpRequest request, http::Responder respond) {
  switch (FindRoute(request.path)->route) {
    case Route::kDetect:
      return Detect(std::move(request), respond);
    case Route::kDetectWebSocket: {  // a plain GET: the upgrade is missing
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
      return respond(HandleStreamRequest(*streams_.load(), request));
    case Route::kWebUi:
      return respond(WebAssetResponse(request));
  }
}

void HttpServer::SetStreams(video::StreamRegistry* streams) {
  streams_ = streams;
}

std::unique_ptr<http::WebSocketHandler> HttpServer::AcceptWebSocket(
    const HttpRequest& head, std::shared_ptr<http::WebSocketPeer> peer) {
  pipeline::Pipeline* pipeline = pipeline_.load();
  if (pipeline == nullptr || FindRoute(head.path)->route != Route::kDetectWebSocket) return nullptr;
  auto query = std::get<WebSocketQuery>(ParseWebSocketQuery(head.query));  // Screen checked it
  DetectWebSocketOptions o;
  o.query = std::move(query.options);
  o.latest_only = query.latest_only;
  // Each socket is its own client: its frames supersede only each other.
  o.client = "ws:" + std::to_string(next_socket_id_.fetch_add(1)) + ":" + head.remote_addr;
  o.defaults = model_.defaults;
  o.limits = options_.limits;
  return std::make_unique<DetectWebSocket>(pipeline, std::move(peer), std::move(o));
}

void HttpServer::BeforeSend(const http::ExchangeRecord& record, HttpResponse& response) {
  // Counted before the write: a client that scrapes /metrics once it has its answer sees it.
  metrics_.OnHttpResponse(RouteLabel(record.path), response.status);
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
                             {"delivered", record.written}}));
  } else {
    spdlog::info("{} \"{} {}\" {} {}B {:.1f}ms{}", record.remote_addr, record.method, record.path,
                 record.status, record.body_bytes, ms, record.written ? "" : " (client gone)");
  }
}

void HttpServer::Detect(HttpRequest request, const http::Responder& respond) {
  pipeline::Pipeline* pipeline = pipeline_.load();
  if (pipeline == nullptr) return respond(NotReady());
  ParsedDetectRequest parsed = ParseDetectRequest(
      request.Header("Content-Type"), std::move(request.body), request.query, options_.limits);
  if (parsed.error) return respond(Error(*parsed.error));
  const DetectParams& p = parsed.request.params;
  const std::string client = options_.api_key.empty() ? request.remote_addr : "key";
  std::vector<pipeline::SubmitRequest> submits;
  for (ImagePart& image : parsed.request.images) {
    submits.push_back(MakeSubmitRequest(image, p, model_.defaults, client));
  }
  // The images' bytes stay counted against the in-flight budget until the answer: requests
  // still decoding hold them.
  auto call = std::make_shared<DetectAnswer>(std::move(parsed.request),
                                             std::move(request.body_lease), respond);
  for (size_t i = 0; i < submits.size(); ++i) {
    pipeline->Submit(std::move(submits[i]), call->Slot(i));
  }
}

HttpResponse HttpServer::Ready() const {
  if (stopped_.load()) return JsonResponse({{"ready", false}, {"reason", "shutting down"}}, 503);
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
                      {"threads", i.threads},
                      {"instances", model_.instances},
                      {"input_policy", model_.input_policy},
                      {"scheduler", model_.scheduler},
                      {"buffer_plan", model_.buffer_plan},
                      {"defaults",
                       {{"score_threshold", model_.defaults.score_threshold},
                        {"max_faces", model_.defaults.max_faces},
                        {"nms_iou", model_.defaults.nms_iou},
                        {"top_k", model_.defaults.top_k}}}};
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
  HttpResponse r;
  r.content_type = "text/plain; version=0.0.4; charset=utf-8";
  r.body = metrics_.Render(pipeline, pipeline ? engines_ : std::vector<engine::Engine*>{});
  return r;
}

}  // namespace mogserve::server
