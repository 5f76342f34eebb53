#include "server/answer_status.h"

#include "scheduler/outcome.h"

namespace mogserve::server {
namespace {

// Every way a detection request ends.
constexpr AnswerStatus kAnswers[] = {
    {"", 200, GrpcCode::kOk},
    {"queue_full", 503, GrpcCode::kResourceExhausted},
    {"deadline_exceeded", 504, GrpcCode::kDeadlineExceeded},
    {"unsupported_image_format", 415, GrpcCode::kInvalidArgument},
    {"image_too_large", 413, GrpcCode::kResourceExhausted},
    {"invalid_image", 400, GrpcCode::kInvalidArgument},
    {"inference_failed", 500, GrpcCode::kInternal},
    {"cancelled", 503, GrpcCode::kUnavailable},
    {"superseded", 409, GrpcCode::kAborted},
};

// The other errors (request parsing, auth, routes), by HTTP status.
constexpr std::pair<int, GrpcCode> kByHttpStatus[] = {
    {200, GrpcCode::kOk},           {400, GrpcCode::kInvalidArgument},
    {415, GrpcCode::kInvalidArgument}, {422, GrpcCode::kInvalidArgument},
    {401, GrpcCode::kUnauthenticated}, {404, GrpcCode::kNotFound},
    {409, GrpcCode::kAborted},      {413, GrpcCode::kResourceExhausted},
    {500, GrpcCode::kInternal},     {503, GrpcCode::kUnavailable},
    {504, GrpcCode::kDeadlineExceeded},
};

std::string_view CodeOf(const pipeline::RequestResult& r) {
  using scheduler::Outcome;
  switch (r.outcome) {
    case Outcome::kDone: return "";
    case Outcome::kRejectedQueueFull: return "queue_full";
    case Outcome::kRejectedDeadline: return "deadline_exceeded";
    case Outcome::kFailed: return "inference_failed";
    case Outcome::kCancelled: return "cancelled";
    case Outcome::kSuperseded: return "superseded";
    case Outcome::kRejectedBadInput: break;
  }
  if (r.status.code() == StatusCode::kUnsupported) return "unsupported_image_format";
  if (r.status.code() == StatusCode::kResourceExhausted) return "image_too_large";
  return "invalid_image";
}

const AnswerStatus* Find(std::string_view code) {
  for (const AnswerStatus& a : kAnswers) {
    if (a.code == code) return &a;
  }
  return nullptr;
}

}  // namespace

AnswerStatus StatusOf(const pipeline::RequestResult& r) {
  const AnswerStatus* found = Find(CodeOf(r));
  return found != nullptr ? *found : AnswerStatus{"internal", 500, GrpcCode::kInternal};
}

GrpcCode GrpcCodeOf(int http_status, std::string_view code) {
  if (const AnswerStatus* found = Find(code); found != nullptr && found->http == http_status) {
    return found->grpc;
  }
  for (const auto& [http, grpc] : kByHttpStatus) {
    if (http == http_status) return grpc;
  }
  return GrpcCode::kUnknown;
}

}  // namespace mogserve::server
