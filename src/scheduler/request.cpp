#include "scheduler/request.h"

#include "common/enum_names.h"

namespace mogserve::scheduler {

constexpr EnumNames<Priority, Priority::kStream> kPriorityNames{
    {"interactive", "api", "bulk", "stream"}};

const char* PriorityName(Priority priority) {
  return NameOf(kPriorityNames, priority, "unknown");
}

std::optional<Priority> ParsePriority(std::string_view name) {
  return FindByName(kPriorityNames, name);
}

}  // namespace mogserve::scheduler
