// The stop of a class that pushes to subscribers from a thread of its own (StatsEvents,
// StreamEvents): once, under its lock, mark it stopped and take every subscriber out, then wake
// its thread. The caller ends the subscribers and joins the thread.
#pragma once

#include <condition_variable>
#include <mutex>
#include <optional>
#include <vector>

namespace mogserve::server {

// The subscribers to end; nullopt when `stop` was already set (a second Stop).
template <typename Subscriber>
std::optional<std::vector<Subscriber>> TakeSubscribersForStop(
    std::mutex& mu, std::condition_variable& cv, bool& stop, std::vector<Subscriber>& subscribers) {
  std::vector<Subscriber> ending;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (stop) return std::nullopt;
    stop = true;
    ending.swap(subscribers);
  }
  cv.notify_all();
  return ending;
}

}  // namespace mogserve::server
