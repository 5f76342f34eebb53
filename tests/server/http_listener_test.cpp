// The HTTP layer (server/http/) in-process over loopback, with a scripted handler: asynchronous
// answers from other threads, pipelining, keep-alive under concurrency, the connection cap,
// Stop with requests in flight, dropped answers, and WebSocket backpressure. These run in the
// ASan and TSan builds too: they are the concurrency tests of the connection state machine.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "server/http/listener.h"
#include "support/raw_http.h"

namespace mogserve::server::http {
namespace {

using e2e::GetRequest;
using e2e::PostRequest;
using e2e::RawConnection;
using e2e::RawResponse;
using std::chrono::milliseconds;
using std::chrono::seconds;

// Runs jobs on its own thread after a delay: answers that come "from the pipeline".
class Later {
 public:
  Later() : thread_([this] { Loop(); }) {}
  ~Later() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void Run(milliseconds delay, std::function<void()> job) {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back({std::chrono::steady_clock::now() + delay, std::move(job)});
    cv_.notify_all();
  }

 private:
  struct Job {
    std::chrono::steady_clock::time_point at;
    std::function<void()> fn;
  };
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_ || !jobs_.empty()) {
      if (jobs_.empty()) {
        cv_.wait(lock);
        continue;
      }
      auto next = std::min_element(jobs_.begin(), jobs_.end(),
                                   [](const Job& a, const Job& b) { return a.at < b.at; });
      if (next->at > std::chrono::steady_clock::now() && !stop_) {
        cv_.wait_until(lock, next->at);
        continue;
      }
      Job job = std::move(*next);
      jobs_.erase(next);
      lock.unlock();
      job.fn();
      lock.lock();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;  // guarded by mu_
  bool stop_ = false;     // guarded by mu_
  std::thread thread_;
};

HttpResponse Text(std::string body) {
  HttpResponse r;
  r.content_type = "text/plain";
  r.body = std::move(body);
  return r;
}

// Echoes WebSocket messages; "pause" stops reading until the handler resumes 50 ms later.
class EchoSocket : public WebSocketHandler {
 public:
  EchoSocket(std::shared_ptr<WebSocketPeer> peer, Later* later)
      : peer_(std::move(peer)), later_(later) {}
  bool OnMessage(std::string message, bool binary) override {
    peer_->Send("echo:" + message, binary);
    if (message != "pause") return true;
    later_->Run(milliseconds(50), [peer = peer_] {
      peer->Send("resumed");
      peer->Resume();
    });
    return false;
  }
  void OnClose() override {}

 private:
  std::shared_ptr<WebSocketPeer> peer_;
  Later* later_;
};

// /echo answers at once; /later?ms=N&id=X from another thread after N ms; /hold keeps its
// answer until Release(); /drop loses it (the layer must answer 500); /refuse is refused from
// its header; /ws is a WebSocket echo.
class ScriptedHandler : public HttpHandler {
 public:
  std::optional<HttpResponse> Screen(HttpRequest& head) override {
    if (head.path == "/refuse") return JsonError(403, "refused", "screened");
    return std::nullopt;
  }
  void Handle(HttpRequest request, Responder respond) override {
    const auto q = [&](const char* name) {
      auto it = request.query.find(name);
      return it == request.query.end() ? std::string() : it->second;
    };
    if (request.path == "/echo") return respond(Text(request.method + " " + request.body));
    if (request.path == "/later") {
      const int ms = q("ms").empty() ? 0 : std::stoi(q("ms"));
      return later_.Run(milliseconds(ms), [respond, id = q("id")] { respond(Text(id)); });
    }
    if (request.path == "/hold") {
      std::lock_guard<std::mutex> lock(mu_);
      held_.push_back(respond);
      return;
    }
    if (request.path == "/drop") return;
    if (request.path == "/stream") {  // three pieces from another thread, then the end
      HttpResponse head;
      head.content_type = "text/plain";
      std::shared_ptr<ResponseStream> stream = respond.Stream(std::move(head));
      for (int i = 0; i < 3; ++i) {
        later_.Run(milliseconds(10 * i),
                   [stream, i] { stream->Write("piece" + std::to_string(i)); });
      }
      return later_.Run(milliseconds(40), [stream] { stream->End(); });
    }
    if (request.path == "/flood") {  // the test writes the pieces (flood())
      HttpResponse head;
      head.content_type = "application/octet-stream";
      std::lock_guard<std::mutex> lock(mu_);
      flood_ = respond.Stream(std::move(head));
      return;
    }
    respond(JsonError(404, "not_found", request.path));
  }
  std::unique_ptr<WebSocketHandler> AcceptWebSocket(const HttpRequest& head,
                                                    std::shared_ptr<WebSocketPeer> peer) override {
    if (head.path != "/ws") return nullptr;
    return std::make_unique<EchoSocket>(std::move(peer), &later_);
  }
  void BeforeSend(const ExchangeRecord&, HttpResponse&) override { sent_.fetch_add(1); }
  void OnExchange(const ExchangeRecord&) override {}

