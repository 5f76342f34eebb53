// FormatJsonLine: the JSON line of `mogserve detect`, written by the one JSON writer the HTTP API
// uses too (json/result_json.h, compiled into this layer).
#include "mogserve/detector.h"
#include "json/result_json.h"

namespace mogserve {

std::string FormatJsonLine(const std::string& id, const StatusOr<DetectResult>& result,
                           bool include_timing) {
  nlohmann::json line = result.ok() ? ResultToJson(*result, include_timing)
                                    : ErrorToJson(result.status());
  line["path"] = id;
  return ToJsonLine(line);
}

}  // namespace mogserve
