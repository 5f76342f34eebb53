// Connection: one client socket, served as a sequence of HTTP/1.1 exchanges on its own strand:
//   wait for a request (idle deadline) → header (header deadline) → HttpHandler::Screen →
//   [100 Continue] → body (body deadline) → HttpHandler::Handle → response (write deadline)
//   → the next request (pipelined requests are answered in order) or close.
// No thread waits on a client: every step is an asynchronous operation with a deadline; a slow
// header or body gets 408, a refusal is sent before the body is read and the connection then
// closes gracefully (the client's unread bytes are drained, never parsed as a next request).
// An idle keep-alive connection holds its socket, a timer and this object: no read buffer.
// A WebSocket upgrade (HttpHandler::AcceptWebSocket) turns the connection into a WebSocket for
// the rest of its life: messages in order, a bounded send queue, pings on idle, handler
// backpressure (connection_websocket.cpp).
#pragma once

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/websocket/stream_fwd.hpp>
#include <chrono>
#include <deque>
#include <memory>
#include <optional>

#include "server/http/connection_registry.h"
#include "server/http/http_handler.h"
#include "server/http/request_parser.h"

namespace mogserve::server::http {

// What every connection of a listener shares. Outlives the connections.
struct ConnectionContext {
  HttpLimits limits;
  HttpHandler* handler = nullptr;
  BodyBudget* budget = nullptr;
  ConnectionRegistry* registry = nullptr;
  std::atomic<bool> stopping{false};  // the server drains: answer what arrived, then close
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  using Socket = boost::asio::ip::tcp::socket;
  using Clock = std::chrono::steady_clock;

  // `socket` must run on a strand of its own (make_strand) and be registered by the caller.
  Connection(Socket socket, ConnectionContext* context);
  ~Connection();

  // Starts serving; `refuse` = answer 503 "too many connections" at once and close.
  void Start(bool refuse = false);
  // From any thread, for a connection the registry displaced: close now if it still waits
  // without a complete request header, else after the answer to the request it is on.
  void Displace();
  // From any thread: the server stops; an idle connection closes, a busy one after its answer.
  void OnServerStop();

  ConnectionPhase phase() const { return phase_.load(std::memory_order_relaxed); }
  // Since when the connection is in its phase (steady clock, ns).
  int64_t phase_since_ns() const { return phase_since_ns_.load(std::memory_order_relaxed); }
  void set_registry_handle(ConnectionRegistry::Handle h) { registry_handle_ = h; }
  // True the first time: the registry chose this connection to displace.
  bool MarkDisplaced() { return !displaced_.exchange(true); }
  bool displaced() const { return displaced_.load(std::memory_order_relaxed); }

 private:
  friend struct ResponderState;
  friend class ConnectionWebSocketPeer;
  friend class ConnectionResponseStream;
  friend class Responder;
  enum class Deadline { kNone, kIdle, kHeader, kBody, kWrite, kLinger };

  void SetPhase(ConnectionPhase phase);
  void Arm(Deadline deadline, std::chrono::milliseconds after);
  void Disarm();
  void OnDeadline();

  void WaitForRequest();
  void ReadHeader();
  void OnHeader(boost::system::error_code ec);
  void ReadBody();
  void OnBody(boost::system::error_code ec);
  void Dispatch();
  void OnReadFailed(boost::system::error_code ec);
  void Send(HttpResponse response);
  void OnWritten(boost::system::error_code ec, bool close);
  void CloseGracefully();
  void Linger();
  void Close();

  // Streamed answers (connection_stream.cpp), on the strand.
  void StartStream(HttpResponse head);
  void QueueStreamPiece(std::string piece);
  void EndStream();
  void WriteStream();

  // WebSocket (connection_websocket.cpp), on the strand.
  static bool IsWebSocketUpgrade(const HttpRequest& head);
  void UpgradeToWebSocket();
  void ReadWebSocket();
  void OnWebSocketRead(boost::system::error_code ec);
  void QueueWebSocket(std::string message, bool binary);
  void WriteWebSocket();
  void CloseWebSocket();
  void OnWebSocketClosed();

  Socket socket_;
  boost::asio::steady_timer timer_;
  ConnectionContext* const context_;
  ConnectionRegistry::Handle registry_handle_{};
  std::atomic<ConnectionPhase> phase_{ConnectionPhase::kIdle};
  std::atomic<int64_t> phase_since_ns_{0};
  std::atomic<bool> displaced_{false};

  // On the strand only:
  std::string remote_addr_;
  boost::beast::flat_buffer buffer_;
  std::optional<RequestParser> parser_;
  Deadline armed_ = Deadline::kNone;
  uint64_t timer_generation_ = 0;
  Deadline expired_ = Deadline::kNone;  // the deadline that cancelled the pending operation
  int requests_ = 0;                    // requests answered on this connection
  bool keep_alive_ = true;
  bool closed_ = false;
  Clock::time_point linger_until_;  // closing gracefully: drain the client's bytes until then
  ExchangeRecord record_;           // the exchange in flight, for HttpHandler::OnExchange
  Clock::time_point started_;

  int request_version_ = 11;  // of the request being answered

  // Streamed answer, on the strand.
  std::deque<std::string> stream_queue_;
  bool stream_chunked_ = false;
  bool stream_writing_ = false;
  bool stream_ending_ = false;
  bool stream_close_ = false;             // close after it
  std::atomic<bool> stream_open_{false};  // read by the stream's holder on other threads
  // Bytes in stream_queue_: written on the strand, read by the stream's holder.
  std::atomic<int64_t> stream_queued_bytes_{0};

  // WebSocket state, on the strand; ws_ is declared after socket_, so it goes first.
  struct QueuedMessage {
    std::string text;
    bool binary = false;
  };
  std::unique_ptr<boost::beast::websocket::stream<Socket&>> ws_;
  std::unique_ptr<WebSocketHandler> ws_handler_;
  boost::beast::flat_buffer ws_buffer_;
  std::deque<QueuedMessage> ws_queue_;
  bool ws_writing_ = false;
  bool ws_paused_ = false;
  bool ws_close_requested_ = false;
  bool ws_accepted_ = false;             // the handshake is done: messages may be written
  std::atomic<bool> ws_closed_{false};   // read by peers on other threads
  std::atomic<size_t> ws_unsent_{0};     // messages sent by the peer, not yet written
  std::shared_ptr<Connection> ws_hold_;  // self, while paused (no read pending)
};

// The shared state behind a Responder: answers once, on the connection's strand; keeps the
// event loop running while the answer is pending; a 500 if it is never given.
struct ResponderState {
  explicit ResponderState(std::shared_ptr<Connection> c);
  ~ResponderState();
  void Answer(HttpResponse response);

  // Declared first, released last: the connection (whose destructor uses the listener's
  // registry) goes before the event loop may finish and the listener be destroyed.
  boost::asio::any_io_executor work;
  std::shared_ptr<Connection> connection;
  std::atomic<bool> answered{false};
};

}  // namespace mogserve::server::http
