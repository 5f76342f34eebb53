// FormatJsonLine: the JSON line of `mogserve detect`, written by the one JSON writer the HTTP API
// uses too (server/result_json.h, compiled into this layer).
#include "mogserve/detector.h"
#include "server/result_json.h"

namespace mogserve {

std::string FormatJsonLine(const std::string& id, const StatusOr<DetectResult>& result,
                           bool include_timing) {
  nlohmann::json line = result.ok() ? server::ResultToJson(*result, include_timing)
                                    : server::ErrorToJson(result.status());
  line["path"] = id;
  return server::ToJsonLine(line);
}

}  // namespace mogserve
