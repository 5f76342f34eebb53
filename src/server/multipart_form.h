// multipart/form-data bodies (RFC 7578): the parts of a body, as views into it (no copies).
// Bounded: at most `max_parts` parts, part headers of at most 8 KiB each.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/http_error.h"

namespace mogserve::server {

struct FormPart {
  std::string name;      // Content-Disposition's name
  std::string filename;  // its filename, "" if none
  std::string_view data;
};

// Splits `body` by the boundary named in `content_type` ("multipart/form-data; boundary=...").
// The views in `parts` point into `body`. Errors: 400 malformed, 413 more than max_parts.
std::optional<HttpError> ParseMultipartForm(std::string_view content_type, std::string_view body,
                                            int max_parts, std::vector<FormPart>* parts);

}  // namespace mogserve::server
