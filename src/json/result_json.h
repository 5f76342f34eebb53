// JSON for detection results: the one writer shared by the HTTP API and the CLI (DESIGN.md §5).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "mogserve/result.h"
#include "mogserve/status.h"

namespace mogserve {

// `v` rounded to `decimals` places, as the double JSON prints shortest (0.01 → "0.01").
double Round(double v, int decimals);

// {"width","height","faces":[{"box":[x1,y1,x2,y2],"score"}]}, each face with
// "landmarks":[[x,y] x 5] when it has them (and "landmarks68":[[x,y] x 68] with landmarks: 68);
// coordinates rounded to 0.01 px, scores to 1e-4. With include_timing, adds "timing":{...}.
nlohmann::json ResultToJson(const DetectResult& result, bool include_timing);

// ModelScope's shape: {"scores":[...],"boxes":[[x1,y1,x2,y2],...],"keypoints":null}; with
// landmarks, "keypoints":[[x1,y1,...,x5,y5],...] (ModelScope's RetinaFace/SCRFD pipelines').
nlohmann::json ResultToModelScopeJson(const DetectResult& result);

// {"error":{"code","message"}}; code is the status code's name ("invalid_data", ...).
nlohmann::json ErrorToJson(const Status& status);
nlohmann::json ErrorToJson(const std::string& code, const std::string& message);

// One compact line of JSON. Bytes that are not UTF-8 (a Linux file name may hold any bytes) are
// replaced by U+FFFD instead of failing.
std::string ToJsonLine(const nlohmann::json& j);

}  // namespace mogserve
