#include "server/stream_routes.h"

#include <algorithm>
#include <array>
#include <string_view>

#include "json/result_json.h"
#include "server/detect_request.h"

#ifdef MOGSERVE_WITH_VIDEO
#include "server/metrics_registry.h"
#include "server/stream_events.h"
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

double UnixSeconds(std::chrono::system_clock::time_point t) {
  return Round(std::chrono::duration<double>(t.time_since_epoch()).count(), 3);
}

nlohmann::json ErrorJson(const video::VideoError& e) {
  return {{"code", video::VideoErrorName(e.code)}, {"message", e.message}};
}

nlohmann::json StreamJson(const video::StreamInfo& s) {
  const video::IngestCounters& c = s.counters;
  const video::IngestStatus& st = s.status;
  nlohmann::json j = {{"id", s.id},
                      {"url", s.url},
                      {"detect_fps", s.detect_fps},
                      {"listen", s.listen},
                      {"track", s.track},
                      {"every_frame", s.every_frame},
                      {"state", video::StreamStateName(s.state)},
                      {"since", UnixSeconds(st.since)},
                      {"reconnects", st.reconnects},
                      {"codec", st.codec},
                      {"decoder", st.decoder},
                      {"width", st.width},
                      {"height", st.height},
                      {"source_fps", Round(st.source_fps, 3)},
                      {"lag_ms", Round(st.lag_ms, 1)},
                      {"frames",
                       {{"received", c.received},
                        {"decoded", c.decoded},
                        {"dropped_catchup", c.dropped_catchup},
                        {"corrupt", c.corrupt},
                        {"sampled_out", c.sampled_out},
                        {"submitted", c.submitted},
                        {"detected", c.detected},
                        {"superseded", c.superseded},
                        {"expired", c.expired},
                        {"failed", c.failed}}},
                      {"fps",
                       {{"received", Round(st.fps.received, 2)},
                        {"decoded", Round(st.fps.decoded, 2)},
                        {"dropped_catchup", Round(st.fps.dropped_catchup, 2)},
                        {"corrupt", Round(st.fps.corrupt, 2)},
                        {"sampled_out", Round(st.fps.sampled_out, 2)},
                        {"detected", Round(st.fps.detected, 2)},
                        {"superseded", Round(st.fps.superseded, 2)},
                        {"expired", Round(st.fps.expired, 2)}}},
                      {"latency_ms",
                       {{"p50", Round(st.latency.p50_ms, 2)},
                        {"p95", Round(st.latency.p95_ms, 2)},
                        {"p99", Round(st.latency.p99_ms, 2)}}},
                      {"last",
                       {{"frame", s.last_frame},
                        {"faces", s.last_faces},
                        {"latency_ms", Round(s.last_latency_ms, 2)}}}};
  if (const std::optional<track::TrackerStats>& t = st.tracks) {
    j["tracks"] = {{"started", t->started},
                   {"confirmed", t->confirmed},
                   {"lost", t->lost},
                   {"tentative", t->tentative}};
  }
  if (s.error) j["error"] = ErrorJson(*s.error);
  if (st.last_error) {
    j["last_error"] = ErrorJson(*st.last_error);
    j["last_error"]["at"] = UnixSeconds(st.last_error_at);
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
  if (auto e = ParseJsonLimited(body, 8, &j))
    return http::JsonError(e->status, e->code, e->message);
  video::StreamConfig config;
  if (std::optional<std::string> wrong = StreamConfigFromJson(j, &config)) {
    return http::JsonError(422, "invalid_request", *wrong);
  }
  const Status added = registry.Add(config);
  if (!added.ok()) return AddError(added);
  return Json(StreamJson(*registry.Get(config.id)), 201);
}

}  // namespace

std::optional<std::string> StreamConfigFromJson(const nlohmann::json& j,
                                                video::StreamConfig* config) {
  if (!j.is_object()) {
    return "expected a JSON object {\"id\": string, \"url\": string, \"detect_fps\": number "
           "(optional), \"listen\", \"track\", \"every_frame\": booleans (optional)}, got " +
           std::string(j.type_name());
  }
  for (const auto& [field, value] : j.items()) {
    static constexpr std::array<std::string_view, 6> kFields = {"id",     "url",   "detect_fps",
                                                                "listen", "track", "every_frame"};
    if (std::find(kFields.begin(), kFields.end(), field) == kFields.end()) {
      return "unknown field '" + field.substr(0, 64) +
             "'; a stream takes id, url, detect_fps, listen, track and every_frame";
    }
  }
  for (const char* field : {"id", "url"}) {
    if (!j.contains(field)) return std::string("field '") + field + "' is missing (a string)";
    if (!j[field].is_string()) {
      return std::string("field '") + field + "' must be a string, got " + j[field].type_name();
    }
  }
  if (j.contains("detect_fps") && !j["detect_fps"].is_number()) {
    return "field 'detect_fps' must be a number >= 0 (0: every frame), got " +
           std::string(j["detect_fps"].type_name());
  }
  for (const char* field : {"listen", "track", "every_frame"}) {
    if (j.contains(field) && !j[field].is_boolean()) {
      return std::string("field '") + field + "' must be true or false, got " +
             j[field].type_name();
    }
  }
  config->id = j["id"].get<std::string>();
  config->url = j["url"].get<std::string>();
  config->detect_fps = j.value("detect_fps", 0.0);
  config->listen = j.value("listen", false);
  config->track = j.value("track", false);
  config->every_frame = j.value("every_frame", false);
  return std::nullopt;
}

