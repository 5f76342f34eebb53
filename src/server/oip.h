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
// The transport-neutral pieces (parameters, IMAGE checks, outputs) are shared with gRPC.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipeline/pipeline.h"
#include "server/detect_request.h"
#include "server/http/http_message.h"

namespace mogserve::server::oip {

// LANDMARKS ([N, K, 5, 2], Detection::landmarks; zeros for a model without them) only when asked
// for by name: the others are the default set.
inline constexpr const char* kOutputNames[] = {"BOXES", "SCORES", "COUNT", "IMAGE_SIZE",
                                               "LANDMARKS"};
inline constexpr int kDefaultOutputCount = 4;

struct RequestedOutput {
  std::string name;  // one of kOutputNames
  bool binary = false;
};

struct InferRequest {
  std::string id;                 // echoed; "" = none given
  std::vector<ImagePart> images;  // named "IMAGE[i]"
  DetectParams params;
  std::vector<RequestedOutput> outputs;  // in the response's order
};

// --- The pieces both transports share (REST here, gRPC in server/grpc/grpc_service.h): the
// request's parameters, the IMAGE tensor's checks, the outputs asked for, and the output tensors.

// The request-level `parameters` (a JSON object; gRPC's InferParameter map arrives converted):
// score_threshold, max_faces, priority, timeout_ms (values checked as /v1: 422 naming a bad
// one), binary_data_output (a bool, into *binary_all); any other name → 400 invalid_parameter
// naming it and the allowed ones.
std::optional<HttpError> ApplyParameters(const nlohmann::json& parameters, InferRequest& r,
                                         bool* binary_all);

// The IMAGE input's name, datatype and shape: name IMAGE, datatype BYTES, shape [N] or [N, 1]
// (nullopt `shape`: absent or not integers), 1 <= N <= limits.max_images (413 beyond). *n = N.
std::optional<HttpError> CheckImageTensor(std::string_view name, std::string_view datatype,
                                          const std::optional<std::vector<int64_t>>& shape,
                                          const RequestLimits& limits, int64_t* n);

// A binary BYTES tensor's elements (each a uint32 little-endian length and its bytes) appended
// to r.images as IMAGE[i]; 400 when a length runs past the data.
std::optional<HttpError> SplitBinaryElements(std::string_view bytes, InferRequest& r);

// After the elements are in: as many as the shape says, none empty (400 naming IMAGE[i]).
std::optional<HttpError> CheckImageCount(int64_t n, const InferRequest& r);

// One requested output: a known name (else 400 naming it and the allowed ones), appended to
// r.outputs. AddAllOutputs: the default outputs, in kOutputNames order (no `outputs` given).
std::optional<HttpError> AddOutput(std::string_view name, bool binary, InferRequest& r);
void AddAllOutputs(bool binary, InferRequest& r);

// One output tensor's values for every image: FP32 (`f`) or INT32 (`i`), row-major.
struct OutputTensor {
  std::string name;
  std::string datatype;  // "FP32", "INT32"
  std::vector<int64_t> shape;
  std::vector<float> f;
  std::vector<int32_t> i;
  std::string Bytes() const;  // raw little-endian values
  nlohmann::json Data() const;
};

// All-or-nothing: the error of the first image that did not end done (its status and code,
// the message naming IMAGE[i]); nullopt when every image is done.
std::optional<HttpError> FirstFailure(const InferRequest& request,
                                      const std::vector<pipeline::RequestResult>& results);

// The requested outputs, in request.outputs' order, for results that all ended done.
std::vector<OutputTensor> OutputTensors(const InferRequest& request,
                                        const std::vector<pipeline::RequestResult>& results);

// --- REST.

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
