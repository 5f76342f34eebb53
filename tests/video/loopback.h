// Loopback servers for the video tests' failure cases: a port nobody listens on, a listener that
// accepts and never sends, and an HTTP server that answers every request with one fixed status.
#pragma once

#include <atomic>
#include <string>
#include <thread>

namespace mogserve::video::testing {

// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0, then closed).
int ClosedTcpPort();

// Whether something listens on 127.0.0.1:port (TCP), read from /proc/net/tcp so that checking
// does not take the connection a one-client server (ffmpeg's listen=1) waits for.
bool IsListening(int port);

// Whether a UDP socket is bound to port on 127.0.0.1 or on any address (/proc/net/udp).
bool IsBoundUdp(int port);

// Listens on 127.0.0.1 and accepts (the kernel completes the handshakes), never sends a byte.
class SilentListener {
 public:
  SilentListener();
  ~SilentListener();
  int port() const { return port_; }
  // Whether a client connected (its connection waits in the backlog, never accepted) within
  // `timeout_ms`: the client has got as far as opening the source.
  bool WaitForConnection(int timeout_ms) const;

 private:
  int fd_ = -1;
  int port_ = 0;
};

// Answers every request on 127.0.0.1 with `status_line` (e.g. "401 Unauthorized"), no body,
// then closes the connection. One thread; stops and joins in the destructor.
class FixedStatusHttpServer {
 public:
  explicit FixedStatusHttpServer(std::string status_line);
  ~FixedStatusHttpServer();
  int port() const { return port_; }
  int requests() const { return requests_; }

 private:
  void Serve();

  std::string status_line_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> requests_{0};
  std::thread thread_;
};

// A byte stream that keeps flowing but stops carrying pictures: each client on 127.0.0.1 gets
// `prefix` (the start of an MPEG-TS file), then MPEG-TS null packets, 3.7 kB every 10 ms, until
// it disconnects: no read ever times out, yet no frame comes (the no-frame watchdog's case).
class TrickleServer {
 public:
  explicit TrickleServer(std::string prefix);
  ~TrickleServer();
  int port() const { return port_; }

 private:
  void Serve();

  std::string prefix_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace mogserve::video::testing
