// How a request ends, on every transport: the error code clients see, its HTTP status and its
// gRPC code, in one table (answer_status.cpp). /v1/detect, the WebSocket, OIP REST and OIP gRPC
// all answer through it, so a new way to fail is one row.
#pragma once

#include <string_view>

#include "pipeline/pipeline.h"

namespace mogserve::server {

// gRPC's status codes (grpc::StatusCode's values, fixed by the gRPC protocol), without gRPC's
// headers: the server library builds without gRPC.
// clang-format off
enum class GrpcCode : int {
  kOk = 0, kCancelled = 1, kUnknown = 2, kInvalidArgument = 3, kDeadlineExceeded = 4,
  kNotFound = 5, kResourceExhausted = 8, kAborted = 10, kInternal = 13, kUnavailable = 14,
  kUnauthenticated = 16,
};
// clang-format on

struct AnswerStatus {
  std::string_view code;  // "" for success, else the error's code ("queue_full")
  int http = 200;
  GrpcCode grpc = GrpcCode::kOk;
};

// The status of a pipeline result (its outcome; for bad input, what the decoder said).
AnswerStatus StatusOf(const pipeline::RequestResult& r);

// The gRPC code of an HTTP error: the table's row for `code`, else by its HTTP status (400, 415
// and 422 invalid argument, 401 unauthenticated, 404 not found, 409 aborted, 413 resource
// exhausted, 500 internal, 503 unavailable, 504 deadline exceeded, anything else unknown).
GrpcCode GrpcCodeOf(int http_status, std::string_view code);

}  // namespace mogserve::server
