// One image's trip through the pipeline as the HTTP API sees it: the SubmitRequest made from a
// parsed request, and the status, error code and JSON body its outcome answers with. Shared by
// POST /v1/detect and the detection WebSocket.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "pipeline/pipeline.h"
#include "server/detect_request.h"

namespace mogserve::server {

// The pipeline request for `image` (its bytes are moved out) with the request's options over
// the model's `defaults`.
pipeline::SubmitRequest MakeSubmitRequest(ImagePart& image, const DetectParams& params,
                                          const DetectOptions& defaults, std::string client);

// Status and error code: done → {200, ""}; queue full → {503, "queue_full"}; deadline → 504;
// bad input → 400 invalid_image / 413 image_too_large / 415 unsupported_image_format; engine
// failure → 500; cancelled → 503; superseded → 409.
std::pair<int, std::string> HttpStatusOf(const pipeline::RequestResult& r);

// The result JSON (ModelScope's shape with `modelscope`), or the error JSON for an image that
// did not end done.
nlohmann::json ResultBody(const pipeline::RequestResult& r, bool modelscope);

}  // namespace mogserve::server
