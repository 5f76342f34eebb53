// Parsing one POST /v1/detect request (DESIGN.md §6) from its content type, body and query
// parameters into images and options, with the HTTP error a bad request deserves. No sockets:
// the HTTP server hands in what it read, and the fuzz target calls it directly.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scheduler/request.h"

namespace mogserve::server {

// What the client gets back for a refused request: {"error":{"code","message"}} with `status`.
struct HttpError {
  int status = 400;
  std::string code;     // stable, machine-readable: "invalid_parameter", "unsupported_media_type"
  std::string message;  // for people: which field, what was wrong, what is allowed
};

struct DetectParams {
  std::optional<float> score_threshold;  // 0..1
  std::optional<int> max_faces;          // 1..10000
  scheduler::Priority priority = scheduler::Priority::kApi;
  std::optional<int64_t> timeout_ms;  // > 0; may only shorten the server's timeout
  bool modelscope_format = false;     // format=modelscope: {"scores":[],"boxes":[]}
};

struct ImagePart {
  std::string name;  // the multipart file name, or "image" / "images[i]"
  std::string bytes;
};

struct DetectRequest {
  std::vector<ImagePart> images;
  DetectParams params;
  // multipart with several `image` fields, or JSON "images": the reply is a list.
  bool many = false;
};

struct RequestLimits {
  int64_t max_body_bytes = 64 << 20;  // checked by the server before reading; repeated here
  int max_images = 32;                // per request
};

// The fields of a multipart/form-data body, as the HTTP library parsed them.
struct FormPart {
  std::string name;
  std::string filename;
  std::string_view data;
};

// `query` holds the URL's query parameters; for multipart and JSON bodies the same options may
// also come as form fields / JSON members (the body wins). A multipart body arrives already
// split into `parts` (cpp-httplib parses it while reading); `body` is then empty. On failure
// returns the error:
//   415 unsupported content type (names the accepted ones), 400 malformed multipart / JSON /
//   base64, 422 a bad option (which one, what is allowed), 413 too many images, 400 no image.
struct ParsedDetectRequest {
  std::optional<HttpError> error;
  DetectRequest request;
};
ParsedDetectRequest ParseDetectRequest(std::string_view content_type, std::string_view body,
                                       const std::vector<FormPart>& parts,
                                       const std::multimap<std::string, std::string>& query,
                                       const RequestLimits& limits);

// Standard base64 (RFC 4648) with optional padding and ASCII whitespace; also accepts a
// "data:<type>;base64," prefix. nullopt when a character is outside the alphabet.
std::optional<std::string> DecodeBase64(std::string_view text);

}  // namespace mogserve::server
