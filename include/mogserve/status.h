// Status and StatusOr<T>: how the library reports errors. No exception crosses a layer boundary;
// LibTorch exceptions are caught in model/ and engine/ and turned into a Status.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace mogserve {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,     // the caller gave a bad value (flag, option, parameter)
  kInvalidData,         // input bytes are corrupt, truncated or not what they claim to be
  kUnsupported,         // a format or feature we do not handle
  kResourceExhausted,   // a limit was hit (pixels, bytes, queue)
  kNotFound,            // a file or key is missing
  kFailedPrecondition,  // the system is not in a state to do this (model not loaded, ...)
  kDeadlineExceeded,
  kCancelled,
  kInternal,       // a bug or an error from a library below us
  kUnavailable,    // a resource this build supports is missing here (no GPU driver, no device)
  kUnimplemented,  // this build knows the request but the code to serve it is not written yet
};

// Stable lower-case name of a code, e.g. "invalid_data"; used in logs and JSON errors.
const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "invalid_data: JPEG is truncated"
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
inline Status InvalidData(std::string m) {
  return {StatusCode::kInvalidData, std::move(m)};
}
inline Status Unsupported(std::string m) {
  return {StatusCode::kUnsupported, std::move(m)};
}
inline Status ResourceExhausted(std::string m) {
  return {StatusCode::kResourceExhausted, std::move(m)};
}
inline Status NotFound(std::string m) {
  return {StatusCode::kNotFound, std::move(m)};
}
inline Status FailedPrecondition(std::string m) {
  return {StatusCode::kFailedPrecondition, std::move(m)};
}
inline Status Internal(std::string m) {
  return {StatusCode::kInternal, std::move(m)};
}
inline Status Unavailable(std::string m) {
  return {StatusCode::kUnavailable, std::move(m)};
}
inline Status Unimplemented(std::string m) {
  return {StatusCode::kUnimplemented, std::move(m)};
}

// Holds either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(Status status) : status_(std::move(status)) { assert(!status_.ok()); }  // NOLINT
  StatusOr(T value) : value_(std::move(value)) {}                                  // NOLINT

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }

  T& value() & {
    assert(ok());
    return *value_;
  }
  const T& value() const& {
    assert(ok());
    return *value_;
  }
  T&& value() && {
    assert(ok());
    return std::move(*value_);
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace mogserve

// Early-return helpers. MOGSERVE_ASSIGN_OR_RETURN(auto x, Expr()) declares x from a StatusOr.
#define MOGSERVE_RETURN_IF_ERROR(expr) \
  do {                                 \
    ::mogserve::Status _st = (expr);   \
    if (!_st.ok()) return _st;         \
  } while (0)

#define MOGSERVE_CONCAT_INNER(a, b) a##b
#define MOGSERVE_CONCAT(a, b) MOGSERVE_CONCAT_INNER(a, b)
#define MOGSERVE_ASSIGN_OR_RETURN(lhs, expr) \
  MOGSERVE_ASSIGN_OR_RETURN_IMPL(MOGSERVE_CONCAT(_statusor_, __LINE__), lhs, expr)
#define MOGSERVE_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                   \
  if (!tmp.ok()) return tmp.status();                  \
  lhs = std::move(tmp).value()