http::HttpResponse HandleStreamRequest(video::StreamRegistry& registry,
                                       const http::HttpRequest& request) {
  if (request.path.rfind(kPrefix, 0) != 0) {  // the collection
    if (request.method == "POST") return Add(registry, request.body);
    nlohmann::json list = nlohmann::json::array();
    for (const video::StreamInfo& s : registry.List()) list.push_back(StreamJson(s));
    return Json({{"streams", list}}, 200);
  }
  std::string id = request.path.substr(kPrefix.size());
  constexpr std::string_view kRestart = "/restart";
  if (id.size() > kRestart.size() &&
      id.compare(id.size() - kRestart.size(), kRestart.size(), kRestart) == 0) {
    id.resize(id.size() - kRestart.size());
    if (request.method != "POST") {
      http::HttpResponse r =
          http::JsonError(405, "method_not_allowed", "only POST " + request.path + " is allowed");
      r.SetHeader("Allow", "POST");
      return r;
    }
    const Status restarted = registry.Restart(id);
    if (!restarted.ok()) return http::JsonError(404, "stream_not_found", restarted.message());
    return Json(StreamJson(*registry.Get(id)), 200);
  }
  if (request.method == "POST") {
    http::HttpResponse r = http::JsonError(405, "method_not_allowed",
                                           "POST is for /v1/streams and /v1/streams/{id}/restart");
    r.SetHeader("Allow", "GET, DELETE");
    return r;
  }
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

namespace {

// One family's header and a sample per stream (label values escaped).
void Family(std::string& out, const std::string& name, const char* type, const char* help) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}
void Sample(std::string& out, const std::string& name, const std::string& labels, double value) {
  out += name + "{" + labels + "} " + FormatMetricValue(value) + "\n";
}

}  // namespace

namespace {

// "1"/"true" → true, "0"/"false" → false, absent → `otherwise`; nullopt when malformed.
std::optional<bool> QueryFlag(const http::HttpRequest& request, const char* name, bool otherwise) {
  auto it = request.query.find(name);
  if (it == request.query.end()) return otherwise;
  if (it->second == "1" || it->second == "true") return true;
  if (it->second == "0" || it->second == "false") return false;
  return std::nullopt;
}

std::vector<std::string> SplitIds(const std::string& text) {
  std::vector<std::string> ids;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    if (comma > start) ids.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return ids;
}

http::HttpResponse TooManySubscribers() {
  http::HttpResponse r = http::JsonError(503, "too_many_subscribers",
                                         "the streams have their most watchers already "
                                         "(--max-stream-subscribers)");
  r.SetHeader("Retry-After", "5");
  return r;
}

// Starts a streamed answer and hands it to `events`.
void Watch(StreamEvents& events, const http::Responder& respond, const std::string& content_type,
           StreamEvents::Watch watch) {
  http::HttpResponse head;
  head.content_type = content_type;
  head.SetHeader("Cache-Control", "no-cache");
  head.SetHeader("X-Accel-Buffering", "no");
  events.Subscribe(respond.Stream(std::move(head)), std::move(watch));
}

http::HttpResponse Snapshot(video::StreamRegistry& registry, const std::string& id,
                            const http::HttpRequest& request) {
  const std::optional<bool> boxes = QueryFlag(request, "boxes", true);
  if (!boxes) return http::JsonError(422, "invalid_request", "boxes must be 0 or 1");
  StatusOr<std::shared_ptr<const video::FrameResult>> latest = registry.Latest(id);
  if (!latest.ok()) return http::JsonError(404, "stream_not_found", latest.status().message());
  if (*latest == nullptr || (*latest)->preview == nullptr) {
    http::HttpResponse r =
        http::JsonError(503, "no_frame_yet", "stream '" + id + "' has no detected frame yet");
    r.SetHeader("Retry-After", "1");
    return r;
  }
  StatusOr<std::vector<uint8_t>> jpeg = SnapshotJpeg(**latest, *boxes);
  if (!jpeg.ok()) return http::JsonError(500, "internal", jpeg.status().message());
  http::HttpResponse r;
  r.status = 200;
  r.content_type = "image/jpeg";
  r.body.assign(jpeg->begin(), jpeg->end());
  r.SetHeader("Cache-Control", "no-store");
  r.SetHeader("X-Frame", std::to_string((*latest)->frame.index));
  return r;
}

}  // namespace

