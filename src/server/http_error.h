// What a client gets back for a refused request: {"error":{"code","message"}} with `status`.
#pragma once

#include <string>

namespace mogserve::server {

struct HttpError {
  int status = 400;
  std::string code;     // stable, machine-readable: "invalid_parameter", "unsupported_media_type"
  std::string message;  // for people: which field, what was wrong, what is allowed
};

}  // namespace mogserve::server
