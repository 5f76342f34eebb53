#include "server/stream_routes.h"

#include "server/detect_request.h"
#include "server/result_json.h"

#ifdef MOGSERVE_WITH_VIDEO
#include "video/stream_registry.h"
#endif

namespace mogserve::server {

#ifdef MOGSERVE_WITH_VIDEO

namespace {

constexpr std::string_view kPrefix = "/v1/streams/";

http::HttpResponse Json(const nlohmann::json& body, int status) {
  http::HttpResponse r;
  r.status = status;
  r.content_type = "application/json";
  r.body = ToJsonLine(body);
  return r;
}

nlohmann::json StreamJson(const video::StreamInfo& s) {
  const video::IngestCounters& c = s.counters;
  nlohmann::json j = {{"id", s.id},
                      {"url", s.url},
                      {"state", video::StreamStateName(s.state)},
                      {"frames",
                       {{"decoded", c.decoded},
                        {"corrupt", c.corrupt},
                        {"sampled_out", c.sampled_out},
                        {"submitted", c.submitted},
                        {"detected", c.detected},
                        {"superseded", c.superseded},
                        {"expired", c.expired},
                        {"failed", c.failed}}},
                      {"last",
                       {{"frame", s.last_frame},
                        {"faces", s.last_faces},
                        {"latency_ms", Round(s.last_latency_ms, 2)}}}};
  if (s.error) {
    j["error"] = {{"code", video::VideoErrorName(s.error->code)}, {"message", s.error->message}};
  }
  return j;
}

// A registry refusal as the HTTP status and code the route promises.
http::HttpResponse AddError(const Status& status) {
  switch (status.code()) {
    case StatusCode::kFailedPrecondition:
      return http::JsonError(409, "stream_exists", status.message());
    case StatusCode::kResourceExhausted:
      return http::JsonError(503, "too_many_streams", status.message());
    case StatusCode::kUnsupported:
      return http::JsonError(400, "unsupported_url", status.message());
    default:
      return http::JsonError(422, "invalid_request", status.message());
  }
}

http::HttpResponse Add(video::StreamRegistry& registry, const std::string& body) {
  nlohmann::json j;
  // Depth-limited like every JSON body (detect_request.h): nothing recurses on client data.
  if (auto e = ParseJsonLimited(body, 8, &j)) return http::JsonError(e->status, e->code, e->message);
  if (!j.is_object() || !j.contains("id") || !j["id"].is_string() || !j.contains("url") ||
      !j["url"].is_string() || (j.contains("detect_fps") && !j["detect_fps"].is_number())) {
    return http::JsonError(422, "invalid_request",
                           "expected a JSON object {\"id\": string, \"url\": string, "
                           "\"detect_fps\": number (optional)}");
  }
  video::StreamConfig config;
  config.id = j["id"].get<std::string>();
  config.url = j["url"].get<std::string>();
  config.detect_fps = j.value("detect_fps", 0.0);
  const Status added = registry.Add(config);
  if (!added.ok()) return AddError(added);
  return Json(StreamJson(*registry.Get(config.id)), 201);
}

}  // namespace

http::HttpResponse HandleStreamRequest(video::StreamRegistry& registry,
                                       const http::HttpRequest& request) {
  if (request.path.rfind(kPrefix, 0) != 0) {  // the collection
    if (request.method == "POST") return Add(registry, request.body);
    nlohmann::json list = nlohmann::json::array();
    for (const video::StreamInfo& s : registry.List()) list.push_back(StreamJson(s));
    return Json({{"streams", list}}, 200);
  }
  const std::string id = request.path.substr(kPrefix.size());
  if (request.method == "DELETE") {
    const Status removed = registry.Remove(id);
    if (!removed.ok()) return http::JsonError(404, "stream_not_found", removed.message());
    http::HttpResponse r;
    r.status = 204;
    return r;
  }
  StatusOr<video::StreamInfo> info = registry.Get(id);
  if (!info.ok()) return http::JsonError(404, "stream_not_found", info.status().message());
  return Json(StreamJson(*info), 200);
}

#else

http::HttpResponse HandleStreamRequest(video::StreamRegistry&, const http::HttpRequest& request) {
  return http::JsonError(404, "not_found",
                         "this mogserve was built without video support: no " + request.path);
}

#endif

}  // namespace mogserve::server
