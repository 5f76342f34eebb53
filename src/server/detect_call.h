// The server's side of the one request path (pipeline/detect_call.h): a parsed request's images
// as a DetectCall, and the status, error code and JSON body each image's outcome answers with.
// Shared by POST /v1/detect, the detection WebSocket, OIP REST and OIP gRPC.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "pipeline/detect_call.h"
#include "server/detect_request.h"

namespace mogserve::server {

// The call for `images` (their bytes are moved out) with the request's options.
pipeline::DetectCall MakeDetectCall(std::vector<ImagePart>& images, const DetectParams& params,
                                    std::string client);

// Status and error code: done → {200, ""}; queue full → {503, "queue_full"}; deadline → 504;
// bad input → 400 invalid_image / 413 image_too_large / 415 unsupported_image_format; engine
// failure → 500; cancelled → 503; superseded → 409.
std::pair<int, std::string> HttpStatusOf(const pipeline::RequestResult& r);

// The result JSON (ModelScope's shape with `modelscope`), or the error JSON for an image that
// did not end done.
nlohmann::json ResultBody(const pipeline::RequestResult& r, bool modelscope);

}  // namespace mogserve::server
