// StreamEvents: the results of the server's video streams pushed to watchers over plain HTTP/1.1
// (specs/video_streams.md §3), on streamed (chunked) answers — no thread per watcher:
//   GET /v1/streams/events?ids=a,b   Server-Sent Events, many streams on one connection:
//                                    `frame` (a result line), `state` (a stream's state
//                                    changed: {"stream","state","error"?}), `faces`
//                                    ({"stream","event": faces_present | faces_absent |
//                                    faces_changed,"faces"}: a face count held for 3 results),
//                                    `removed` ({"stream"}); a comment every 15 s otherwise.
//   GET /v1/streams/{id}/results     the same result lines, application/x-ndjson.
//   GET /v1/streams/{id}/mjpeg?fps=5&boxes=1   multipart/x-mixed-replace JPEGs of the detected
//                                    frames (their preview), encoded only while watched.
//   GET /v1/streams/ws?ids=a,b       a WebSocket carrying the SSE events, one text message each:
//                                    {"event","data"} (data as the SSE event's), a frame event
//                                    also "dropped": the stream's frame events this socket
//                                    missed since its previous one.
// Frames come from StreamRegistry's frame listener (pipeline threads); states, removals and
// keep-alives from one thread ticking every 250 ms. A watcher that does not read is never
// waited for: its answer queues at most http::ResponseStream::kMaxQueued pieces or
// kMaxQueuedBytes, then the connection is closed; an MJPEG watcher gets a new picture only once
// it has taken the previous one (latest only), so it holds at most one. A WebSocket that reads
// slowly gets frame events latest-only: while kWebSocketFrameWindow messages are unsent, each
// stream's newest frame event waits in one slot (a newer one replaces it and counts as dropped)
// and goes out on a later frame or tick; its other events are all sent, up to
// http::WebSocketPeer::kMaxQueued unsent, then the socket is closed.
// Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "mogserve/status.h"
#include "server/http/http_handler.h"

namespace mogserve::video {
class StreamRegistry;
struct FrameResult;
}  // namespace mogserve::video

namespace mogserve::server {

// A detected frame as a JSON line (detect-video's lines, the SSE `frame` event's data).
nlohmann::json FrameResultJson(const video::FrameResult& r);
// The frame's preview as a JPEG, its faces drawn when `boxes`; FailedPrecondition when the
// frame kept no preview.
StatusOr<std::vector<uint8_t>> SnapshotJpeg(const video::FrameResult& r, bool boxes);

class StreamEvents {
 public:
  enum class Format { kSse, kNdjson, kMjpeg, kWebSocket };
  struct Watch {
    Format format = Format::kSse;
    std::vector<std::string> ids;  // empty: every stream (SSE only)
    double fps = 5;                // MJPEG: at most this many pictures a second
    bool boxes = true;             // MJPEG: faces drawn
  };

  // Listens to `registry`'s frames (it must outlive this object; call Stop before destroying
  // it). `max_subscribers`: watchers at once over every route.
  StreamEvents(video::StreamRegistry& registry, int max_subscribers);
  ~StreamEvents();  // Stop()

  // Takes `stream` (answered 200 already with the content type of `watch.format`). False when
  // max_subscribers watch already or after Stop (the stream is ended then).
  bool Subscribe(std::shared_ptr<http::ResponseStream> stream, Watch watch);
  // Takes a WebSocket (GET /v1/streams/ws; its handshake may still be under way) watching
  // `ids` (empty: every stream): its handler, which ignores the client's messages; nullptr
  // when max_subscribers watch already or after Stop. The socket counts as a watcher until it
  // closes.
  std::unique_ptr<http::WebSocketHandler> SubscribeWebSocket(
      std::shared_ptr<http::WebSocketPeer> peer, std::vector<std::string> ids);
  bool full() const;
  int subscribers() const;
  // Ends every watcher's answer and the thread; frames are ignored from then on. Idempotent.
  void Stop();

  static constexpr const char* kMjpegBoundary = "mogserveframe";
  static constexpr size_t kWebSocketFrameWindow = 4;

 private:
  // A frame event waiting for a slow WebSocket: the newest of its stream, and how many older
  // ones it replaced.
  struct HeldFrame {
    std::string line;  // "" when none waits
    int64_t dropped = 0;
  };
  struct Subscriber {
    std::shared_ptr<http::ResponseStream> stream;  // or:
    std::shared_ptr<http::WebSocketPeer> peer;     // kWebSocket
    Watch watch;
    std::chrono::steady_clock::time_point next_picture{};  // MJPEG
    std::map<std::string, HeldFrame> held;                 // kWebSocket, by stream
    bool Watches(const std::string& id) const;
    bool open() const;
    void End();
  };
  // Faces seen by a stream's recent results: an event when a new count holds for 3 results.
  struct FaceTrend {
    int reported = -1;  // -1: nothing reported yet
    int candidate = -1;
    int run = 0;
  };

  void OnFrame(const video::FrameResult& r);
  void Loop();
  void Broadcast(const std::string& stream_id, Format format, const std::string& piece);
  // An SSE event to the SSE watchers and the WebSockets of `stream_id`.
  void BroadcastEvent(const std::string& stream_id, const char* event, const nlohmann::json& data);
  // Sends `s`'s held frame events if the socket has room (kWebSocketFrameWindow). Under mu_.
  static void FlushHeld(Subscriber& s);

  video::StreamRegistry& registry_;
  const int max_subscribers_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Subscriber> subscribers_;        // guarded by mu_
  std::map<std::string, FaceTrend> faces_;     // guarded by mu_
  std::map<std::string, std::string> states_;  // the state each stream last reported; loop only
  bool stop_ = false;                          // guarded by mu_
  std::thread thread_;
};

}  // namespace mogserve::server
