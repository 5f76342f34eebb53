#include "mogserve/status.h"

#include "common/enum_names.h"

namespace mogserve {

constexpr EnumName<StatusCode> kStatusCodeNames[] = {
    {StatusCode::kOk, "ok"},
    {StatusCode::kInvalidArgument, "invalid_argument"},
    {StatusCode::kInvalidData, "invalid_data"},
    {StatusCode::kUnsupported, "unsupported"},
    {StatusCode::kResourceExhausted, "resource_exhausted"},
    {StatusCode::kNotFound, "not_found"},
    {StatusCode::kFailedPrecondition, "failed_precondition"},
    {StatusCode::kDeadlineExceeded, "deadline_exceeded"},
    {StatusCode::kCancelled, "cancelled"},
    {StatusCode::kInternal, "internal"},
    {StatusCode::kUnavailable, "unavailable"},
    {StatusCode::kUnimplemented, "unimplemented"}};

const char* StatusCodeName(StatusCode code) {
  return NameOf(kStatusCodeNames, code, "unknown");
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  return std::string(StatusCodeName(code_)) + ": " + message_;
}

}  // namespace mogserve
