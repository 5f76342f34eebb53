#include "bench/load_generator.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

namespace mogserve::bench {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// Collects results from many threads.
struct Tally {
  std::mutex mu;
  std::vector<double> latencies;
  int64_t sent = 0, ok = 0, failed = 0;

  void Add(bool success, double ms) {
    std::lock_guard<std::mutex> lock(mu);
    ++sent;
    if (success) {
      ++ok;
      latencies.push_back(ms);
    } else {
      ++failed;
    }
  }
  LoadResult Finish(double seconds) {
    LoadResult r;
    r.seconds = seconds;
    r.sent = sent;
    r.ok = ok;
    r.failed = failed;
    r.throughput_per_s = seconds > 0 ? static_cast<double>(ok) / seconds : 0;
    r.latency = Summarize(std::move(latencies));
    return r;
  }
};

}  // namespace

LoadResult RunClosedLoop(int concurrency, double seconds, double warmup_seconds,
                         const SendFunction& send) {
  const Clock::time_point start = Clock::now();
  const auto measure_from = start + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(warmup_seconds));
  const auto end = measure_from + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(seconds));
  std::atomic<uint64_t> next{0};
  std::atomic<int> served{0};
  Tally tally;
  std::vector<std::thread> clients;
  for (int c = 0; c < concurrency; ++c) {
    clients.emplace_back([&] {
      bool counted = false;
      while (Clock::now() < end) {
        const Clock::time_point t = Clock::now();
        const bool ok = send(next++);
        const Clock::time_point done = Clock::now();
        if (done < measure_from || done > end) continue;  // ended outside the window
        tally.Add(ok, MsSince(t));
        if (ok && !counted) {
          counted = true;
          served.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& t : clients) t.join();
  LoadResult r = tally.Finish(seconds);
  r.clients_served = served.load();
  return r;
}

LoadResult RunOpenLoop(double rate_per_s, double seconds, int max_in_flight,
                       const SendFunction& send) {
  Tally tally;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::pair<uint64_t, Clock::time_point>> arrivals;
  bool done = false;
  int idle = 0;
  std::vector<std::thread> workers;
  for (int w = 0; w < max_in_flight; ++w) {
    workers.emplace_back([&] {
      std::unique_lock<std::mutex> lock(mu);
      while (true) {
        ++idle;
        cv.wait(lock, [&] { return done || !arrivals.empty(); });
        --idle;
        if (arrivals.empty()) return;
        const auto [i, arrived] = arrivals.front();
        arrivals.pop_front();
        lock.unlock();
        const bool ok = send(i);
        tally.Add(ok, MsSince(arrived));  // from arrival: includes any wait for a thread
        lock.lock();
      }
    });
  }
  std::mt19937_64 rng(42);
  std::exponential_distribution<double> gap(rate_per_s);
  const Clock::time_point start = Clock::now();
  const Clock::time_point end =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  Clock::time_point at = start;
  for (uint64_t i = 0;; ++i) {
    at += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(gap(rng)));
    if (at >= end) break;
    std::this_thread::sleep_until(at);
    std::lock_guard<std::mutex> lock(mu);
    if (idle == 0 && static_cast<int>(arrivals.size()) >= max_in_flight) {
      tally.Add(false, 0);  // every client thread busy and a backlog: overload
      continue;
    }
    arrivals.emplace_back(i, at);
    cv.notify_one();
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
  }
  cv.notify_all();
  for (std::thread& t : workers) t.join();
  return tally.Finish(seconds);
}

}  // namespace mogserve::bench