bool HandleStreamWatch(video::StreamRegistry& registry, StreamEvents* events,
                       const http::HttpRequest& request, const http::Responder& respond) {
  if (request.method != "GET" && request.method != "HEAD") return false;
  const std::string& path = request.path;
  if (path == "/v1/streams/events") {
    if (events == nullptr || events->full()) {
      respond(TooManySubscribers());
      return true;
    }
    StreamEvents::Watch watch;
    watch.format = StreamEvents::Format::kSse;
    auto ids = request.query.find("ids");
    if (ids != request.query.end()) watch.ids = SplitIds(ids->second);
    Watch(*events, respond, "text/event-stream", std::move(watch));
    return true;
  }
  if (path.rfind(kPrefix, 0) != 0) return false;
  const std::string rest = path.substr(kPrefix.size());
  const size_t slash = rest.find('/');
  if (slash == std::string::npos) return false;
  const std::string id = rest.substr(0, slash);
  const std::string what = rest.substr(slash + 1);
  if (what != "results" && what != "mjpeg" && what != "snapshot.jpg") return false;
  if (what == "snapshot.jpg") {
    respond(Snapshot(registry, id, request));
    return true;
  }
  if (!registry.Get(id).ok()) {
    respond(http::JsonError(404, "stream_not_found", "no stream '" + id + "'"));
    return true;
  }
  StreamEvents::Watch watch;
  watch.ids = {id};
  if (what == "mjpeg") {
    const std::optional<bool> boxes = QueryFlag(request, "boxes", true);
    double fps = 5;
    auto f = request.query.find("fps");
    if (f != request.query.end()) {
      try {
        fps = std::stod(f->second);
      } catch (const std::exception&) {
        fps = -1;
      }
    }
    if (!boxes || !(fps > 0 && fps <= 30)) {
      respond(http::JsonError(422, "invalid_request", "expected fps in (0, 30] and boxes 0 or 1"));
      return true;
    }
    watch.fps = fps;
    watch.boxes = *boxes;
  }
  if (events == nullptr || events->full()) {
    respond(TooManySubscribers());
    return true;
  }
  if (what == "results") {
    watch.format = StreamEvents::Format::kNdjson;
    Watch(*events, respond, "application/x-ndjson", std::move(watch));
  } else {
    watch.format = StreamEvents::Format::kMjpeg;
    Watch(*events, respond,
          std::string("multipart/x-mixed-replace; boundary=") + StreamEvents::kMjpegBoundary,
          std::move(watch));
  }
  return true;
}

namespace {

// What a refused subscriber's socket reads before it is closed.
class RefusedWebSocket final : public http::WebSocketHandler {
 public:
  bool OnMessage(std::string, bool) override { return true; }
  void OnClose() override {}
};

}  // namespace

std::unique_ptr<http::WebSocketHandler> AcceptStreamWebSocket(
    StreamEvents* events, const http::HttpRequest& head,
    std::shared_ptr<http::WebSocketPeer> peer) {
  if (events == nullptr) return nullptr;
  std::vector<std::string> ids;
  auto it = head.query.find("ids");
  if (it != head.query.end()) ids = SplitIds(it->second);
  if (auto handler = events->SubscribeWebSocket(peer, std::move(ids))) return handler;
  peer->Send(ToJsonLine({{"event", "error"},
                         {"data",
                          {{"code", "too_many_subscribers"},
                           {"message",
                            "the streams have their most watchers already "
                            "(--max-stream-subscribers)"}}}}));
  peer->Close();
  return std::make_unique<RefusedWebSocket>();
}

