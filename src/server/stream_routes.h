// /v1/streams: the server's video streams (video::StreamRegistry) over HTTP.
//
//   GET    /v1/streams        {"streams":[stream...]}
//   POST   /v1/streams        {"id","url","detect_fps"?,"listen"?} (StreamConfigFromJson) → 201;
//                             422 invalid_request,
//                             400 unsupported_url, 409 stream_exists, 503 too_many_streams
//   GET    /v1/streams/{id}   stream; 404 stream_not_found
//   DELETE /v1/streams/{id}   204 (the stream is stopped, an open or read in progress
//                             interrupted); 404 stream_not_found
//   POST   /v1/streams/{id}/restart  200 stream (stopped and started again, fresh counters:
//                             how a `failed` stream is retried); 404 stream_not_found
// A stream: {"id","url" (no credentials),"detect_fps","listen","state" (connecting, running,
// reconnecting, ended, failed),"since","reconnects","error"?:{"code","message"} (failed: why),
// "last_error"?:{"code","message","at"},"codec","width","height","source_fps","lag_ms",
// "frames":{received, decoded, corrupt, sampled_out, submitted, detected, superseded, expired,
// failed} (totals),"fps":{received, decoded, corrupt, sampled_out, detected, superseded,
// expired} (last 10 s),"latency_ms":{"p50","p95","p99"} (last 10 s),"last":{"frame","faces",
// "latency_ms"}}. Times are Unix seconds.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "server/http/http_handler.h"
#include "server/http/http_message.h"

namespace mogserve::video {
class StreamRegistry;
struct StreamConfig;
}  // namespace mogserve::video

namespace mogserve::server {

// Answers a request to /v1/streams or /v1/streams/{id}. In a build without video support
// (MOGSERVE_WITH_VIDEO off) every answer is 404 saying so.
http::HttpResponse HandleStreamRequest(video::StreamRegistry& registry,
                                       const http::HttpRequest& request);

// A stream as POST /v1/streams and `serve --streams-file` take it: a JSON object {"id": string,
// "url": string, "detect_fps": number >= 0 (optional), "listen": boolean (optional)}, no other
// field. Fills *config; nullopt,
// or what is wrong, naming the field and what it allows. The id and URL themselves are checked
// by StreamRegistry::Add. Only in a build with video support.
std::optional<std::string> StreamConfigFromJson(const nlohmann::json& j,
                                                video::StreamConfig* config);

class StreamEvents;

// The watch routes (stream_events.h), answered through `respond`; false when `request` is not
// one of them (then HandleStreamRequest answers it):
//   GET /v1/streams/events?ids=a,b       SSE; 503 too_many_subscribers
//   GET /v1/streams/{id}/results         NDJSON lines; 404 stream_not_found; 503
//   GET /v1/streams/{id}/mjpeg?fps=5&boxes=1   multipart/x-mixed-replace; 0 < fps <= 30 else
//                                        422; 404; 503
//   GET /v1/streams/{id}/snapshot.jpg?boxes=1  the latest detected frame (<= 640 px) with its
//                                        own boxes; 404; 503 no_frame_yet (Retry-After: 1)
// `events` null: the streamed ones answer 404.
bool HandleStreamWatch(video::StreamRegistry& registry, StreamEvents* events,
                       const http::HttpRequest& request, const http::Responder& respond);

// GET /v1/streams/ws?ids=a,b (stream_events.h): subscribes `peer` to `events`; the socket's
// handler. When the watchers are at their cap (another took the last place since Screen looked)
// the socket gets {"event":"error","data":{"code":"too_many_subscribers",...}} and is closed.
// nullptr without video support or without `events` (the upgrade is refused).
std::unique_ptr<http::WebSocketHandler> AcceptStreamWebSocket(
    StreamEvents* events, const http::HttpRequest& head, std::shared_ptr<http::WebSocketPeer> peer);

// The streams' Prometheus families (text format), appended to /metrics, one series per stream
// with a `stream` label: mogserve_stream_frames_total{stage}, mogserve_stream_up (1 while
// running), mogserve_stream_reconnects_total, mogserve_stream_latency_seconds{quantile} (last
// 10 s), mogserve_stream_lag_seconds, mogserve_stream_fps{stage} (last 10 s). Rendered from
// the registry on each scrape, so a removed stream's series go with it. "" without video.
std::string StreamMetricsText(const video::StreamRegistry& registry);

}  // namespace mogserve::server
