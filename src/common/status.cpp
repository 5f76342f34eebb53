#include "mogserve/status.h"

#include "common/enum_names.h"

namespace mogserve {

constexpr EnumNames<StatusCode, StatusCode::kUnimplemented> kStatusCodeNames{
    {"ok", "invalid_argument", "invalid_data", "unsupported", "resource_exhausted", "not_found",
     "failed_precondition", "deadline_exceeded", "cancelled", "internal", "unavailable",
     "unimplemented"}};

const char* StatusCodeName(StatusCode code) {
  return NameOf(kStatusCodeNames, code, "unknown");
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  return std::string(StatusCodeName(code_)) + ": " + message_;
}

}  // namespace mogserve
