#include "engine/caching_cpu_allocator.h"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <vector>

#include "engine/block_cache.h"

namespace mogserve::engine {
namespace {

// Each block starts with a header holding its rounded size; the caller's pointer follows it,
// keeping LibTorch's 64-byte alignment.
constexpr size_t kAlignment = 64;
constexpr size_t kHeader = 64;

size_t RoundUp(size_t n) {
  return (std::max<size_t>(n, 1) + kAlignment - 1) / kAlignment * kAlignment;
}

// Blocks of 2 MiB and more are mapped on their own, 2 MiB aligned, with transparent huge pages
// asked for (MADV_HUGEPAGE: Debian's default THP mode is "madvise"). A block's first use faults
// it in page by page, and on a VM a 4 KiB fault costs ~10 us: the first batch-8 pass of the SSD
// spent 480 of its 670 ms faulting its activations in; 2 MiB pages cut the faults 512-fold (a
// fresh 134 MiB buffer: 360 ms to touch with 4 KiB pages, 90-200 ms with huge pages on the Zen 5
// VM). MOGSERVE_HUGE_PAGES=0 maps them with plain pages (A/B).
constexpr size_t kHugePage = size_t{2} << 20;

bool HugePagesWanted() {
  static const bool wanted = [] {
    const char* env = std::getenv("MOGSERVE_HUGE_PAGES");
    return env == nullptr || std::strcmp(env, "0") != 0;
  }();
  return wanted;
}

size_t MappedLength(size_t bytes) {
  return (bytes + kHugePage - 1) / kHugePage * kHugePage;
}

// `bytes` includes the header; SystemFree must get the same count.
void* SystemAllocate(size_t bytes) {
  if (bytes < kHugePage) return std::aligned_alloc(kAlignment, bytes);
  const size_t length = MappedLength(bytes);
  // Over-map by one huge page and trim, so the block starts on a 2 MiB boundary.
  void* raw =
      mmap(nullptr, length + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + kHugePage - 1) / kHugePage * kHugePage;
  if (aligned > start) munmap(raw, aligned - start);
  const uintptr_t tail = start + length + kHugePage - (aligned + length);
  if (tail > 0) munmap(reinterpret_cast<void*>(aligned + length), tail);
  void* block = reinterpret_cast<void*>(aligned);
  if (HugePagesWanted()) madvise(block, length, MADV_HUGEPAGE);  // advice: failure is harmless
  return block;
}

void SystemFree(void* base, size_t bytes) {
  if (bytes < kHugePage) {
    std::free(base);
  } else {
    munmap(base, MappedLength(bytes));
  }
}

void FreeBlocks(const std::vector<BlockCache::Block>& blocks) {
  for (const BlockCache::Block& b : blocks) SystemFree(b.base, b.size + kHeader);
}

class CachingCpuAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t n) const override {
    const size_t size = RoundUp(n);
    void* base = TakeCached(size);
    if (base == nullptr) {
      base = SystemAllocate(size + kHeader);
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

  void set_max_cached_bytes(int64_t bytes) {
    std::vector<BlockCache::Block> release;
    {
      std::lock_guard<std::mutex> lock(mu_);
      cache_.set_max_bytes(bytes);
      if (cache_.cached_bytes() > bytes) release = cache_.Clear();
      stats_.cached_bytes = cache_.cached_bytes();
    }
    FreeBlocks(release);
  }

  int64_t ReleaseCached() {
    std::vector<BlockCache::Block> release;
    {
      std::lock_guard<std::mutex> lock(mu_);
      release = cache_.Clear();
      stats_.cached_bytes = cache_.cached_bytes();
    }
    int64_t bytes = 0;
    for (const BlockCache::Block& b : release) bytes += static_cast<int64_t>(b.size);
    FreeBlocks(release);
    return bytes;
  }

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
    const BlockCache::Block block = cache_.Take(size);
    if (block.base == nullptr) return nullptr;
    ++stats_.cache_hits;
    stats_.cached_bytes = cache_.cached_bytes();
    AddInUse(static_cast<int64_t>(block.size));
    return block.base;
  }

  void Release(void* base) {
    const size_t size = *static_cast<size_t*>(base);  // the block's capacity
    std::vector<BlockCache::Block> release;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stats_.in_use_bytes -= static_cast<int64_t>(size);
      release = cache_.Put({base, size});
      stats_.cached_bytes = cache_.cached_bytes();
    }
    FreeBlocks(release);
  }

  // Requires mu_.
  void AddInUse(int64_t size) const {
    stats_.in_use_bytes += size;
    stats_.peak_in_use_bytes = std::max(stats_.peak_in_use_bytes, stats_.in_use_bytes);
  }

  mutable std::mutex mu_;
  mutable BlockCache cache_;      // guarded by mu_
  mutable AllocatorStats stats_;  // guarded by mu_
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

int64_t ReleaseCachedCpuMemory() {
  return CachingCpuAllocator::Instance().ReleaseCached();
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
