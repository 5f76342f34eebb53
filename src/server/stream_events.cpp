#include "server/stream_events.h"

#ifdef MOGSERVE_WITH_VIDEO

#include <pthread.h>

#include <algorithm>

#include "image/draw.h"
#include "image/encode.h"
#include "json/result_json.h"
#include "server/subscriber_stop.h"
#include "video/stream_registry.h"

namespace mogserve::server {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kTick{250};
constexpr std::chrono::seconds kKeepAlive{15};
constexpr int kStableResults = 3;

std::string SseEvent(const char* event, const nlohmann::json& data) {
  return std::string("event: ") + event + "\ndata: " + ToJsonLine(data) + "\n\n";
}

// The WebSocket message of an event: {"event","data"}; `data_json` is serialised already.
std::string WebSocketEvent(const char* event, const std::string& data_json) {
  return std::string("{\"event\":\"") + event + "\",\"data\":" + data_json + "}";
}

// The WebSocket's messages go nowhere but to its subscriber: what the client sends is ignored.
class StreamWebSocket final : public http::WebSocketHandler {
 public:
  bool OnMessage(std::string, bool) override { return true; }
  void OnClose() override {}  // the events' tick lets the subscriber go (peer no longer open)
};

nlohmann::json StateJson(const video::StreamInfo& s) {
  nlohmann::json j = {{"stream", s.id}, {"state", video::StreamStateName(s.state)}};
  const std::optional<video::VideoError>& e = s.error ? s.error : s.status.last_error;
  if (e && s.state != video::StreamState::kRunning) {
    j["error"] = {{"code", video::VideoErrorName(e->code)}, {"message", e->message}};
  }
  return j;
}

}  // namespace

nlohmann::json FrameResultJson(const video::FrameResult& r) {
  nlohmann::json line = ResultToJson(r.result.result, false);  // width, height, faces
  const DetectTiming& t = r.result.result.timing;
  line["stream"] = r.stream;
  line["seq"] = r.seq;
  line["frame"] = r.frame.index;
  line["pts"] = Round(r.frame.pts_s, 6);
  line["received_at"] =
      Round(std::chrono::duration<double>(r.frame.received_at.time_since_epoch()).count(), 3);
  line["latency_ms"] = {
      {"total", Round(r.latency_ms, 2)},       {"decode", Round(r.frame.decode_ms, 2)},
      {"scale", Round(r.scale_ms, 2)},         {"queue", Round(t.queue_ms, 2)},
      {"inference", Round(t.inference_ms, 2)}, {"postprocess", Round(t.postprocess_ms, 2)}};
  line["batch_size"] = t.batch_size;
  line["skipped"] = r.skipped;
  line["detected"] = r.detected;
  return line;
}

bool StreamEvents::Subscriber::Watches(const std::string& id) const {
  return watch.ids.empty() || std::find(watch.ids.begin(), watch.ids.end(), id) != watch.ids.end();
}

bool StreamEvents::Subscriber::open() const {
  return stream ? stream->open() : peer->open();
}

void StreamEvents::Subscriber::End() {
  if (stream) {
    stream->End();
  } else {
    peer->Close();
  }
}

StreamEvents::StreamEvents(video::StreamRegistry& registry, int max_subscribers)
    : registry_(registry), max_subscribers_(max_subscribers) {
  registry_.SetFrameListener([this](const video::FrameResult& r) { OnFrame(r); });
  thread_ = std::thread([this] { Loop(); });
  pthread_setname_np(thread_.native_handle(), "stream-events");
}

StreamEvents::~StreamEvents() {
  Stop();
}

void StreamEvents::Stop() {
  auto ending = TakeSubscribersForStop(mu_, cv_, stop_, subscribers_);
  if (!ending) return;
  registry_.SetFrameListener(nullptr);
  for (Subscriber& s : *ending) s.End();
  if (thread_.joinable()) thread_.join();
}

bool StreamEvents::full() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(subscribers_.size()) >= max_subscribers_;
}

int StreamEvents::subscribers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(subscribers_.size());
}