  size_t held() {
    std::lock_guard<std::mutex> lock(mu_);
    return held_.size();
  }
  void Release() {
    std::vector<Responder> held;
    {
      std::lock_guard<std::mutex> lock(mu_);
      held.swap(held_);
      flood_.reset();  // a stream holds its connection and the event loop's work
    }
    for (const Responder& r : held) r(Text("released"));
  }
  int sent() const { return sent_.load(); }
  std::shared_ptr<ResponseStream> flood() {
    std::lock_guard<std::mutex> lock(mu_);
    return flood_;
  }

 private:
  Later later_;
  std::mutex mu_;
  std::vector<Responder> held_;            // guarded by mu_
  std::shared_ptr<ResponseStream> flood_;  // guarded by mu_
  std::atomic<int> sent_{0};
};

// A Listener on a free port, run on a thread of its own.
class ListenerTest : public ::testing::Test {
 protected:
  void Start(HttpLimits limits = {}) {
    ListenerOptions o;
    o.limits = limits;
    o.io_threads = 3;
    listener_ = std::make_unique<Listener>(o, &handler_);
    auto port = listener_->Bind();
    ASSERT_TRUE(port.ok()) << port.status().ToString();
    port_ = *port;
    runner_ = std::thread([this] { listener_->Run(); });
  }
  void TearDown() override {
    if (listener_) listener_->Stop();
    handler_.Release();
    if (runner_.joinable()) runner_.join();
  }
  // Polls `condition` (a state another thread reaches) for up to 5 s.
  static bool Eventually(const std::function<bool()>& condition) {
    const auto deadline = std::chrono::steady_clock::now() + seconds(5);
    while (!condition()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(milliseconds(5));
    }
    return true;
  }

  ScriptedHandler handler_;
  std::unique_ptr<Listener> listener_;
  std::thread runner_;
  int port_ = 0;
};

TEST_F(ListenerTest, ConcurrentKeepAliveClientsEachGetTheirOwnAsynchronousAnswers) {
  Start();
  constexpr int kClients = 12, kRequests = 30;
  std::atomic<int> ok{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      RawConnection conn(port_);
      for (int i = 0; i < kRequests; ++i) {
        const std::string id = std::to_string(c) + "-" + std::to_string(i);
        if (!conn.Send(GetRequest("/later?ms=" + std::to_string(i % 3) + "&id=" + id))) return;
        const auto r = conn.ReadResponse(seconds(10));
        if (r && r->status == 200 && r->body == id) ok.fetch_add(1);
      }
    });
  }
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(ok.load(), kClients * kRequests);
  EXPECT_EQ(listener_->Stats().connections.accepted_total, kClients);
}

TEST_F(ListenerTest, PipelinedRequestsAnsweredInOrderWhateverTheirDelays) {
  Start();
  RawConnection conn(port_);
  std::string batch;
  for (int i = 0; i < 8; ++i) {
    batch += GetRequest("/later?ms=" + std::to_string((8 - i) * 5) + "&id=" + std::to_string(i));
  }
  batch += PostRequest("/echo", "text/plain", "last");
  ASSERT_TRUE(conn.Send(batch));
  for (int i = 0; i < 8; ++i) {
    const auto r = conn.ReadResponse(seconds(10));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, std::to_string(i));
  }
  const auto last = conn.ReadResponse(seconds(10));
  ASSERT_TRUE(last);
  EXPECT_EQ(last->body, "POST last");
}

