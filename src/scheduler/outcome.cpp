#include "scheduler/outcome.h"

#include "common/enum_names.h"

namespace mogserve::scheduler {

constexpr EnumName<Outcome> kOutcomeNames[] = {{Outcome::kDone, "done"},
                                               {Outcome::kRejectedQueueFull, "rejected_queue_full"},
                                               {Outcome::kRejectedDeadline, "rejected_deadline"},
                                               {Outcome::kRejectedBadInput, "rejected_bad_input"},
                                               {Outcome::kFailed, "failed"},
                                               {Outcome::kCancelled, "cancelled"},
                                               {Outcome::kSuperseded, "superseded"}};

const char* OutcomeName(Outcome outcome) {
  return NameOf(kOutcomeNames, outcome, "unknown");
}

}  // namespace mogserve::scheduler
