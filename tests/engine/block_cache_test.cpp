// The caching allocator's reuse policy on its own: best fit within the waste bound, and the
// least recently freed blocks evicted first at the cap.
#include "engine/block_cache.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace mogserve::engine {
namespace {

void* P(uintptr_t n) {
  return reinterpret_cast<void*>(n);
}  // a distinct fake address

TEST(BlockCacheTest, TakesTheSmallestBlockThatFitsWithinTheWasteBound) {
  BlockCache cache(/*max_bytes=*/10'000, /*max_waste=*/0.25);
  EXPECT_TRUE(cache.Put({P(1), 1000}).empty());
  EXPECT_TRUE(cache.Put({P(2), 1200}).empty());
  EXPECT_TRUE(cache.Put({P(3), 2000}).empty());
  EXPECT_EQ(cache.cached_bytes(), 4200);

  // 960 bytes: 1000 is the best fit (1200 would also be within 25%).
  EXPECT_EQ(cache.Take(960).base, P(1));
  // 1100: 1200 fits; 2000 would waste more than 25%.
  EXPECT_EQ(cache.Take(1100).base, P(2));
  // 1500: only 2000 is left, 33% larger: a miss, not a wasteful hit.
  EXPECT_EQ(cache.Take(1500).base, nullptr);
  EXPECT_EQ(cache.Take(1700).base, P(3));  // within 25%
  EXPECT_EQ(cache.blocks(), 0u);
  EXPECT_EQ(cache.cached_bytes(), 0);
}

TEST(BlockCacheTest, ABatchOfFifteenReusesTheBlocksOfSixteen) {
  // The regression behind the policy: activations of a batch of 15 after batches of 16.
  BlockCache cache(1 << 30);
  for (uintptr_t i = 1; i <= 4; ++i) cache.Put({P(i), 16 * 1'000'000});
  for (int i = 0; i < 4; ++i) EXPECT_NE(cache.Take(15 * 1'000'000).base, nullptr);
}

TEST(BlockCacheTest, EvictsTheLeastRecentlyFreedFirstAtTheCap) {
  BlockCache cache(/*max_bytes=*/3000);
  cache.Put({P(1), 1000});  // oldest
  cache.Put({P(2), 1000});
  cache.Put({P(3), 1000});
  const std::vector<BlockCache::Block> evicted = cache.Put({P(4), 1500});
  // Two old blocks make room for the new one; the newest shapes stay cached.
  ASSERT_EQ(evicted.size(), 2u);
  EXPECT_EQ(evicted[0].base, P(1));
  EXPECT_EQ(evicted[1].base, P(2));
  EXPECT_EQ(cache.cached_bytes(), 2500);
  EXPECT_EQ(cache.Take(1500).base, P(4));
  EXPECT_EQ(cache.Take(1000).base, P(3));
}

TEST(BlockCacheTest, ABlockLargerThanTheCapIsReturnedAtOnce) {
  BlockCache cache(/*max_bytes=*/1000);
  cache.Put({P(1), 500});
  const std::vector<BlockCache::Block> back = cache.Put({P(2), 2000});
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].base, P(2));
  EXPECT_EQ(cache.cached_bytes(), 500);  // nothing else was evicted for it
  EXPECT_EQ(cache.Clear().size(), 1u);
  EXPECT_EQ(cache.cached_bytes(), 0);
}

}  // namespace
}  // namespace mogserve::engine