TEST_F(ListenerTest, ARefusalFromTheHeaderAndADroppedAnswer) {
  Start();
  RawConnection conn(port_);
  ASSERT_TRUE(conn.Send(GetRequest("/refuse") + GetRequest("/drop") + GetRequest("/echo")));
  const auto refused = conn.ReadResponse(seconds(5));
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 403);
  const auto dropped = conn.ReadResponse(seconds(5));
  ASSERT_TRUE(dropped);
  EXPECT_EQ(dropped->status, 500);
  EXPECT_NE(dropped->body.find("no answer"), std::string::npos);
  const auto echo = conn.ReadResponse(seconds(5));  // the connection is still usable
  ASSERT_TRUE(echo);
  EXPECT_EQ(echo->body, "GET ");
}

TEST_F(ListenerTest, StreamedAnswersAreChunkedAndTheConnectionGoesOn) {
  Start();
  RawConnection conn(port_);
  ASSERT_TRUE(conn.Send(GetRequest("/stream") + GetRequest("/echo")));
  const auto head = conn.ReadResponseHead(seconds(5));
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(head->Header("transfer-encoding"), "chunked");
  for (int i = 0; i < 3; ++i) {
    const auto chunk = conn.ReadChunk(seconds(5));
    ASSERT_TRUE(chunk);
    EXPECT_EQ(*chunk, "piece" + std::to_string(i));
  }
  const auto last = conn.ReadChunk(seconds(5));
  ASSERT_TRUE(last);
  EXPECT_EQ(*last, "");
  const auto echo = conn.ReadResponse(seconds(5));  // the pipelined request after it
  ASSERT_TRUE(echo);
  EXPECT_EQ(echo->body, "GET ");
}

// A client that takes a streamed answer and never reads: what waits for it is bounded in bytes
// (kMaxQueuedBytes, 4 MiB), not only in pieces (256 of 256 KiB would be 64 MiB), and then its
// connection is closed.
TEST_F(ListenerTest, AStreamToAClientThatDoesNotReadIsClosedAtItsByteBound) {
  Start();
  RawConnection conn(port_);  // never reads
  ASSERT_TRUE(conn.Send(GetRequest("/flood")));
  std::shared_ptr<ResponseStream> stream;
  ASSERT_TRUE(Eventually([&] { return (stream = handler_.flood()) != nullptr; }));
  const std::string piece(256 << 10, 'x');
  int written = 0;
  int64_t most_unsent = 0;
  while (stream->open() && written < 200) {
    stream->Write(piece);
    ++written;
    std::this_thread::sleep_for(milliseconds(2));
    most_unsent = std::max(most_unsent, stream->unsent_bytes());
  }
  EXPECT_TRUE(Eventually([&] { return !stream->open(); }));
  // The kernel's socket buffers take some before anything queues here.
  EXPECT_LT(written, 120);
  EXPECT_GT(most_unsent, 0);
  EXPECT_LE(most_unsent, ResponseStream::kMaxQueuedBytes + static_cast<int64_t>(piece.size()) + 64);
  stream.reset();
  handler_.Release();
}

