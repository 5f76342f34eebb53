// StatsEvents: GET /v1/events, the server's statistics pushed as Server-Sent Events — one
// `event: stats` with the /v1/stats JSON every interval per subscriber — for dashboards and
// scripts that would otherwise poll. One thread ticks for every subscriber; a subscriber that
// leaves is noticed at its next write and dropped.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "server/http/http_handler.h"

namespace mogserve::server {

class StatsEvents {
 public:
  static constexpr int kMaxSubscribers = 64;

  // `stats` renders the JSON of one event; it is called on this class's thread.
  explicit StatsEvents(std::function<std::string()> stats);
  ~StatsEvents();  // Stop()

  // Starts `stream` (already answered 200 text/event-stream): an event now, then one every
  // `interval`. False when kMaxSubscribers are already subscribed (answer 503 then).
  bool Subscribe(std::shared_ptr<http::ResponseStream> stream, std::chrono::milliseconds interval);
  // Ends every stream and the thread. Idempotent.
  void Stop();
  int subscribers() const;

 private:
  struct Subscriber {
    std::shared_ptr<http::ResponseStream> stream;
    std::chrono::milliseconds interval;
    std::chrono::steady_clock::time_point due;
  };
  void Loop();

  const std::function<std::string()> stats_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Subscriber> subscribers_;  // guarded by mu_
  bool stop_ = false;                    // guarded by mu_
  std::thread thread_;
};

}  // namespace mogserve::server
