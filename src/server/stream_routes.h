// /v1/streams: the server's video streams (video::StreamRegistry) over HTTP.
//
//   GET    /v1/streams        {"streams":[stream...]}
//   POST   /v1/streams        {"id","url","detect_fps"?} → 201 stream; 422 invalid_request,
//                             400 unsupported_url, 409 stream_exists, 503 too_many_streams
//   GET    /v1/streams/{id}   stream; 404 stream_not_found
//   DELETE /v1/streams/{id}   204 (the stream is stopped, an open or read in progress
//                             interrupted); 404 stream_not_found
// A stream: {"id","url" (no credentials),"state","error"?:{"code","message"},"frames":{decoded,
// corrupt, sampled_out, submitted, detected, superseded, expired, failed},"last":{"frame",
// "faces","latency_ms"}}.
#pragma once

#include "server/http/http_message.h"

namespace mogserve::video {
class StreamRegistry;
}

namespace mogserve::server {

// Answers a request to /v1/streams or /v1/streams/{id}. In a build without video support
// (MOGSERVE_WITH_VIDEO off) every answer is 404 saying so.
http::HttpResponse HandleStreamRequest(video::StreamRegistry& registry,
                                       const http::HttpRequest& request);

}  // namespace mogserve::server
