#include "server/detect_call.h"

#include "json/result_json.h"
#include "scheduler/outcome.h"
#include "server/answer_status.h"

namespace mogserve::server {

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
