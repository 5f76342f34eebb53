#include "server/http/body_budget.h"

#include <utility>

namespace mogserve::server::http {

bool BodyBudget::TryTake(int64_t bytes) {
  int64_t used = in_use_bytes_.load(std::memory_order_relaxed);
  do {
    if (bytes > capacity_bytes_ - used) return false;
  } while (!in_use_bytes_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
  return true;
}

BodyLease& BodyLease::operator=(BodyLease&& other) noexcept {
  if (this != &other) {
    Release();
    budget_ = std::exchange(other.budget_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

bool BodyLease::Grow(int64_t bytes) {
  if (budget_ == nullptr || bytes <= 0) return true;
  if (!budget_->TryTake(bytes)) return false;
  bytes_ += bytes;
  return true;
}

void BodyLease::Release() {
  if (budget_ != nullptr && bytes_ > 0) budget_->Give(bytes_);
  bytes_ = 0;
}

}  // namespace mogserve::server::http
