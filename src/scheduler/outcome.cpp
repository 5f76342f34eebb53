#include "scheduler/outcome.h"

#include "common/enum_names.h"

namespace mogserve::scheduler {

constexpr EnumNames<Outcome, Outcome::kSuperseded> kOutcomeNames{
    {"done", "rejected_queue_full", "rejected_deadline", "rejected_bad_input", "failed",
     "cancelled", "superseded"}};

const char* OutcomeName(Outcome outcome) {
  return NameOf(kOutcomeNames, outcome, "unknown");
}

}  // namespace mogserve::scheduler
