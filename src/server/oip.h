// The Open Inference Protocol (KServe v2, "OIP") over REST, as specs/scale_out.md §1 defines it
// for a face detector: what a Triton or KServe client sends to /v2/models/{name}/infer and what
// it gets back. No sockets: the HTTP server hands in the body and routes; the fuzz target and
// the unit tests call these directly.
//
// Request: one input `IMAGE`, datatype BYTES, shape [N] or [N, 1], 1 <= N <= max_images: N
// encoded pictures, as base64 strings in JSON `data` (content_type "base64" if given), or in
// the binary tensor extension (Triton's layout: the header Inference-Header-Content-Length = J,
// the first J body bytes are the JSON, then each binary input's `binary_data_size` bytes, a
// BYTES element being a uint32 little-endian length and its bytes). Request `parameters`:
// score_threshold, max_faces, priority, timeout_ms (as /v1), binary_data_output; `outputs`
// selects and orders the outputs (each may ask `binary_data`).
//
// Response outputs: BOXES FP32 [N, K, 4] (x1, y1, x2, y2 in the picture's pixels, as /v1), K =
// the most faces of any image (rows past COUNT[i] are 0); SCORES FP32 [N, K] (descending);
// COUNT INT32 [N]; IMAGE_SIZE INT32 [N, 2] (width, height). JSON `data` is flat, row-major;
// binary outputs follow the JSON as raw little-endian values.
//
// Errors: {"error": "<code>: <message>"} (the protocol wants a string), the statuses of /v1.
#pragma once

#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipeline/pipeline.h"
#include "server/detect_request.h"
#include "server/http/http_message.h"

namespace mogserve::server::oip {

inline constexpr const char* kOutputNames[] = {"BOXES", "SCORES", "COUNT", "IMAGE_SIZE"};

struct RequestedOutput {
  std::string name;  // one of kOutputNames
  bool binary = false;
};

struct InferRequest {
  std::string id;                   // echoed; "" = none given
  std::vector<ImagePart> images;    // named "IMAGE[i]"
  DetectParams params;
  std::vector<RequestedOutput> outputs;  // in the response's order
};

// `header_length`: the Inference-Header-Content-Length header ("" when absent: a JSON body).
std::variant<InferRequest, HttpError> ParseInferRequest(std::string_view header_length,
                                                        std::string_view body,
                                                        const RequestLimits& limits);

// The response to `request` once every image is done; all-or-nothing: the first image that did
// not end done fails the whole request with its status, naming IMAGE[i].
http::HttpResponse InferResponse(const InferRequest& request, const std::string& model_name,
                                 const std::vector<pipeline::RequestResult>& results);

http::HttpResponse ErrorResponse(const HttpError& error);

// GET /v2 and GET /v2/models/{name}.
nlohmann::json ServerMetadata();
nlohmann::json ModelMetadata(const std::string& model_name, const std::string& platform);

}  // namespace mogserve::server::oip
