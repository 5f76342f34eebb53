// Finished results of an ordered job waiting for their turn: results arrive in any order (from
// worker threads) and are taken in input order (by the job's thread). Slot i % window holds
// input i, so at most `window` inputs may be in flight (submitted and not yet taken): the
// caller keeps submitted - taken <= window. Used by `mogserve detect` and the offline pipeline.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

namespace mogserve {

template <typename T>
class ReorderWindow {
 public:
  explicit ReorderWindow(int window) : slots_(window) {}

  void Put(int64_t index, T result) {
    std::lock_guard<std::mutex> lock(mu_);
    slots_[index % slots_.size()].emplace(std::move(result));
    cv_.notify_all();
  }
  // Waits for input `index` and takes it.
  T Take(int64_t index) {
    std::unique_lock<std::mutex> lock(mu_);
    std::optional<T>& slot = slots_[index % slots_.size()];
    cv_.wait(lock, [&] { return slot.has_value(); });
    T r = std::move(*slot);
    slot.reset();
    return r;
  }
  // Whether input `index` has arrived (Take would not wait).
  bool Ready(int64_t index) {
    std::lock_guard<std::mutex> lock(mu_);
    return slots_[index % slots_.size()].has_value();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::optional<T>> slots_;  // guarded by mu_
};

}  // namespace mogserve
