// Listener: one listening socket and the event loop that serves its connections — a small pool
// of I/O threads running every connection (server/http/connection.h) as asynchronous
// operations, so the number of connections costs memory, not threads. Requests go to an
// HttpHandler; detection itself runs in the pipeline, never on these threads.
//
// Lifecycle: Bind → Run (blocks) → Stop (from any thread): the listening socket stops after
// every connection the kernel had already accepted is taken, idle keep-alive connections close,
// every request already received is answered (Connection: close), and Run returns when the
// last connection and the last pending answer are done.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "mogserve/status.h"
#include "server/http/connection_registry.h"
#include "server/http/http_handler.h"

namespace mogserve::server::http {

struct ListenerOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0 = any free port
  HttpLimits limits;
  int io_threads = 2;
};

struct ListenerStats {
  ConnectionCounters connections;
  int64_t body_bytes_in_flight = 0;
};

class Listener {
 public:
  // `handler` is not owned and must outlive the listener.
  Listener(ListenerOptions options, HttpHandler* handler);
  ~Listener();

  // Opens and binds the socket; returns the port (the chosen one when options.port is 0).
  StatusOr<int> Bind();
  // Serves until Stop() and the drain end; call Bind first.
  void Run();
  // Thread-safe, idempotent; may come before Run.
  void Stop();

  ListenerStats Stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mogserve::server::http
