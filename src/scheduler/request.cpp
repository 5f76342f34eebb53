#include "scheduler/request.h"

namespace mogserve::scheduler {

const char* PriorityName(Priority priority) {
  switch (priority) {
    case Priority::kInteractive:
      return "interactive";
    case Priority::kApi:
      return "api";
    case Priority::kBulk:
      return "bulk";
    case Priority::kStream:
      return "stream";
  }
  return "unknown";
}

std::optional<Priority> ParsePriority(std::string_view name) {
  for (int p = 0; p < kNumPriorities; ++p) {
    if (name == PriorityName(static_cast<Priority>(p))) return static_cast<Priority>(p);
  }
  return std::nullopt;
}

}  // namespace mogserve::scheduler
