// A caching CPU allocator for LibTorch: freed blocks are kept and handed out again (best fit
// within 25% of waste, least-recently-freed evicted first at the cap: block_cache.h), so a
// steady stream of batches allocates no memory from the system, whatever their sizes.
//
// Why: glibc serves blocks >= 32 MiB with mmap and returns them with munmap, so every large
// activation (batch > 1 at 512x512 crosses that line) page-faults its whole buffer in again on
// each layer. Measured on the 2-core development machine (PyTorch 1.13, oneDNN 2.6): a depthwise
// + pointwise pair at 128ch x 128^2 took 0.4 + 1.4 ms per image at batch 1 but ~20 + 20 ms per
// image at batch 4 with the default allocator, and 0.5 + 1.4 ms at batch 4 with this one.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mogserve::engine {

struct AllocatorStats {
  int64_t system_allocations = 0;  // blocks obtained from the system (cache misses)
  int64_t cache_hits = 0;          // blocks served from the cache
  int64_t cached_bytes = 0;        // bytes held in the cache, free for reuse
  int64_t in_use_bytes = 0;        // bytes handed out and not yet freed
  int64_t peak_in_use_bytes = 0;
};

// Installs the allocator as LibTorch's CPU allocator (once per process; later calls only update
// the cap). Freed blocks are cached up to `max_cached_bytes`; beyond that the ones freed longest
// ago go back to the system. Thread-safe.
void InstallCachingCpuAllocator(int64_t max_cached_bytes);

// Gives every cached block back to the system (the cap stays); returns the bytes freed.
int64_t ReleaseCachedCpuMemory();

// False until InstallCachingCpuAllocator() was called.
bool CachingCpuAllocatorInstalled();

AllocatorStats GetAllocatorStats();

// Resets peak_in_use_bytes to the current in-use bytes (to measure one phase).
void ResetPeakAllocatorStats();

}  // namespace mogserve::engine
