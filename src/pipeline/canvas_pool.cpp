#include "pipeline/canvas_pool.h"

#include <utility>

namespace mogserve::pipeline {

std::vector<uint8_t> CanvasPool::Acquire(int64_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.acquisitions;
    auto it = free_.find(bytes);
    if (it != free_.end() && !it->second.empty()) {
      std::vector<uint8_t> buffer = std::move(it->second.back());
      it->second.pop_back();
      --stats_.free_buffers;
      stats_.free_bytes -= bytes;
      return buffer;
    }
    ++stats_.allocations;
  }
  // Allocated outside the lock: a large canvas takes a while to zero.
  return std::vector<uint8_t>(static_cast<size_t>(bytes));
}

void CanvasPool::Release(std::vector<uint8_t> buffer) {
  if (buffer.empty()) return;
  const auto bytes = static_cast<int64_t>(buffer.size());
  std::lock_guard<std::mutex> lock(mu_);
  free_[bytes].push_back(std::move(buffer));
  ++stats_.free_buffers;
  stats_.free_bytes += bytes;
}

int64_t CanvasPool::Trim(int64_t keep_bytes) {
  std::vector<std::vector<uint8_t>> freed;  // destroyed after the lock is released
  int64_t freed_bytes = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [bytes, buffers] : free_) {
      while (!buffers.empty() && stats_.free_bytes > keep_bytes) {
        freed.push_back(std::move(buffers.back()));
        buffers.pop_back();
        --stats_.free_buffers;
        stats_.free_bytes -= bytes;
        freed_bytes += bytes;
      }
    }
  }
  return freed_bytes;
}

CanvasPool::Stats CanvasPool::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace mogserve::pipeline
