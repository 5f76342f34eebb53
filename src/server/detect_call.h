// The server's side of the one request path (pipeline/detect_call.h): a parsed request's images
// as a DetectCall, and the status, error code and JSON body each image's outcome answers with.
// Shared by POST /v1/detect, the detection WebSocket, OIP REST and OIP gRPC.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "pipeline/detect_call.h"
#include "server/detect_request.h"

namespace mogserve::server {

// The pictures a request with crop_size needs again for its crops (the pipeline keeps none):
// copies of the images' bytes, in order, taken before MakeDetectCall moves them; null without
// crop_size.
using KeptPictures = std::shared_ptr<const std::vector<std::vector<uint8_t>>>;
KeptPictures KeepForCrops(const std::vector<ImagePart>& images, const DetectParams& params);

// crop_size: each face of `body` (ResultBody's JSON of done result `r`) that has five points
// gets "crop", its aligned crop (image::AlignFace of the picture decoded again, upright) as a
// base64 JPEG (quality 95, as detect --crops writes them). Faces without five points get none;
// a picture that no longer decodes leaves the body as it is. Runs on the answering thread.
void AddCrops(const pipeline::RequestResult& r, const std::vector<uint8_t>& picture,
              int crop_size, nlohmann::json& body);

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
