#include "scheduler/outcome.h"

namespace mogserve::scheduler {

const char* OutcomeName(Outcome outcome) {
  switch (outcome) {
    case Outcome::kDone:
      return "done";
    case Outcome::kRejectedQueueFull:
      return "rejected_queue_full";
    case Outcome::kRejectedDeadline:
      return "rejected_deadline";
    case Outcome::kRejectedBadInput:
      return "rejected_bad_input";
    case Outcome::kFailed:
      return "failed";
    case Outcome::kCancelled:
      return "cancelled";
    case Outcome::kSuperseded:
      return "superseded";
  }
  return "unknown";
}

}  // namespace mogserve::scheduler
