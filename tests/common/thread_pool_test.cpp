#include "common/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>

namespace mogserve {
namespace {

TEST(ThreadPoolTest, RunsEveryTaskAndReturnsResults) {
  ThreadPool pool(3, "test");
  EXPECT_EQ(pool.size(), 3);
  std::vector<std::future<int>> results;
  for (int i = 0; i < 100; ++i) results.push_back(pool.Submit([i] { return i * i; }));
  for (int i = 0; i < 100; ++i) EXPECT_EQ(results[i].get(), i * i);
}

TEST(ThreadPoolTest, UsesSeveralThreads) {
  ThreadPool pool(2, "test");
  std::mutex mu;
  std::set<std::thread::id> ids;
  std::atomic<int> arrived{0};
  std::vector<std::future<void>> done;
  for (int i = 0; i < 2; ++i) {
    done.push_back(pool.Submit([&] {
      {
        std::lock_guard<std::mutex> lock(mu);
        ids.insert(std::this_thread::get_id());
      }
      // Both tasks must be running at once for either to finish: proves two workers.
      ++arrived;
      while (arrived.load() < 2) std::this_thread::yield();
    }));
  }
  for (auto& f : done) f.get();
  EXPECT_EQ(ids.size(), 2u);
}

TEST(ThreadPoolTest, DestructorDrainsQueuedTasks) {
  std::atomic<int> ran{0};
  {
    ThreadPool pool(1, "test");
    for (int i = 0; i < 50; ++i) {
      // Futures are dropped on purpose: the destructor alone must run the queue to the end.
      (void)pool.Submit([&ran] { ++ran; });
    }
  }
  EXPECT_EQ(ran.load(), 50);
}

TEST(ThreadPoolTest, ExceptionsReachTheFuture) {
  ThreadPool pool(1, "test");
  auto f = pool.Submit([]() -> int { throw std::runtime_error("boom"); });
  EXPECT_THROW(f.get(), std::runtime_error);
  EXPECT_EQ(pool.Submit([] { return 7; }).get(), 7);  // the worker survived
}

TEST(ThreadPoolTest, ZeroThreadsMeansOne) {
  ThreadPool pool(0, "test");
  EXPECT_EQ(pool.size(), 1);
  EXPECT_EQ(pool.Submit([] { return 1; }).get(), 1);
}

}  // namespace
}  // namespace mogserve
