// Parsing one POST /v1/detect request (DESIGN.md §6) from its content type, body and query
// parameters into images and options, with the HTTP error a bad request deserves. No sockets:
// the HTTP server hands in what it read, and the fuzz target calls it directly. Nothing here
// recurses on client data: JSON nesting is bounded while it is parsed.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "mogserve/options.h"
#include "options/option_table.h"
#include "server/http_error.h"

namespace mogserve::server {

// What the request sets for itself (the option table's request options).
using DetectParams = RequestOptions;

// One encoded picture of a request. Its bytes are copied once out of the request (a raw body,
// a multipart part, a binary tensor) or decoded once from base64, and from here on only moved:
// into the pipeline's ImageInput, then to image::Decode.
struct ImagePart {
  std::string name;  // the multipart file name, or "image" / "images[i]"
  std::vector<uint8_t> bytes;
};

// `data` as an image's bytes: the one copy out of the request's body.
inline std::vector<uint8_t> ImageBytes(std::string_view data) {
  return std::vector<uint8_t>(data.begin(), data.end());
}

struct DetectRequest {
  std::vector<ImagePart> images;
  DetectParams params;
  // multipart with several `image` fields, or JSON "images": the reply is a list.
  bool many = false;
};

struct RequestLimits {
  int max_images = 32;      // per request (413)
  int max_form_parts = 64;  // multipart parts, images and option fields together (413)
  int max_json_depth = 8;   // nesting of a JSON body, checked while parsing (400)
};

// The options among `query` (the option table's request options: score_threshold, max_faces,
// priority, timeout_ms, format, ...) into `params`; 422 naming the first bad one and what is
// allowed.
// `surface`: the option table's surface the options come from (opt::kHttp, opt::kOip).
std::optional<HttpError> ParseDetectOptions(const std::multimap<std::string, std::string>& query,
                                            DetectParams* params, unsigned surface);

// The body's media type decides how it is read; refused types get 415 (naming the accepted
// ones, and how to send a photo with curl when it came as a form). Checked from the header,
// before the body is read.
std::optional<HttpError> CheckDetectContentType(std::string_view content_type);

// `query` holds the URL's query parameters; for multipart and JSON bodies the same options may
// also come as form fields / JSON members (the body wins). A raw upload's image is copied out of
// `body`, which is freed at once. On failure returns the error:
//   415 unsupported content type, 400 malformed multipart / JSON / base64 (or JSON nested deeper
//   than max_json_depth), 422 a bad option (which one, what is allowed), 413 too many images or
//   parts, 400 no image.
struct ParsedDetectRequest {
  std::optional<HttpError> error;
  DetectRequest request;
};
ParsedDetectRequest ParseDetectRequest(std::string_view content_type, std::string body,
                                       const std::multimap<std::string, std::string>& query,
                                       const RequestLimits& limits);

// Parses `body` into `doc`, refusing nesting deeper than max_depth while reading (so nothing
// later recurses deeply on client data): 400 json_too_deep or bad_request (not JSON).
std::optional<HttpError> ParseJsonLimited(std::string_view body, int max_depth,
                                          nlohmann::json* doc);

// Standard base64 (RFC 4648) with optional padding and ASCII whitespace; also accepts a
// "data:<type>;base64," prefix. nullopt when a character is outside the alphabet.
std::optional<std::vector<uint8_t>> DecodeBase64(std::string_view text);
// Standard base64 with padding.
std::string EncodeBase64(std::span<const uint8_t> bytes);

// 422 invalid_parameter when crop_size is set with format=modelscope (the size itself is the
// option table's to check).
std::optional<HttpError> CheckCropSize(const DetectParams& params);

}  // namespace mogserve::server
