// HttpServer's routes that tell about the server: probes (/healthz, /readyz, /v2/health/*),
// /v1/models, /v1/stats and its event stream /v1/events, /metrics, and the /v1/streams checks.
#include <charconv>
#include <type_traits>
#include <variant>

#include "common/process_memory.h"
#include "options/option_table.h"
#include "server/http/listener.h"
#include "server/http_server.h"
#include "server/stream_events.h"
#include "server/stream_routes.h"

namespace mogserve::server {
namespace {

using http::HttpRequest;
using http::HttpResponse;

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

HttpResponse TooManySubscribers(std::string message) {
  HttpResponse r = http::JsonError(503, "too_many_subscribers", std::move(message));
  r.SetHeader("Retry-After", "5");
  return r;
}

}  // namespace

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
                      {"landmarks", model_.landmarks},
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

HttpResponse HttpServer::OipReady() const {
  // The protocol reads readiness from the status: any 4xx is "not ready".
  const bool ok = ready() && !stopped_.load() && !draining_.load();
  return JsonResponse({{"ready", ok}}, ok ? 200 : 400);
}

std::optional<HttpResponse> HttpServer::ScreenEvents(const HttpRequest& head) const {
  auto interval = ParseEventsInterval(head.query);
  if (auto* e = std::get_if<HttpError>(&interval)) return RouteError(Route::Errors::kMogserve, *e);
  if (events_->subscribers() >= StatsEvents::kMaxSubscribers) {
    return TooManySubscribers("/v1/events has " + std::to_string(StatsEvents::kMaxSubscribers) +
                              " subscribers already");
  }
  return std::nullopt;
}

void HttpServer::Events(const HttpRequest& request, const http::Responder& respond) {
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
}

std::optional<HttpResponse> HttpServer::ScreenStreams(const HttpRequest& head,
                                                      bool websocket) const {
  if (streams_.load() == nullptr) {
    return http::JsonError(404, "not_found",
                           "this server has no video streams (" + head.path +
                               "): mogserve serve was built without video");
  }
  if (websocket) {
    // The cap shared with the streamed watchers, checked before the upgrade (and again as the
    // socket subscribes: another may have come meanwhile).
    StreamEvents* events = stream_events_.load();
    if (events == nullptr || events->full()) {
      return TooManySubscribers(
          "the streams have their most watchers already (--max-stream-subscribers)");
    }
  }
  return std::nullopt;
}

}  // namespace mogserve::server
