// Helpers shared by the scheduler tests: an injected clock and compact request builders.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <utility>

#include "scheduler/batch_policy.h"

namespace mogserve::scheduler::testing {

using std::chrono::milliseconds;

// Test time: milliseconds since an arbitrary origin far from the epoch, so subtracting never
// underflows.
inline TimePoint At(double ms) {
  return TimePoint{} + std::chrono::hours(1) +
         std::chrono::duration_cast<Duration>(std::chrono::duration<double, std::milli>(ms));
}

struct RequestBuilder {
  Request r;
  RequestBuilder(uint64_t id, double arrival_ms) {
    r.id = id;
    r.arrival = At(arrival_ms);
    r.client = "client";
  }
  RequestBuilder& Prio(scheduler::Priority p) {
    r.priority = p;
    return *this;
  }
  RequestBuilder& Client(std::string c) {
    r.client = std::move(c);
    return *this;
  }
  RequestBuilder& Bucket(int b) {
    r.bucket = b;
    return *this;
  }
  RequestBuilder& Pixels(int64_t px) {
    r.pixel_cost = px;
    return *this;
  }
  RequestBuilder& Bytes(int64_t bytes) {
    r.byte_cost = bytes;
    return *this;
  }
  RequestBuilder& DeadlineAt(double ms) {
    r.deadline = At(ms);
    return *this;
  }
  RequestBuilder& LatestOnly() {
    r.latest_only = true;
    return *this;
  }
  operator Request() const { return r; }  // NOLINT: builder
};

inline std::unique_ptr<BatchPolicy> MakePolicy(const SchedulerConfig& config) {
  StatusOr<std::unique_ptr<BatchPolicy>> policy = BatchPolicy::Create(config);
  EXPECT_TRUE(policy.ok()) << policy.status().ToString();
  return std::move(policy).value();
}

// Admits a request that arrives at its own arrival time and must be accepted.
inline void MustAdmit(BatchPolicy& policy, const Request& r) {
  const AdmitResult result = policy.Admit(r, r.arrival);
  ASSERT_TRUE(result.accepted) << "request " << r.id << " refused as "
                               << OutcomeName(result.rejection);
}

inline EngineState Idle(int idle, int busy = 0) {
  return EngineState{idle, busy};
}

}  // namespace mogserve::scheduler::testing
