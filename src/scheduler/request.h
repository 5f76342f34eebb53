// Request: what the scheduler knows about one queued image. The pixels themselves stay with the
// pipeline; the scheduler sees only the costs and the keys it orders by.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mogserve::scheduler {

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;
using Duration = Clock::duration;

// "No deadline". Every comparison against a deadline treats this value as "never".
inline constexpr TimePoint kNoDeadline = TimePoint::max();

// Priority classes, highest first. The numeric value is the rank used for ordering and aging.
enum class Priority : int {
  kInteractive = 0,  // a person waiting in the web UI
  kApi = 1,          // programmatic API callers
  kBulk = 2,         // batch work: `mogserve eval`, HTTP callers that ask for it
  kStream = 3,       // video frames: plentiful, replaceable by the next frame
};
inline constexpr int kNumPriorities = 4;

// "interactive", "api", "bulk", "stream".
const char* PriorityName(Priority priority);
// Inverse of PriorityName; nullopt for an unknown name.
std::optional<Priority> ParsePriority(std::string_view name);

struct Request {
  uint64_t id = 0;  // unique among requests the scheduler holds; chosen by the caller
  int bucket = 0;   // shape bucket index, 0 <= bucket < SchedulerConfig::num_buckets
  // Cost against max_batch_pixels: the padded bucket area is the honest cost, since that is what
  // the engine computes on; the pipeline decides. Must be > 0.
  int64_t pixel_cost = 1;
  // Memory held while queued (decoded + pre-processed tensor), counted against queue capacity.
  int64_t byte_cost = 0;
  Priority priority = Priority::kApi;
  // Client (API key, connection, tenant) or video stream id. Round-robin fairness is per client
  // within one (bucket, priority class); latest_only superseding is per client.
  std::string client;
  // Video frames: a newer latest_only request from the same client replaces the queued older one.
  bool latest_only = false;
  // When the request reached the server (before decoding), so queue and deadline math include
  // decode time. max_delay and aging count from here.
  TimePoint arrival{};
  // The client's own deadline, or kNoDeadline. The scheduler uses
  // min(deadline, arrival + default_timeout): a request may only shorten the server's timeout.
  TimePoint deadline = kNoDeadline;
};

}  // namespace mogserve::scheduler