bool StreamEvents::Subscribe(std::shared_ptr<http::ResponseStream> stream, Watch watch) {
  // An SSE watcher starts with the state of each stream it watches.
  std::string hello;
  if (watch.format == Format::kSse) {
    hello = "retry: 2000\n\n";
    for (const video::StreamInfo& s : registry_.List()) {
      if (watch.ids.empty() ||
          std::find(watch.ids.begin(), watch.ids.end(), s.id) != watch.ids.end()) {
        hello += SseEvent("state", StateJson(s));
      }
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (stop_ || static_cast<int>(subscribers_.size()) >= max_subscribers_) {
    stream->End();
    return false;
  }
  if (!hello.empty()) stream->Write(std::move(hello));
  Subscriber s;
  s.stream = std::move(stream);
  s.watch = std::move(watch);
  subscribers_.push_back(std::move(s));
  return true;
}

std::unique_ptr<http::WebSocketHandler> StreamEvents::SubscribeWebSocket(
    std::shared_ptr<http::WebSocketPeer> peer, std::vector<std::string> ids) {
  Subscriber s;
  s.peer = std::move(peer);
  s.watch.format = Format::kWebSocket;
  s.watch.ids = std::move(ids);
  // It starts with the state of each stream it watches, as an SSE watcher.
  std::vector<std::string> hello;
  for (const video::StreamInfo& info : registry_.List()) {
    if (s.Watches(info.id)) hello.push_back(WebSocketEvent("state", ToJsonLine(StateJson(info))));
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (stop_ || static_cast<int>(subscribers_.size()) >= max_subscribers_) return nullptr;
  for (std::string& message : hello) s.peer->Send(std::move(message));
  subscribers_.push_back(std::move(s));
  return std::make_unique<StreamWebSocket>();
}

void StreamEvents::Broadcast(const std::string& stream_id, Format format,
                             const std::string& piece) {
  for (Subscriber& s : subscribers_) {
    if (s.watch.format == format && s.Watches(stream_id)) s.stream->Write(piece);
  }
}

void StreamEvents::BroadcastEvent(const std::string& stream_id, const char* event,
                                  const nlohmann::json& data) {
  Broadcast(stream_id, Format::kSse, SseEvent(event, data));
  std::string message;
  for (Subscriber& s : subscribers_) {
    if (s.watch.format != Format::kWebSocket || !s.Watches(stream_id)) continue;
    if (message.empty()) message = WebSocketEvent(event, ToJsonLine(data));
    s.peer->Send(message);
  }
}

void StreamEvents::FlushHeld(Subscriber& s) {
  for (auto& [id, held] : s.held) {
    if (held.line.empty()) continue;
    if (s.peer->unsent() >= kWebSocketFrameWindow) return;
    s.peer->Send("{\"event\":\"frame\",\"dropped\":" + std::to_string(held.dropped) +
                 ",\"data\":" + held.line + "}");
    held.line.clear();
    held.dropped = 0;
  }
}

void StreamEvents::OnFrame(const video::FrameResult& r) {
  const auto now = Clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  if (stop_ || subscribers_.empty()) return;
  const nlohmann::json line = FrameResultJson(r);
  const std::string line_text = ToJsonLine(line);
  Broadcast(r.stream, Format::kSse, SseEvent("frame", line));
  Broadcast(r.stream, Format::kNdjson, line_text + "\n");
  for (Subscriber& s : subscribers_) {  // latest-only: a held frame event is superseded
    if (s.watch.format != Format::kWebSocket || !s.Watches(r.stream)) continue;
    HeldFrame& held = s.held[r.stream];
    if (!held.line.empty()) ++held.dropped;
    held.line = line_text;
    FlushHeld(s);
  }

  FaceTrend& trend = faces_[r.stream];
  const int faces = static_cast<int>(r.result.result.faces.size());
  trend.run = faces == trend.candidate ? trend.run + 1 : 1;
  trend.candidate = faces;
  if (trend.run == kStableResults && faces != trend.reported) {
    const char* event = trend.reported <= 0 && faces > 0 ? "faces_present"
                        : faces == 0                     ? "faces_absent"
                                                         : "faces_changed";
    trend.reported = faces;
    BroadcastEvent(r.stream, "faces", {{"stream", r.stream}, {"event", event}, {"faces", faces}});
  }

  // MJPEG: one picture per frame and box setting, encoded only for the watchers it is due to.
  if (!r.preview) return;
  std::string parts[2];  // without, with boxes
  for (Subscriber& s : subscribers_) {
    if (s.watch.format != Format::kMjpeg || !s.Watches(r.stream) || now < s.next_picture) continue;
    // Latest only: a watcher still taking its previous picture gets none until it has (a
    // picture is ~50 kB; queueing them for a slow reader would hold megabytes).
    if (s.stream->unsent_bytes() > 0) continue;
    s.next_picture =
        now + std::chrono::microseconds(static_cast<int64_t>(1e6 / std::max(0.1, s.watch.fps)));
    std::string& part = parts[s.watch.boxes ? 1 : 0];
    if (part.empty()) {
      StatusOr<std::vector<uint8_t>> jpeg = SnapshotJpeg(r, s.watch.boxes);
      if (!jpeg.ok()) continue;
      part = std::string("--") + kMjpegBoundary +
             "\r\nContent-Type: image/jpeg\r\nContent-Length: " + std::to_string(jpeg->size()) +
             "\r\n\r\n" + std::string(jpeg->begin(), jpeg->end()) + "\r\n";
    }
    s.stream->Write(part);
  }
}

void StreamEvents::Loop() {
  auto keep_alive = Clock::now() + kKeepAlive;
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, kTick, [&] { return stop_; });
    if (stop_) break;
    // Watchers that left; then the streams' states, read without the lock (List takes the
    // streams' locks, under which frames arrive here).
    subscribers_.erase(std::remove_if(subscribers_.begin(), subscribers_.end(),
                                      [](const Subscriber& s) { return !s.open(); }),
                       subscribers_.end());
    lock.unlock();
    const std::vector<video::StreamInfo> streams = registry_.List();
    lock.lock();
    std::map<std::string, std::string> now_states;
    for (const video::StreamInfo& s : streams) {
      const std::string state = video::StreamStateName(s.state);
      now_states[s.id] = state;
      auto it = states_.find(s.id);
      if (it != states_.end() && it->second != state) {
        BroadcastEvent(s.id, "state", StateJson(s));
      }
    }
    for (const auto& [id, state] : states_) {
      if (now_states.count(id) > 0) continue;
      BroadcastEvent(id, "removed", {{"stream", id}});
      faces_.erase(id);
      // A stream's own answers end with it.
      for (Subscriber& s : subscribers_) {
        if (s.watch.format == Format::kWebSocket) s.held.erase(id);
        if ((s.watch.format == Format::kNdjson || s.watch.format == Format::kMjpeg) &&
            s.Watches(id)) {
          s.stream->End();
        }
      }
    }
    states_ = std::move(now_states);
    for (Subscriber& s : subscribers_) {  // slow WebSockets' held frame events, if they have room
      if (s.watch.format == Format::kWebSocket) FlushHeld(s);
    }
    if (Clock::now() >= keep_alive) {
      keep_alive = Clock::now() + kKeepAlive;
      for (Subscriber& s : subscribers_) {
        if (s.watch.format == Format::kSse) s.stream->Write(": keep-alive\n\n");
      }
    }
  }
}

StatusOr<std::vector<uint8_t>> SnapshotJpeg(const video::FrameResult& r, bool boxes) {
  if (!r.preview) return FailedPrecondition("no picture kept for this frame");
  image::Image picture = *r.preview;
  if (boxes && r.frame.width > 0) {
    const float scale = static_cast<float>(picture.width) / static_cast<float>(r.frame.width);
    const int thickness = std::max(2, picture.width / 320);
    for (const Detection& d : r.result.result.faces) {
      image::DrawRect(picture, d.x1 * scale, d.y1 * scale, d.x2 * scale, d.y2 * scale,
                      image::Rgb{0, 255, 0}, thickness);
      for (const Point& p : d.landmarks) {
        image::DrawDot(picture, p.x * scale, p.y * scale, 1.5f * thickness, image::Rgb{255, 0, 0});
      }
    }
  }
  return image::EncodeJpeg(picture, 80);
}

}  // namespace mogserve::server

#else  // no video: nothing to watch

namespace mogserve::server {

StreamEvents::StreamEvents(video::StreamRegistry& registry, int max_subscribers)
    : registry_(registry), max_subscribers_(max_subscribers) {}
StreamEvents::~StreamEvents() = default;
bool StreamEvents::Subscribe(std::shared_ptr<http::ResponseStream> stream, Watch) {
  stream->End();
  return false;
}
std::unique_ptr<http::WebSocketHandler> StreamEvents::SubscribeWebSocket(
    std::shared_ptr<http::WebSocketPeer>, std::vector<std::string>) {
  return nullptr;
}
bool StreamEvents::full() const {
  return true;
}
int StreamEvents::subscribers() const {
  return 0;
}
void StreamEvents::Stop() {}

}  // namespace mogserve::server

#endif
