// JSON for detection results: the one place that turns results into JSON for the CLI.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "mogserve/detector.h"
#include "mogserve/status.h"

namespace mogserve::cli {

// {"path","width","height","faces":[{"box":[x1,y1,x2,y2],"score"}]}; coordinates rounded to
// 0.01 px, scores to 1e-4. With include_timing, adds "timing":{...}.
nlohmann::json ResultToJson(const std::string& path, const DetectResult& result,
                            bool include_timing);

// {"path","error":{"code","message"}}
nlohmann::json ErrorToJson(const std::string& path, const Status& status);

// One compact line of JSON. Bytes that are not UTF-8 (a Linux file name may hold any bytes) are
// replaced by U+FFFD instead of failing.
std::string ToJsonLine(const nlohmann::json& j);

}  // namespace mogserve::cli
