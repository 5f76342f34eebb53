#include "engine/block_cache.h"

namespace mogserve::engine {

BlockCache::Block BlockCache::Take(size_t size) {
  auto it = by_size_.lower_bound(size);
  if (it == by_size_.end() || static_cast<double>(it->first) > size * (1.0 + max_waste_)) {
    return {};
  }
  const Block block = it->second->block;
  lru_.erase(it->second);
  by_size_.erase(it);
  cached_bytes_ -= static_cast<int64_t>(block.size);
  return block;
}

std::vector<BlockCache::Block> BlockCache::Put(Block block) {
  std::vector<Block> release;
  if (static_cast<int64_t>(block.size) > max_bytes_) {
    release.push_back(block);
    return release;
  }
  while (cached_bytes_ + static_cast<int64_t>(block.size) > max_bytes_) {
    const Entry& oldest = lru_.front();
    release.push_back(oldest.block);
    cached_bytes_ -= static_cast<int64_t>(oldest.block.size);
    by_size_.erase(oldest.by_size);
    lru_.pop_front();
  }
  lru_.push_back({block, {}});
  lru_.back().by_size = by_size_.emplace(block.size, std::prev(lru_.end()));
  cached_bytes_ += static_cast<int64_t>(block.size);
  return release;
}

std::vector<BlockCache::Block> BlockCache::Clear() {
  std::vector<Block> release;
  for (const Entry& e : lru_) release.push_back(e.block);
  lru_.clear();
  by_size_.clear();
  cached_bytes_ = 0;
  return release;
}

}  // namespace mogserve::engine
