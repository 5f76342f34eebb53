// BodyBudget: the request-body bytes held at once across every connection
// (HttpLimits::max_body_bytes_in_flight). A connection takes bytes before it reads them (the whole
// Content-Length, or each chunk as its header arrives) and its BodyLease gives them back when the
// request that holds the body is done with it. Thread-safe, lock-free.
#pragma once

#include <atomic>
#include <cstdint>

namespace mogserve::server::http {

class BodyBudget {
 public:
  explicit BodyBudget(int64_t capacity_bytes) : capacity_bytes_(capacity_bytes) {}

  // Takes `bytes` if that keeps the total within the capacity.
  bool TryTake(int64_t bytes);
  void Give(int64_t bytes) { in_use_bytes_.fetch_sub(bytes, std::memory_order_relaxed); }

  int64_t in_use_bytes() const { return in_use_bytes_.load(std::memory_order_relaxed); }
  int64_t capacity_bytes() const { return capacity_bytes_; }

 private:
  const int64_t capacity_bytes_;
  std::atomic<int64_t> in_use_bytes_{0};
};

// Bytes taken from a BodyBudget, given back on destruction or Release(). Move-only.
class BodyLease {
 public:
  BodyLease() = default;
  explicit BodyLease(BodyBudget* budget) : budget_(budget) {}
  BodyLease(BodyLease&& other) noexcept { *this = std::move(other); }
  BodyLease& operator=(BodyLease&& other) noexcept;
  BodyLease(const BodyLease&) = delete;
  BodyLease& operator=(const BodyLease&) = delete;
  ~BodyLease() { Release(); }

  // Takes `bytes` more; false (nothing taken) when the budget has no room.
  bool Grow(int64_t bytes);
  void Release();
  int64_t bytes() const { return bytes_; }

 private:
  BodyBudget* budget_ = nullptr;
  int64_t bytes_ = 0;
};

}  // namespace mogserve::server::http
