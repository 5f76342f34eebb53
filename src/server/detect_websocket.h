// Detection over a WebSocket (GET /v1/detect/ws): for clients that send a stream of pictures —
// a webcam page, a frame grabber — on one connection instead of one request each.
//
//   client → server  binary message: one encoded image (JPEG, PNG, WebP), with the options of
//                    the upgrade URL's query; text message: a JSON body as POST /v1/detect takes
//                    ({"image": base64, ...options} or {"images": [...]}), its options over the
//                    URL's
//   server → client  one text message per image: the /v1/detect result (or its error, with
//                    "status") plus "seq" (the message's number on this socket, from 0) and, for
//                    several images in one message, "index"
//
// ?latest_only=true makes the socket a live stream: each picture supersedes the ones of this
// socket still queued (they answer 409 "superseded"), priority defaults to `stream`. At most
// kMaxInFlight images are in the pipeline per socket; beyond that the socket is not read until
// answers go out (TCP backpressure on the sender).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "mogserve/result.h"
#include "pipeline/pipeline.h"
#include "server/detect_request.h"
#include "server/http/http_handler.h"

namespace mogserve::server {

struct DetectWebSocketOptions {
  std::multimap<std::string, std::string> query;  // the URL's detect options (validated)
  bool latest_only = false;
  std::string client;  // fairness key
  RequestLimits limits;
};

class DetectWebSocket final : public http::WebSocketHandler {
 public:
  static constexpr int kMaxInFlight = 4;

  // `pipeline` must outlive every request this socket submits (the server's lifetime).
  DetectWebSocket(pipeline::Pipeline* pipeline, std::shared_ptr<http::WebSocketPeer> peer,
                  DetectWebSocketOptions options);
  ~DetectWebSocket() override;

  bool OnMessage(std::string message, bool binary) override;
  void OnClose() override;

 private:
  struct State;
  pipeline::Pipeline* const pipeline_;
  std::shared_ptr<State> state_;  // shared with the pipeline's callbacks
  int64_t next_seq_ = 0;
};

}  // namespace mogserve::server
