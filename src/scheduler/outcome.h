// Outcome: the one way each request ends. Every accepted or refused request ends exactly once.
#pragma once

#include <cstdint>

namespace mogserve::scheduler {

enum class Outcome : int {
  kDone = 0,           // ran and produced a result (reported by the pipeline)
  kRejectedQueueFull,  // refused at admission: request count or byte capacity reached
  kRejectedDeadline,   // refused at admission, or removed while queued, because its deadline
                       // could not be met even if it ran alone at once; it never ran
  kRejectedBadInput,   // malformed request (unknown bucket, zero cost, duplicate id, ...)
  kFailed,             // the engine failed its batch (reported by the pipeline)
  kCancelled,          // cancelled while queued (client gone, or shutdown without drain)
  kSuperseded,         // a newer frame of the same latest_only stream replaced it
};
inline constexpr int kNumOutcomes = 7;

// Stable metric label, e.g. "rejected_queue_full".
const char* OutcomeName(Outcome outcome);

// A request the scheduler removed, with the reason; the pipeline completes it with that outcome.
struct Ended {
  uint64_t id = 0;
  Outcome outcome = Outcome::kDone;
};

}  // namespace mogserve::scheduler
