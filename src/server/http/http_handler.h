// The contract between the HTTP layer (connections, listener) and the application on top of it
// (server/http_server.h): screen a request from its header, handle it whole, and be told of
// every response written. Boost-free.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "server/http/http_message.h"

namespace mogserve::server::http {

class Connection;
struct ResponderState;

// The one answer to one request. Copyable (copies share the answer); callable from any thread;
// the first call sends, later calls are ignored. If every copy is dropped unanswered, the client
// gets a 500 (a request is never left hanging). Keeps the server's I/O running until answered.
// An answer sent in pieces, as they come (chunked transfer coding): Server-Sent Events, JSON
// lines, MJPEG. Thread-safe; pieces go out in order.
class ResponseStream {
 public:
  virtual ~ResponseStream() = default;
  // Queues a piece. False once the client is gone, or when it leaves more than kMaxQueued
  // pieces or kMaxQueuedBytes unsent (the connection is then closed: a client that does not
  // read is dropped).
  virtual bool Write(std::string piece) = 0;
  // Ends the answer; the connection then reads its next request.
  virtual void End() = 0;
  // False once the client is gone or the stream ended.
  virtual bool open() const = 0;

  // Bytes queued and not yet written to the socket (pieces still being handed over not
  // counted): a writer of large pieces sends only when this is 0 (latest only, as MJPEG does).
  virtual int64_t unsent_bytes() const = 0;

  static constexpr size_t kMaxQueued = 256;
  static constexpr int64_t kMaxQueuedBytes = 4 << 20;
};

class Responder {
 public:
  explicit Responder(std::shared_ptr<ResponderState> state) : state_(std::move(state)) {}
  void operator()(HttpResponse response) const;
  // Answers with a stream instead: `head` gives the status, content type and headers (its body
  // is ignored). Counts as the answer; the connection stays in the exchange until End().
  std::shared_ptr<ResponseStream> Stream(HttpResponse head) const;

 private:
  std::shared_ptr<ResponderState> state_;
};

// What the access log and the metrics learn of a finished exchange.
struct ExchangeRecord {
  std::string method;
  std::string path;
  std::string remote_addr;
  int status = 0;
  size_t body_bytes = 0;
  std::chrono::steady_clock::duration duration{};  // first request byte to response written
  bool written = true;                             // false: the client was gone first
  std::string request_id = {};  // the request's X-Request-Id (printable, <= 128 bytes), else ""
  int route = -1;               // HttpRequest::route after Screen (-1: refused before it)
};

// The server side of one WebSocket, as the application sees it. Thread-safe; every call is
// carried out on the connection's strand.
class WebSocketPeer {
 public:
  virtual ~WebSocketPeer() = default;
  // Queues a message; messages go out in order. False when the socket is closed, or when the
  // client leaves more than kMaxQueued unsent (then the socket is closed: it does not read).
  virtual bool Send(std::string message, bool binary = false) = 0;
  // Reads the next message: after OnMessage returned false (the handler's backpressure).
  virtual void Resume() = 0;
  // Closes the WebSocket (close frame, then the socket).
  virtual void Close() = 0;
  // False once the socket is closed.
  virtual bool open() const = 0;
  // Messages sent and not yet written to the socket (the one being written included): how far
  // behind the client reads. Sends made before the handshake completed wait for it.
  virtual size_t unsent() const = 0;

  static constexpr size_t kMaxQueued = 64;
};

// The messages of one WebSocket, called on the connection's strand, one at a time.
class WebSocketHandler {
 public:
  virtual ~WebSocketHandler() = default;
  // One whole message. True: read the next one now; false: wait for WebSocketPeer::Resume.
  virtual bool OnMessage(std::string message, bool binary) = 0;
  // The socket closed (either side); no OnMessage follows.
  virtual void OnClose() = 0;
};

class HttpHandler {
 public:
  virtual ~HttpHandler() = default;

  // Called when a request's header is complete, before its body is read (so a refusal costs
  // no upload). A response refuses the request now; when a body was announced the connection
  // closes after it. nullopt: read the body, then Handle. Runs on an I/O thread: must not block.
  // May set head.route, so that Handle need not look the route up again.
  virtual std::optional<HttpResponse> Screen(HttpRequest& head) = 0;

  // The complete request. Runs on an I/O thread: must not block; answer through `respond` (now
  // or later, from any thread).
  virtual void Handle(HttpRequest request, Responder respond) = 0;

  // A WebSocket upgrade request that Screen let through: the handler of its messages, which
  // answers on `peer`; nullptr refuses the upgrade with 400 (the route takes no WebSocket).
  // Messages are limited to HttpLimits::max_body_bytes.
  virtual std::unique_ptr<WebSocketHandler> AcceptWebSocket(const HttpRequest& head,
                                                            std::shared_ptr<WebSocketPeer> peer) {
    return nullptr;
  }

  // Just before each response is written (including the layer's own refusals: 408, 413, 431,
  // ...), with record.status set: count it, add headers. Runs on an I/O thread.
  virtual void BeforeSend(const ExchangeRecord& record, HttpResponse& response) = 0;
  // After each response was written, or found no client to take it (record.written).
  virtual void OnExchange(const ExchangeRecord& record) = 0;
};

}  // namespace mogserve::server::http
