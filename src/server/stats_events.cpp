#include "server/stats_events.h"

#include <algorithm>

#include "server/subscriber_stop.h"

namespace mogserve::server {

StatsEvents::StatsEvents(std::function<std::string()> stats)
    : stats_(std::move(stats)), thread_([this] { Loop(); }) {}

StatsEvents::~StatsEvents() {
  Stop();
}

bool StatsEvents::Subscribe(std::shared_ptr<http::ResponseStream> stream,
                            std::chrono::milliseconds interval) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stop_ || static_cast<int>(subscribers_.size()) >= kMaxSubscribers) return false;
  // The reconnection delay for EventSource clients, then the first event at once.
  stream->Write("retry: 2000\n\n");
  subscribers_.push_back({std::move(stream), interval, std::chrono::steady_clock::now()});
  cv_.notify_all();
  return true;
}

void StatsEvents::Stop() {
  auto ending = TakeSubscribersForStop(mu_, cv_, stop_, subscribers_);
  if (!ending) return;
  for (Subscriber& s : *ending) s.stream->End();
  thread_.join();
}

int StatsEvents::subscribers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(subscribers_.size());
}

void StatsEvents::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    if (subscribers_.empty()) {
      cv_.wait(lock);
      continue;
    }
    const auto next =
        std::min_element(subscribers_.begin(), subscribers_.end(),
                         [](const Subscriber& a, const Subscriber& b) { return a.due < b.due; });
    if (cv_.wait_until(lock, next->due) != std::cv_status::timeout && !stop_) continue;
    const auto now = std::chrono::steady_clock::now();
    std::string event;  // rendered once per tick, for every subscriber due
    for (Subscriber& s : subscribers_) {
      if (s.due > now) continue;
      if (event.empty()) event = "event: stats\ndata: " + stats_() + "\n\n";
      s.stream->Write(event);
      s.due = now + s.interval;
    }
    std::erase_if(subscribers_, [](const Subscriber& s) { return !s.stream->open(); });
  }
}

}  // namespace mogserve::server
