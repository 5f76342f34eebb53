// CanvasPool: reusable canvas buffers, so that in steady state the pipeline allocates no input
// buffer per request (DESIGN.md §3, "planned and reused instead of allocated per request"). A
// request's canvas is taken from the pool when it is pre-processed and given back as soon as the
// engine has copied it into its staging buffer (after Forward), so the buffers in circulation are
// bounded by the queue capacity plus the batches in flight. A burst that filled the queue leaves
// many free buffers behind; Trim() gives them back once the server is idle, so that the steady
// state under load allocates nothing and an idle server does not keep the burst's memory.
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace mogserve::pipeline {

class CanvasPool {
 public:
  struct Stats {
    int64_t allocations = 0;  // buffers created (a pool miss)
    int64_t acquisitions = 0;
    int64_t free_buffers = 0;  // held for reuse now
    int64_t free_bytes = 0;
  };

  // A buffer of exactly `bytes` bytes, contents unspecified. Thread-safe.
  std::vector<uint8_t> Acquire(int64_t bytes);
  // Gives a buffer (from Acquire) back for reuse. Empty buffers are ignored. Thread-safe.
  void Release(std::vector<uint8_t> buffer);
  // Frees free buffers until at most `keep_bytes` remain; returns the bytes freed. Thread-safe.
  int64_t Trim(int64_t keep_bytes);
  Stats stats() const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<int64_t, std::vector<std::vector<uint8_t>>> free_;  // guarded by mu_
  Stats stats_;                                                          // guarded by mu_
};

}  // namespace mogserve::pipeline
