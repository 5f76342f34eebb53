// Connection's streamed answers (see http_handler.h, ResponseStream).
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <cstdio>

#include "server/http/connection.h"

namespace mogserve::server::http {

namespace net = boost::asio;
using boost::system::error_code;

// The application's handle on a streamed answer: every call posts to the strand. Holds the
// connection (and the event loop's work) until dropped.
class ConnectionResponseStream final : public ResponseStream {
 public:
  explicit ConnectionResponseStream(std::shared_ptr<Connection> c)
      : work_(net::prefer(c->socket_.get_executor(), net::execution::outstanding_work.tracked)),
        connection_(std::move(c)) {}
  ~ConnectionResponseStream() override { End(); }

  bool Write(std::string piece) override {
    if (!open()) return false;
    net::post(
        connection_->socket_.get_executor(),
        [c = connection_, p = std::move(piece)]() mutable { c->QueueStreamPiece(std::move(p)); });
    return true;
  }
  void End() override {
    if (ended_.exchange(true)) return;
    net::post(connection_->socket_.get_executor(), [c = connection_] { c->EndStream(); });
  }
  bool open() const override { return !ended_.load() && connection_->stream_open_.load(); }
  int64_t unsent_bytes() const override { return connection_->stream_queued_bytes_.load(); }

 private:
  net::any_io_executor work_;  // released after connection_ (see ResponderState)
  std::shared_ptr<Connection> connection_;
  std::atomic<bool> ended_{false};
};

std::shared_ptr<ResponseStream> Responder::Stream(HttpResponse head) const {
  state_->answered.store(true);
  const std::shared_ptr<Connection>& c = state_->connection;
  c->stream_open_.store(true);  // before any Write: the stream is open from here on
  net::post(c->socket_.get_executor(),
            [c, h = std::move(head)]() mutable { c->StartStream(std::move(h)); });
  return std::make_shared<ConnectionResponseStream>(c);
}

void Connection::StartStream(HttpResponse head) {
  if (closed_) return;
  SetPhase(ConnectionPhase::kWriting);
  parser_.reset();
  ++requests_;
  record_.status = head.status;
  context_->handler->BeforeSend(record_, head);
  // HTTP/1.1: chunked; HTTP/1.0 has no chunks, so the end of the answer is the end of the
  // connection.
  stream_chunked_ = request_version_ >= 11;
  stream_close_ = !stream_chunked_ || !keep_alive_ || context_->stopping.load() ||
                  requests_ >= context_->limits.max_requests_per_connection;
  std::string text = "HTTP/1.1 " + std::to_string(head.status) + " " +
                     std::string(StatusReason(head.status)) + "\r\n";
  if (!head.content_type.empty()) text += "Content-Type: " + head.content_type + "\r\n";
  for (const auto& [name, value] : head.headers) text += name + ": " + value + "\r\n";
  if (stream_chunked_) text += "Transfer-Encoding: chunked\r\n";
  text += stream_close_ ? "Connection: close\r\n\r\n" : "\r\n";
  stream_queued_bytes_ += static_cast<int64_t>(text.size());
  stream_queue_.push_back(std::move(text));
  WriteStream();
}

void Connection::QueueStreamPiece(std::string piece) {
  if (closed_ || stream_ending_ || piece.empty()) return;
  if (stream_chunked_) {
    char size[24];
    std::snprintf(size, sizeof size, "%zx\r\n", piece.size());
    piece.insert(0, size);
    piece += "\r\n";
  }
  record_.body_bytes += piece.size();
  stream_queued_bytes_ += static_cast<int64_t>(piece.size());
  stream_queue_.push_back(std::move(piece));
  if (stream_queue_.size() > ResponseStream::kMaxQueued ||
      stream_queued_bytes_.load() > ResponseStream::kMaxQueuedBytes) {
    return Close();  // not reading
  }
  if (!stream_writing_) WriteStream();
}

void Connection::EndStream() {
  if (closed_ || stream_ending_) return;
  stream_ending_ = true;
  stream_open_.store(false);
  if (stream_chunked_) {
    stream_queued_bytes_ += 5;
    stream_queue_.push_back("0\r\n\r\n");
  }
  if (!stream_writing_) WriteStream();
}

void Connection::WriteStream() {
  if (stream_queue_.empty()) {
    if (!stream_ending_) return;  // wait for more pieces
    stream_ending_ = false;
    record_.duration = Clock::now() - started_;
    record_.written = true;
    context_->handler->OnExchange(record_);
    if (stream_close_) return CloseGracefully();
    return WaitForRequest();
  }
  stream_writing_ = true;
  Arm(Deadline::kWrite, context_->limits.write_timeout);
  net::async_write(socket_, net::buffer(stream_queue_.front()),
                   [self = shared_from_this()](error_code ec, size_t) {
                     self->stream_writing_ = false;
                     if (self->closed_) return;
                     self->Disarm();
                     if (ec) {
                       self->record_.written = false;
                       self->context_->handler->OnExchange(self->record_);
                       return self->Close();
                     }
                     self->stream_queued_bytes_ -=
                         static_cast<int64_t>(self->stream_queue_.front().size());
                     self->stream_queue_.pop_front();
                     self->WriteStream();
                   });
}

}  // namespace mogserve::server::http
