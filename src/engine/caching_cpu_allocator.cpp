#include "engine/caching_cpu_allocator.h"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace mogserve::engine {
namespace {

// Each block starts with a header holding its rounded size; the caller's pointer follows it,
// keeping LibTorch's 64-byte alignment.
constexpr size_t kAlignment = 64;
constexpr size_t kHeader = 64;

size_t RoundUp(size_t n) {
  return (std::max<size_t>(n, 1) + kAlignment - 1) / kAlignment * kAlignment;
}

class CachingCpuAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t n) const override {
    const size_t size = RoundUp(n);
    void* base = TakeCached(size);
    if (base == nullptr) {
      base = std::aligned_alloc(kAlignment, size + kHeader);
      if (base == nullptr) throw std::bad_alloc();
      *static_cast<size_t*>(base) = size;
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.system_allocations;
      AddInUse(static_cast<int64_t>(size));
    }
    void* data = static_cast<char*>(base) + kHeader;
    return {data, data, &Delete, c10::Device(c10::DeviceType::CPU)};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &Delete; }

  static CachingCpuAllocator& Instance() {
    static CachingCpuAllocator* instance = new CachingCpuAllocator();  // never destroyed
    return *instance;
  }

  void set_max_cached_bytes(int64_t bytes) { max_cached_bytes_.store(bytes); }

  AllocatorStats stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }
  void ResetPeak() {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.peak_in_use_bytes = stats_.in_use_bytes;
  }

 private:
  static void Delete(void* data) {
    if (data == nullptr) return;
    Instance().Release(static_cast<char*>(data) - kHeader);
  }

  void* TakeCached(size_t size) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_blocks_.find(size);
    if (it == free_blocks_.end() || it->second.empty()) return nullptr;
    void* base = it->second.back();
    it->second.pop_back();
    ++stats_.cache_hits;
    stats_.cached_bytes -= static_cast<int64_t>(size);
    AddInUse(static_cast<int64_t>(size));
    return base;
  }

  void Release(void* base) {
    const size_t size = *static_cast<size_t*>(base);
    {
      std::lock_guard<std::mutex> lock(mu_);
      stats_.in_use_bytes -= static_cast<int64_t>(size);
      if (stats_.cached_bytes + static_cast<int64_t>(size) <= max_cached_bytes_.load()) {
        free_blocks_[size].push_back(base);
        stats_.cached_bytes += static_cast<int64_t>(size);
        return;
      }
    }
    std::free(base);
  }

  // Requires mu_.
  void AddInUse(int64_t size) const {
    stats_.in_use_bytes += size;
    stats_.peak_in_use_bytes = std::max(stats_.peak_in_use_bytes, stats_.in_use_bytes);
  }

  mutable std::mutex mu_;
  mutable std::unordered_map<size_t, std::vector<void*>> free_blocks_;  // guarded by mu_
  mutable AllocatorStats stats_;                                        // guarded by mu_
  std::atomic<int64_t> max_cached_bytes_{0};
};

std::once_flag g_install_once;
std::atomic<bool> g_installed{false};

}  // namespace

void InstallCachingCpuAllocator(int64_t max_cached_bytes) {
  CachingCpuAllocator::Instance().set_max_cached_bytes(max_cached_bytes);
  std::call_once(g_install_once, [] {
    c10::SetCPUAllocator(&CachingCpuAllocator::Instance(), /*priority=*/100);
    g_installed.store(true);
  });
}

bool CachingCpuAllocatorInstalled() {
  return g_installed.load();
}

AllocatorStats GetAllocatorStats() {
  return CachingCpuAllocator::Instance().stats();
}

void ResetPeakAllocatorStats() {
  CachingCpuAllocator::Instance().ResetPeak();
}

}  // namespace mogserve::engine
