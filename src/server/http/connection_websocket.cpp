// Connection's WebSocket half (see connection.h).
#include <boost/asio/post.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/websocket/stream.hpp>

#include "server/http/connection.h"

namespace mogserve::server::http {

namespace net = boost::asio;
namespace bhttp = boost::beast::http;
namespace websocket = boost::beast::websocket;
using boost::system::error_code;

// The application's handle on a WebSocket connection: every call posts to the strand. Holds the
// connection weakly, so a handler keeping its peer does not keep a closed connection alive.
class ConnectionWebSocketPeer final : public WebSocketPeer {
 public:
  explicit ConnectionWebSocketPeer(const std::shared_ptr<Connection>& c)
      : connection_(c), executor_(c->socket_.get_executor()) {}

  bool Send(std::string message, bool binary) override {
    auto c = connection_.lock();
    if (!c || c->ws_closed_.load()) return false;
    c->ws_unsent_.fetch_add(1);
    net::post(executor_, [c, m = std::move(message), binary]() mutable {
      c->QueueWebSocket(std::move(m), binary);
    });
    return true;
  }
  bool open() const override {
    auto c = connection_.lock();
    return c && !c->ws_closed_.load();
  }
  size_t unsent() const override {
    auto c = connection_.lock();
    return c ? c->ws_unsent_.load() : 0;
  }
  void Resume() override {
    if (auto c = connection_.lock()) {
      net::post(executor_, [c] {
        if (!c->ws_paused_ || c->ws_closed_.load()) return;
        c->ws_paused_ = false;
        c->ReadWebSocket();
        c->ws_hold_.reset();  // the pending read holds the connection now
      });
    }
  }
  void Close() override {
    if (auto c = connection_.lock()) net::post(executor_, [c] { c->CloseWebSocket(); });
  }

 private:
  std::weak_ptr<Connection> connection_;
  net::any_io_executor executor_;
};

bool Connection::IsWebSocketUpgrade(const HttpRequest& head) {
  if (head.method != "GET" || !EqualsIgnoreCase(head.Header("Upgrade"), "websocket")) {
    return false;
  }
  const std::string_view connection = head.Header("Connection");
  for (size_t at = 0; at < connection.size();) {
    size_t end = connection.find(',', at);
    if (end == std::string_view::npos) end = connection.size();
    std::string_view token = connection.substr(at, end - at);
    while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
    while (!token.empty() && token.back() == ' ') token.remove_suffix(1);
    if (EqualsIgnoreCase(token, "upgrade")) return true;
    at = end + 1;
  }
  return false;
}

void Connection::UpgradeToWebSocket() {
  HttpRequest& head = parser_->request();
  ws_handler_ = context_->handler->AcceptWebSocket(
      head, std::make_shared<ConnectionWebSocketPeer>(shared_from_this()));
  if (!ws_handler_) {
    return Send(JsonError(400, "websocket_not_supported",
                          head.path + " does not take a WebSocket upgrade"));
  }
  bhttp::request<bhttp::empty_body> request(bhttp::string_to_verb(head.method), head.target,
                                            head.version);
  for (const auto& [name, value] : head.headers) request.insert(name, value);
  parser_.reset();
  SetPhase(ConnectionPhase::kHandling);  // a live session: never displaced
  ws_ = std::make_unique<websocket::stream<Socket&>>(socket_);
  websocket::stream_base::timeout timeout;
  timeout.handshake_timeout = context_->limits.write_timeout;
  timeout.idle_timeout = context_->limits.idle_timeout;  // pinged at half of it
  timeout.keep_alive_pings = true;
  ws_->set_option(timeout);
  ws_->read_message_max(static_cast<std::uint64_t>(context_->limits.max_body_bytes));
  ws_->async_accept(request, [self = shared_from_this()](error_code ec) {
    HttpResponse switching;
    switching.status = 101;
    self->record_.status = 101;
    self->context_->handler->BeforeSend(self->record_, switching);
    self->record_.duration = Clock::now() - self->started_;
    self->record_.written = !ec;
    self->context_->handler->OnExchange(self->record_);
    if (ec) return self->OnWebSocketClosed();
    self->ws_accepted_ = true;
    // Messages the handler sent during the handshake (a subscription's first events), or a
    // close it asked for meanwhile.
    if (self->ws_close_requested_ && self->ws_queue_.empty()) return self->CloseWebSocket();
    if (!self->ws_queue_.empty()) self->WriteWebSocket();  // closes after, if asked to
    self->ReadWebSocket();
  });
}

void Connection::ReadWebSocket() {
  ws_->async_read(ws_buffer_, [self = shared_from_this()](error_code ec, size_t) {
    self->OnWebSocketRead(ec);
  });
}

void Connection::OnWebSocketRead(error_code ec) {
  if (ec || ws_closed_.load()) return OnWebSocketClosed();
  std::string message = boost::beast::buffers_to_string(ws_buffer_.data());
  ws_buffer_.consume(ws_buffer_.size());
  if (ws_handler_->OnMessage(std::move(message), ws_->got_binary())) {
    ReadWebSocket();
  } else {
    // No read pending while paused: the connection holds itself until Resume or close.
    ws_paused_ = true;
    ws_hold_ = shared_from_this();
  }
}

void Connection::QueueWebSocket(std::string message, bool binary) {
  if (ws_closed_.load() || ws_close_requested_) {
    ws_unsent_.fetch_sub(1);
    return;
  }
  ws_queue_.push_back({std::move(message), binary});
  if (ws_queue_.size() > WebSocketPeer::kMaxQueued) return OnWebSocketClosed();  // not reading
  if (!ws_writing_ && ws_accepted_) WriteWebSocket();
}

void Connection::WriteWebSocket() {
  ws_writing_ = true;
  const QueuedMessage& m = ws_queue_.front();
  ws_->binary(m.binary);
  ws_->async_write(net::buffer(m.text), [self = shared_from_this()](error_code ec, size_t) {
    self->ws_writing_ = false;
    if (ec) return self->OnWebSocketClosed();
    self->ws_queue_.pop_front();
    self->ws_unsent_.fetch_sub(1);
    if (!self->ws_queue_.empty()) return self->WriteWebSocket();
    if (self->ws_close_requested_) self->CloseWebSocket();
  });
}

void Connection::CloseWebSocket() {
  if (!ws_ || ws_closed_.load()) return;
  ws_close_requested_ = true;
  if (ws_writing_ || !ws_accepted_) return;  // closes when the queue is out / the handshake done
  ws_closed_.store(true);
  ws_->async_close(websocket::close_code::normal,
                   [self = shared_from_this()](error_code) { self->OnWebSocketClosed(); });
}

void Connection::OnWebSocketClosed() {
  ws_closed_.store(true);
  if (ws_handler_) {
    ws_handler_->OnClose();
    ws_handler_.reset();
  }
  Close();
  ws_hold_.reset();  // last: it may hold this object
}

}  // namespace mogserve::server::http
