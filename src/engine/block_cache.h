// BlockCache: the reuse policy of the caching CPU allocator (caching_cpu_allocator.cpp), kept
// free of LibTorch and of locking so it can be tested on its own. Not thread-safe; the allocator
// calls it under its mutex.
//
// Policy, and why:
// - Best fit with bounded waste. A request takes the smallest cached block of at least its size
//   and at most max_waste larger. Exact-size matching missed whenever a batch size was new (a
//   batch of 15 after batches of 16): the continuous policy forms batches of every size, and
//   each miss costs a fresh allocation, page-faulted in layer by layer.
// - Least-recently-freed eviction. When caching a freed block would exceed the cap, the blocks
//   freed longest ago go back to the system first. Dropping the newly freed block instead (the
//   first version) kept the cache full of shapes that no longer ran — after a benchmark of
//   batches 1-32 the working set of the next shapes was never cached, and every pass fell into
//   glibc's mmap/munmap path: a MogFace batch that takes 9.5 s warm took over 16 s.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <vector>

namespace mogserve::engine {

class BlockCache {
 public:
  // `max_bytes`: most bytes held while free; `max_waste`: a block may serve a request of
  // size / (1 + max_waste) or more (0.25: up to 20% of the block unused).
  explicit BlockCache(int64_t max_bytes = 0, double max_waste = 0.25)
      : max_bytes_(max_bytes), max_waste_(max_waste) {}

  struct Block {
    void* base = nullptr;
    size_t size = 0;  // the block's capacity
  };

  // The best cached block for `size` bytes (removed from the cache), or {nullptr, 0}.
  Block Take(size_t size);
  // Caches a freed block; returns the blocks the caller must now free (the evicted ones, or this
  // one when it alone exceeds the cap).
  std::vector<Block> Put(Block block);

  void set_max_bytes(int64_t bytes) { max_bytes_ = bytes; }
  // Empties the cache; returns every block for the caller to free.
  std::vector<Block> Clear();
  int64_t cached_bytes() const { return cached_bytes_; }
  size_t blocks() const { return lru_.size(); }

 private:
  struct Entry {
    Block block;
    std::multimap<size_t, std::list<Entry>::iterator>::iterator by_size;
  };

  int64_t max_bytes_;
  double max_waste_;
  int64_t cached_bytes_ = 0;
  std::list<Entry> lru_;  // front: freed longest ago
  std::multimap<size_t, std::list<Entry>::iterator> by_size_;
};

}  // namespace mogserve::engine
