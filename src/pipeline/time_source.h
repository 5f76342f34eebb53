// TimeSource: where the pipeline reads the time and how it waits for it. The real one is the
// steady clock; tests inject a ManualTimeSource, whose time moves only when the test says so, so
// every wait and every timing in the pipeline is deterministic (DESIGN.md §3, determinism hooks).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>

#include "scheduler/request.h"

namespace mogserve::pipeline {

using scheduler::Duration;
using scheduler::TimePoint;

class TimeSource {
 public:
  virtual ~TimeSource() = default;
  virtual TimePoint Now() const = 0;
  // Blocks on `cv` (with `lock` held on entry and on return) until it is notified or the time
  // reaches `deadline`, whichever comes first; spurious wake-ups are allowed.
  virtual void WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                         TimePoint deadline) const = 0;
  // Calls `on_advance` (from the advancing thread) each time the time moves, for sources whose
  // time jumps; returns a token for Unsubscribe. The steady clock never calls it.
  virtual uint64_t Subscribe(std::function<void()> on_advance) = 0;
  virtual void Unsubscribe(uint64_t token) = 0;
};

// std::chrono::steady_clock.
class SteadyTimeSource final : public TimeSource {
 public:
  TimePoint Now() const override { return scheduler::Clock::now(); }
  void WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                 TimePoint deadline) const override {
    if (deadline == TimePoint::max()) {
      cv.wait(lock);
    } else {
      cv.wait_until(lock, deadline);
    }
  }
  uint64_t Subscribe(std::function<void()>) override { return 0; }
  void Unsubscribe(uint64_t) override {}
};

// Test time: starts at `start` and moves only through Advance/Set. Advance calls every subscriber
// synchronously, so when it returns the pipeline has taken every decision that came due.
// Thread-safe.
class ManualTimeSource final : public TimeSource {
 public:
  explicit ManualTimeSource(TimePoint start = TimePoint{} + std::chrono::hours(1)) : now_(start) {}

  TimePoint Now() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return now_;
  }
  // Manual time never reaches a deadline by itself: waiters wake on a notify (the subscriber).
  void WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                 TimePoint) const override {
    cv.wait(lock);
  }
  uint64_t Subscribe(std::function<void()> on_advance) override {
    std::lock_guard<std::mutex> lock(mu_);
    subscribers_.emplace(++next_token_, std::move(on_advance));
    return next_token_;
  }
  // Once it returns, the subscriber is never called again (it waits for a running Set).
  void Unsubscribe(uint64_t token) override {
    std::lock_guard<std::mutex> calling(call_mu_);
    std::lock_guard<std::mutex> lock(mu_);
    subscribers_.erase(token);
  }

  void Advance(Duration d) { Set(Now() + d); }
  void Set(TimePoint t) {
    std::lock_guard<std::mutex> calling(call_mu_);
    std::map<uint64_t, std::function<void()>> subscribers;
    {
      std::lock_guard<std::mutex> lock(mu_);
      now_ = t;
      subscribers = subscribers_;
    }
    for (auto& [token, fn] : subscribers) fn();
  }

 private:
  std::mutex call_mu_;  // held while subscribers run, so Unsubscribe can wait for them
  mutable std::mutex mu_;
  TimePoint now_;                                          // guarded by mu_
  uint64_t next_token_ = 0;                                // guarded by mu_
  std::map<uint64_t, std::function<void()>> subscribers_;  // guarded by mu_
};

}  // namespace mogserve::pipeline