TEST_F(ListenerTest, AtTheCapIdleConnectionsMakeRoomAndBusyOnesDoNot) {
  HttpLimits limits;
  limits.max_connections = 3;
  Start(limits);
  std::vector<RawConnection> idle;
  for (int i = 0; i < 3; ++i) idle.emplace_back(port_);
  ASSERT_TRUE(Eventually([&] { return listener_->Stats().connections.open == 3; }));
  RawConnection newcomer(port_);
  ASSERT_TRUE(newcomer.Send(GetRequest("/echo")));
  const auto r = newcomer.ReadResponse(seconds(5));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(listener_->Stats().connections.displaced_total, 1);
  int closed = 0;
  for (RawConnection& c : idle) closed += c.ClosedWithoutMore(milliseconds(300));
  EXPECT_EQ(closed, 1) << "one idle connection made room";
  // Three connections busy with a request: a fourth is refused.
  std::vector<RawConnection> busy;
  for (int i = 0; i < 3; ++i) {
    busy.emplace_back(port_);
    ASSERT_TRUE(busy.back().Send(GetRequest("/hold")));
  }
  ASSERT_TRUE(Eventually([&] { return handler_.held() == 3; }));
  ASSERT_TRUE(Eventually([&] { return listener_->Stats().connections.open == 3; }));
  RawConnection refused(port_);
  const auto full = refused.ReadResponse(seconds(5));
  ASSERT_TRUE(full);
  EXPECT_EQ(full->status, 503);
  EXPECT_NE(full->body.find("too_many_connections"), std::string::npos);
  EXPECT_EQ(listener_->Stats().connections.refused_total, 1);
  handler_.Release();
  for (RawConnection& b : busy) {
    const auto released = b.ReadResponse(seconds(5));
    ASSERT_TRUE(released);
    EXPECT_EQ(released->body, "released");
  }
}

TEST_F(ListenerTest, StopAnswersRequestsInFlightThenRunReturns) {
  Start();
  std::vector<RawConnection> held;
  for (int i = 0; i < 4; ++i) {
    held.emplace_back(port_);
    ASSERT_TRUE(held.back().Send(GetRequest("/hold")));
  }
  RawConnection idle(port_);  // kept alive after one answer: closed at Stop
  ASSERT_TRUE(idle.Send(GetRequest("/echo")));
  ASSERT_TRUE(idle.ReadResponse(seconds(5)));
  ASSERT_TRUE(Eventually([&] { return handler_.held() == 4; }));
  listener_->Stop();
  EXPECT_TRUE(idle.ClosedWithoutMore(seconds(5)));
  std::this_thread::sleep_for(milliseconds(50));  // the answers come after the stop
  handler_.Release();
  for (RawConnection& c : held) {
    const auto r = c.ReadResponse(seconds(5));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, "released");
    EXPECT_EQ(r->Header("connection"), "close");
  }
  for (RawConnection& c : held) c.ShutdownWrite();  // ends the server's graceful close
  runner_.join();                                   // Run returned: nothing left
}

TEST_F(ListenerTest, WebSocketEchoesWithBackpressureAndClosesAtStop) {
  Start();
  RawConnection conn(port_);
  ASSERT_TRUE(conn.Send(GetRequest("/ws",
                                   "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                                   "Sec-WebSocket-Version: 13\r\n"
                                   "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n")));
  const auto upgraded = conn.ReadResponse(seconds(5));
  ASSERT_TRUE(upgraded);
  ASSERT_EQ(upgraded->status, 101);
  // Masked text frames (RFC 6455 §5.3) with a zero mask: the payload is sent as is.
  const auto frame = [](const std::string& text) {
    return std::string(1, '\x81') + static_cast<char>(0x80 | text.size()) + std::string(4, '\0') +
           text;
  };
  ASSERT_TRUE(conn.Send(frame("a") + frame("pause") + frame("b")));
  std::vector<std::string> got;
  for (int i = 0; i < 4; ++i) {
    const auto head = conn.ReadExactly(2, seconds(5));
    ASSERT_TRUE(head);
    const auto payload = conn.ReadExactly(static_cast<uint8_t>((*head)[1]) & 0x7F, seconds(5));
    ASSERT_TRUE(payload);
    got.push_back(*payload);
  }
  // "b" is read only after the handler resumed.
  EXPECT_EQ(got, (std::vector<std::string>{"echo:a", "echo:pause", "resumed", "echo:b"}));
  listener_->Stop();
  const auto close = conn.ReadExactly(2, seconds(5));
  ASSERT_TRUE(close);
  EXPECT_EQ(static_cast<uint8_t>((*close)[0]), 0x88) << "a close frame";
}

}  // namespace
}  // namespace mogserve::server::http
