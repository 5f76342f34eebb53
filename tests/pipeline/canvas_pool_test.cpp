#include "pipeline/canvas_pool.h"

#include <gtest/gtest.h>

namespace mogserve::pipeline {
namespace {

TEST(CanvasPoolTest, ReusesBuffersOfTheSameSize) {
  CanvasPool pool;
  std::vector<uint8_t> a = pool.Acquire(100);
  const uint8_t* data = a.data();
  pool.Release(std::move(a));
  EXPECT_EQ(pool.stats().free_bytes, 100);
  std::vector<uint8_t> again = pool.Acquire(100);
  EXPECT_EQ(again.data(), data);
  EXPECT_EQ(pool.stats().allocations, 1);
  EXPECT_EQ(pool.Acquire(200).size(), 200u);  // another size: a new buffer
  EXPECT_EQ(pool.stats().allocations, 2);
}

TEST(CanvasPoolTest, TrimKeepsNoMoreFreeBuffersThanAsked) {
  CanvasPool pool;
  std::vector<std::vector<uint8_t>> burst;
  for (int i = 0; i < 10; ++i) burst.push_back(pool.Acquire(100));
  for (auto& b : burst) pool.Release(std::move(b));
  EXPECT_EQ(pool.stats().free_buffers, 10);
  EXPECT_EQ(pool.Trim(/*keep_bytes=*/300), 700);
  EXPECT_EQ(pool.stats().free_buffers, 3);
  EXPECT_EQ(pool.stats().free_bytes, 300);
  for (int i = 0; i < 3; ++i) pool.Acquire(100);
  EXPECT_EQ(pool.stats().allocations, 10);  // the three kept were reused
  EXPECT_EQ(pool.Trim(0), 0);               // all three are in use
}

}  // namespace
}  // namespace mogserve::pipeline
