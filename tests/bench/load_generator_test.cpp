#include "bench/load_generator.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

namespace mogserve::bench {
namespace {

using namespace std::chrono_literals;

// Requests as long as a good part of the window still count once they end inside it: 4 clients
// with 0.5 s round trips end requests at 0.5 s and 1.0 s into a window [0.3 s, 1.3 s] — two
// each. (Counting only requests that also started in the window would find one each.)
TEST(LoadGeneratorTest, ClosedLoopCountsEveryRequestEndingInTheWindow) {
  const LoadResult r = RunClosedLoop(4, /*seconds=*/1.0, /*warmup_seconds=*/0.3, [](uint64_t) {
    std::this_thread::sleep_for(500ms);  // the simulated round trip
    return true;
  });
  EXPECT_EQ(r.ok, 8);
  EXPECT_EQ(r.failed, 0);
  EXPECT_DOUBLE_EQ(r.throughput_per_s, 8.0);
  EXPECT_GE(r.latency.median_ms, 500.0);
  EXPECT_EQ(r.clients_served, 4);
}

// A server that serves two clients and leaves the others waiting: the latencies look fine, the
// clients served do not.
TEST(LoadGeneratorTest, ClosedLoopReportsClientsThatWereNeverServed) {
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::thread::id, int> slots;  // the first two threads get one; the rest wait
  bool released = false;
  std::thread release([&] {
    std::this_thread::sleep_for(1500ms);  // after the window [0.2 s, 1.2 s]
    std::lock_guard<std::mutex> lock(mu);
    released = true;
    cv.notify_all();
  });
  const LoadResult r = RunClosedLoop(4, 1.0, 0.2, [&](uint64_t) {
    std::unique_lock<std::mutex> lock(mu);
    auto [it, inserted] = slots.emplace(std::this_thread::get_id(), static_cast<int>(slots.size()));
    if (it->second >= 2) cv.wait(lock, [&] { return released; });
    lock.unlock();
    std::this_thread::sleep_for(10ms);
    return true;
  });
  release.join();
  EXPECT_EQ(r.clients_served, 2);
  EXPECT_GT(r.ok, 20);  // the two served clients kept going
}

}  // namespace
}  // namespace mogserve::bench
