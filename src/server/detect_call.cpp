#include "server/detect_call.h"

#include "image/align.h"
#include "image/decode.h"
#include "image/encode.h"
#include "json/result_json.h"
#include "scheduler/outcome.h"
#include "server/answer_status.h"

namespace mogserve::server {

KeptPictures KeepForCrops(const std::vector<ImagePart>& images, const DetectParams& params) {
  if (!params.crop_size) return nullptr;
  auto kept = std::make_shared<std::vector<std::vector<uint8_t>>>();
  for (const ImagePart& image : images) kept->push_back(image.bytes);
  return kept;
}

void AddCrops(const pipeline::RequestResult& r, const std::vector<uint8_t>& picture,
              int crop_size, nlohmann::json& body) {
  if (r.outcome != scheduler::Outcome::kDone || !body.contains("faces")) return;
  StatusOr<image::DecodedImage> decoded = image::Decode(picture);
  if (!decoded.ok()) return;
  nlohmann::json& faces = body["faces"];
  for (size_t k = 0; k < r.result.faces.size() && k < faces.size(); ++k) {
    const Detection& d = r.result.faces[k];
    if (d.landmarks.size() != static_cast<size_t>(kNumLandmarks)) continue;
    StatusOr<image::Image> crop = image::AlignFace(decoded->image, d.landmarks, crop_size);
    if (!crop.ok()) continue;
    StatusOr<std::vector<uint8_t>> jpeg = image::EncodeJpeg(*crop, 95);
    if (jpeg.ok()) faces[k]["crop"] = EncodeBase64(*jpeg);
  }
}

pipeline::DetectCall MakeDetectCall(std::vector<ImagePart>& images, const DetectParams& params,
                                    std::string client) {
  pipeline::DetectCall call;
  for (ImagePart& image : images) {
    call.images.emplace_back().bytes = std::move(image.bytes);  // no copy: on to the decoder
  }
  call.options = params;
  call.client = std::move(client);
  return call;
}

std::pair<int, std::string> HttpStatusOf(const pipeline::RequestResult& r) {
  const AnswerStatus status = StatusOf(r);
  return {status.http, std::string(status.code)};
}

nlohmann::json ResultBody(const pipeline::RequestResult& r, bool modelscope) {
  if (r.outcome != scheduler::Outcome::kDone) {
    return ErrorToJson(HttpStatusOf(r).second, r.status.message());
  }
  return modelscope ? ResultToModelScopeJson(r.result)
                    : ResultToJson(r.result, /*include_timing=*/true);
}

}  // namespace mogserve::server