namespace {

// The stages of a stream's frames: the counter of each, and its rate (none for submitted and
// failed, which the 10 s window does not track). One table for both metric families.
struct StageField {
  const char* stage;
  int64_t video::IngestCounters::*count;
  double video::IngestRates::*fps;
};
constexpr StageField kStageFields[] = {
    {"received", &video::IngestCounters::received, &video::IngestRates::received},
    {"decoded", &video::IngestCounters::decoded, &video::IngestRates::decoded},
    {"dropped_catchup", &video::IngestCounters::dropped_catchup,
     &video::IngestRates::dropped_catchup},
    {"corrupt", &video::IngestCounters::corrupt, &video::IngestRates::corrupt},
    {"sampled_out", &video::IngestCounters::sampled_out, &video::IngestRates::sampled_out},
    {"submitted", &video::IngestCounters::submitted, nullptr},
    {"detected", &video::IngestCounters::detected, &video::IngestRates::detected},
    {"superseded", &video::IngestCounters::superseded, &video::IngestRates::superseded},
    {"expired", &video::IngestCounters::expired, &video::IngestRates::expired},
    {"failed", &video::IngestCounters::failed, nullptr}};

}  // namespace

std::string StreamMetricsText(const video::StreamRegistry& registry) {
  const std::vector<video::StreamInfo> streams = registry.List();
  if (streams.empty()) return "";
  std::string out;
  auto label = [](const video::StreamInfo& s) {
    return "stream=\"" + EscapeLabelValue(s.id) + "\"";
  };
  Family(out, "mogserve_stream_frames_total", "counter",
         "Frames of each video stream by stage (since the stream was added or restarted).");
  for (const video::StreamInfo& s : streams) {
    for (const StageField& f : kStageFields) {
      Sample(out, "mogserve_stream_frames_total", label(s) + ",stage=\"" + f.stage + "\"",
             static_cast<double>(s.counters.*f.count));
    }
  }
  Family(out, "mogserve_stream_fps", "gauge", "Frames per second of each stage, last 10 s.");
  for (const video::StreamInfo& s : streams) {
    for (const StageField& f : kStageFields) {
      if (f.fps == nullptr) continue;
      Sample(out, "mogserve_stream_fps", label(s) + ",stage=\"" + f.stage + "\"",
             s.status.fps.*f.fps);
    }
  }
  Family(out, "mogserve_stream_latency_seconds", "gauge",
         "Frame arrival to result of the frames detected in the last 10 s, by quantile.");
  for (const video::StreamInfo& s : streams) {
    const video::LatencyPercentiles& l = s.status.latency;
    Sample(out, "mogserve_stream_latency_seconds", label(s) + ",quantile=\"0.5\"", l.p50_ms / 1000);
    Sample(out, "mogserve_stream_latency_seconds", label(s) + ",quantile=\"0.95\"",
           l.p95_ms / 1000);
    Sample(out, "mogserve_stream_latency_seconds", label(s) + ",quantile=\"0.99\"",
           l.p99_ms / 1000);
  }
  Family(out, "mogserve_stream_lag_seconds", "gauge",
         "How far the latest frame's reading trails its presentation time.");
  for (const video::StreamInfo& s : streams) {
    Sample(out, "mogserve_stream_lag_seconds", label(s), s.status.lag_ms / 1000);
  }
  Family(out, "mogserve_stream_up", "gauge", "1 while the stream is running, else 0.");
  for (const video::StreamInfo& s : streams) {
    Sample(out, "mogserve_stream_up", label(s), s.state == video::StreamState::kRunning ? 1 : 0);
  }
  Family(out, "mogserve_stream_tracks", "gauge",
         "Streams with tracking: faces followed now (confirmed, including lost ones still "
         "awaited) and tracks started since the stream began.");
  for (const video::StreamInfo& s : streams) {
    if (!s.status.tracks) continue;
    Sample(out, "mogserve_stream_tracks", label(s) + ",state=\"confirmed\"",
           static_cast<double>(s.status.tracks->confirmed));
    Sample(out, "mogserve_stream_tracks", label(s) + ",state=\"started\"",
           static_cast<double>(s.status.tracks->started));
  }
  Family(out, "mogserve_stream_reconnects_total", "counter",
         "Connections re-established after the source was lost.");
  for (const video::StreamInfo& s : streams) {
    Sample(out, "mogserve_stream_reconnects_total", label(s),
           static_cast<double>(s.status.reconnects));
  }
  return out;
}

#else

bool HandleStreamWatch(video::StreamRegistry&, StreamEvents*, const http::HttpRequest&,
                       const http::Responder&) {
  return false;
}

std::unique_ptr<http::WebSocketHandler> AcceptStreamWebSocket(
    StreamEvents*, const http::HttpRequest&, std::shared_ptr<http::WebSocketPeer>) {
  return nullptr;
}

std::string StreamMetricsText(const video::StreamRegistry&) {
  return "";
}

http::HttpResponse HandleStreamRequest(video::StreamRegistry&, const http::HttpRequest& request) {
  return http::JsonError(404, "not_found",
                         "this mogserve was built without video support: no " + request.path);
}

#endif

}  // namespace mogserve::server
