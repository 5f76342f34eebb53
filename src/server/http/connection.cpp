#include "server/http/connection.h"

#include <algorithm>
#include <array>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/websocket/stream.hpp>

namespace mogserve::server::http {
namespace {

namespace net = boost::asio;
namespace bhttp = boost::beast::http;
using boost::system::error_code;

// Closing gracefully, the client's unread bytes are drained for up to kLingerTime, while they
// keep coming at least every kLingerIdle (nginx's lingering_time / lingering_timeout).
constexpr std::chrono::milliseconds kLingerTime{10'000};
constexpr std::chrono::milliseconds kLingerIdle{2'000};
constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Whether a Connection header's comma-separated tokens include `token`.
bool HasToken(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    const size_t comma = value.find(',');
    std::string_view t = value.substr(0, comma);
    while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
    while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.remove_suffix(1);
    if (EqualsIgnoreCase(t, token)) return true;
    value = comma == std::string_view::npos ? std::string_view() : value.substr(comma + 1);
  }
  return false;
}

bool WantsKeepAlive(const HttpRequest& r) {
  const std::string_view connection = r.Header("Connection");
  if (r.version >= 11) return !HasToken(connection, "close");
  return HasToken(connection, "keep-alive");
}

std::string Seconds(std::chrono::milliseconds ms) {
  const double s = static_cast<double>(ms.count()) / 1000.0;
  char text[32];
  std::snprintf(text, sizeof text, "%g s", s);
  return text;
}

}  // namespace

ResponderState::ResponderState(std::shared_ptr<Connection> c)
    : work(net::prefer(c->socket_.get_executor(), net::execution::outstanding_work.tracked)),
      connection(std::move(c)) {}

ResponderState::~ResponderState() {
  if (!answered.load()) {
    Answer(JsonError(500, "internal", "the server produced no answer for this request"));
  }
}

void ResponderState::Answer(HttpResponse response) {
  if (answered.exchange(true)) return;
  net::post(connection->socket_.get_executor(),
            [c = connection, r = std::move(response)]() mutable { c->Send(std::move(r)); });
}

void Responder::operator()(HttpResponse response) const {
  state_->Answer(std::move(response));
}

Connection::Connection(Socket socket, ConnectionContext* context)
    : socket_(std::move(socket)), timer_(socket_.get_executor()), context_(context) {
  error_code ec;
  const auto endpoint = socket_.remote_endpoint(ec);
  if (!ec) remote_addr_ = endpoint.address().to_string();
  // Bounds what one read can buffer: the header limit, or one 64 KiB slice of a body.
  buffer_.max_size(
      static_cast<size_t>(std::max<int64_t>(context_->limits.max_header_bytes, 64 << 10)) +
      (8 << 10));
  SetPhase(ConnectionPhase::kIdle);
}

Connection::~Connection() {
  context_->registry->Remove(registry_handle_);
}

void Connection::Start(bool refuse) {
  if (!refuse) return WaitForRequest();
  started_ = Clock::now();
  record_ = {"-", "-", remote_addr_};
  keep_alive_ = false;
  HttpResponse r =
      JsonError(503, "too_many_connections",
                "every one of the server's " + std::to_string(context_->limits.max_connections) +
                    " connections (max_connections) is busy with a request; "
                    "retry shortly");
  r.SetHeader("Retry-After", "1");
  r.close = true;
  Send(std::move(r));
}

void Connection::Displace() {
  net::post(socket_.get_executor(), [self = shared_from_this()] {
    const ConnectionPhase p = self->phase();
    if (p == ConnectionPhase::kIdle || p == ConnectionPhase::kHeader) return self->Close();
    self->keep_alive_ = false;  // a request came in meanwhile: close after its answer
  });
}

void Connection::OnServerStop() {
  net::post(socket_.get_executor(), [self = shared_from_this()] {
    // A keep-alive connection between requests closes; one that is mid-request, or was
    // accepted and has not sent its first request yet, is answered (then closed).
    if (self->phase() == ConnectionPhase::kIdle && self->requests_ > 0 &&
        self->buffer_.size() == 0) {
      self->Close();
    }
    if (self->ws_) self->CloseWebSocket();
  });
}

void Connection::SetPhase(ConnectionPhase phase) {
  phase_.store(phase, std::memory_order_relaxed);
  phase_since_ns_.store(NowNs(), std::memory_order_relaxed);
}

void Connection::Arm(Deadline deadline, std::chrono::milliseconds after) {
  armed_ = deadline;
  expired_ = Deadline::kNone;
  const uint64_t generation = ++timer_generation_;
  timer_.expires_after(after);
  timer_.async_wait([self = shared_from_this(), generation](error_code ec) {
    if (!ec && generation == self->timer_generation_) self->OnDeadline();
  });
}

void Connection::Disarm() {
  armed_ = Deadline::kNone;
  ++timer_generation_;
  timer_.cancel();
}

void Connection::OnDeadline() {
  expired_ = armed_;
  armed_ = Deadline::kNone;
  if (expired_ == Deadline::kHeader || expired_ == Deadline::kBody) {
    error_code ignored;
    socket_.cancel(ignored);  // the read ends with operation_aborted; OnReadFailed sends 408
  } else {
    Close();
  }
}

void Connection::WaitForRequest() {
  SetPhase(ConnectionPhase::kIdle);
  if (buffer_.size() > 0) return ReadHeader();  // a pipelined request is already here
  if (context_->stopping.load() && requests_ > 0) return Close();
  buffer_.shrink_to_fit();  // an idle connection holds no read buffer
  // A new connection has header_timeout to send its request; a kept-alive one idle_timeout.
  if (requests_ == 0) {
    Arm(Deadline::kHeader, context_->limits.header_timeout);
  } else {
    Arm(Deadline::kIdle, context_->limits.idle_timeout);
  }
  socket_.async_wait(Socket::wait_read, [self = shared_from_this()](error_code ec) {
    if (self->closed_) return;
    if (ec) {
      self->Close();  // the deadline passed with nothing sent, or the socket failed
      return;
    }
    self->Disarm();
    self->ReadHeader();
  });
}

void Connection::ReadHeader() {
  SetPhase(ConnectionPhase::kHeader);
  started_ = Clock::now();
  record_ = {"-", "-", remote_addr_};  // until the request line is in
  parser_.emplace(context_->limits, context_->budget);
  Arm(Deadline::kHeader, context_->limits.header_timeout);
  bhttp::async_read_header(
      socket_, buffer_, *parser_,
      [self = shared_from_this()](error_code ec, size_t) { self->OnHeader(ec); });
}

void Connection::OnHeader(error_code ec) {
  if (closed_) return;
  Disarm();
  if (ec) return OnReadFailed(ec);
  HttpRequest& head = parser_->request();
  head.remote_addr = remote_addr_;
  head.started = started_;
  record_ = {head.method, head.path, remote_addr_};
  // A balancer's or client's trace id, echoed and logged; anything else is not repeated back.
  const std::string_view id = head.Header("X-Request-Id");
  if (id.size() <= 128 && std::all_of(id.begin(), id.end(), [](char c) {
        return c > ' ' && c < 127;
      })) {
    record_.request_id = std::string(id);
  }
  keep_alive_ = WantsKeepAlive(head);
  request_version_ = head.version;
  std::optional<HttpResponse> refusal = context_->handler->Screen(head);
  record_.route = head.route;
  if (refusal) {
    if (parser_->has_body()) refusal->close = true;  // its body stays unread
    return Send(std::move(*refusal));
  }
  if (IsWebSocketUpgrade(head) && !parser_->has_body()) return UpgradeToWebSocket();
  if (!parser_->has_body()) return Dispatch();
  if (!parser_->ReserveBody()) return Send(parser_->Refusal({}, {}));
  if (!parser_->expects_continue()) return ReadBody();
  Arm(Deadline::kBody, context_->limits.write_timeout);
  net::async_write(socket_, net::buffer(kContinue.data(), kContinue.size()),
                   [self = shared_from_this()](error_code ec, size_t) {
                     if (self->closed_) return;
                     self->Disarm();
                     if (ec) return self->Close();
                     self->ReadBody();
                   });
}

void Connection::ReadBody() {
  SetPhase(ConnectionPhase::kBody);
  Arm(Deadline::kBody, context_->limits.body_timeout);
  bhttp::async_read(socket_, buffer_, *parser_,
                    [self = shared_from_this()](error_code ec, size_t) { self->OnBody(ec); });
}

void Connection::OnBody(error_code ec) {
  if (closed_) return;
  Disarm();
  if (ec) return OnReadFailed(ec);
  Dispatch();
}

void Connection::OnReadFailed(error_code ec) {
  keep_alive_ = false;
  if (expired_ == Deadline::kHeader || expired_ == Deadline::kBody) {
    const bool header = expired_ == Deadline::kHeader;
    HttpResponse r =
        JsonError(408, "request_timeout",
                  header ? "the request header did not arrive within " +
                               Seconds(context_->limits.header_timeout) + " (header_timeout)"
                         : "the request body did not arrive within " +
                               Seconds(context_->limits.body_timeout) + " (body_timeout)");
    r.close = true;
    return Send(std::move(r));
  }
  // The client went away (before, or in the middle of, a request): nobody to answer.
  if (ec == bhttp::error::end_of_stream || ec == bhttp::error::partial_message ||
      ec == net::error::eof || ec == net::error::connection_reset ||
      ec == net::error::operation_aborted || ec == net::error::broken_pipe) {
    return Close();
  }
  if (parser_ && !parser_->request().method.empty()) {  // the request line was read
    record_.method = parser_->request().method;
    record_.path = parser_->request().path;
  }
  const auto data = buffer_.data();
  const std::string_view seen(static_cast<const char*>(data.data()), data.size());
  Send(parser_ ? parser_->Refusal(ec, seen) : JsonError(400, "bad_request", ec.message()));
}

void Connection::Dispatch() {
  SetPhase(ConnectionPhase::kHandling);
  HttpRequest request = std::move(parser_->request());
  parser_.reset();
  auto state = std::make_shared<ResponderState>(shared_from_this());
  context_->handler->Handle(std::move(request), Responder(std::move(state)));
}

void Connection::Send(HttpResponse response) {
  if (closed_) {  // the client left before its answer was ready
    record_.status = response.status;
    record_.written = false;
    context_->handler->OnExchange(record_);
    return;
  }
  SetPhase(ConnectionPhase::kWriting);
  parser_.reset();  // a refused request's part-read body gives its budget back now
  ++requests_;
  record_.status = response.status;
  context_->handler->BeforeSend(record_, response);
  const bool close = response.close || !keep_alive_ || context_->stopping.load() ||
                     requests_ >= context_->limits.max_requests_per_connection;
  auto message = std::make_shared<bhttp::response<bhttp::string_body>>(
      static_cast<bhttp::status>(response.status), 11);
  message->reason(std::string(StatusReason(response.status)));
  if (!response.content_type.empty())
    message->set(bhttp::field::content_type, response.content_type);
  for (auto& [name, value] : response.headers) message->set(name, value);
  message->body() = std::move(response.body);
  message->keep_alive(!close);
  message->prepare_payload();
  record_.body_bytes = message->body().size();
  Arm(Deadline::kWrite, context_->limits.write_timeout);
  auto on_written = [self = shared_from_this(), message, close](error_code ec, size_t) {
    self->OnWritten(ec, close);
  };
  if (record_.method == "HEAD") {
    auto serializer = std::make_shared<bhttp::response_serializer<bhttp::string_body>>(*message);
    bhttp::async_write_header(
        socket_, *serializer,
        [on_written, serializer](error_code ec, size_t n) { on_written(ec, n); });
  } else {
    bhttp::async_write(socket_, *message, std::move(on_written));
  }
}

void Connection::OnWritten(error_code ec, bool close) {
  if (closed_) return;
  Disarm();
  record_.duration = Clock::now() - started_;
  record_.written = !ec;
  context_->handler->OnExchange(record_);
  if (ec) return Close();
  if (close) return CloseGracefully();
  WaitForRequest();
}

void Connection::CloseGracefully() {
  SetPhase(ConnectionPhase::kClosing);
  error_code ignored;
  socket_.shutdown(Socket::shutdown_send, ignored);
  // Read and drop what the client still sends (an unread body) for a moment before closing:
  // closing with unread data makes the kernel reset the connection, and the client could lose
  // the answer it has not read yet.
  buffer_.consume(buffer_.size());
  buffer_.shrink_to_fit();
  linger_until_ = Clock::now() + kLingerTime;
  Linger();
}

void Connection::Linger() {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(linger_until_ - Clock::now());
  if (left.count() <= 0) return Close();
  Arm(Deadline::kLinger, std::min(left, kLingerIdle));
  auto scratch = std::make_shared<std::array<char, 16 << 10>>();
  socket_.async_read_some(net::buffer(*scratch),
                          [self = shared_from_this(), scratch](error_code ec, size_t) {
                            if (self->closed_) return;
                            if (ec) return self->Close();  // the client closed too, or failed
                            self->Linger();
                          });
}

void Connection::Close() {
  if (closed_) return;
  closed_ = true;
  stream_open_.store(false);
  SetPhase(ConnectionPhase::kClosing);
  Disarm();
  error_code ignored;
  socket_.shutdown(Socket::shutdown_both, ignored);
  socket_.close(ignored);
}

}  // namespace mogserve::server::http
