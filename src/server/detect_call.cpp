#include "server/detect_call.h"

#include "json/result_json.h"
#include "options/option_table.h"
#include "scheduler/outcome.h"
#include "server/answer_status.h"

namespace mogserve::server {

pipeline::SubmitRequest MakeSubmitRequest(ImagePart& image, const DetectParams& params,
                                          const DetectOptions& defaults, std::string client) {
  pipeline::SubmitRequest s;
  s.image.bytes = std::move(image.bytes);  // no copy: the part's bytes go to the decoder
  // The option table checked the name against the priorities' names.
  s.priority = params.priority ? scheduler::ParsePriority(*params.priority).value_or(
                                     scheduler::Priority::kApi)
                               : scheduler::Priority::kApi;
  s.client = std::move(client);
  if (params.timeout_ms) s.timeout = std::chrono::milliseconds(*params.timeout_ms);
  s.detect = opt::ApplyDetectOverrides(params, defaults);
  return s;
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
