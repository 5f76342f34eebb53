#include "json/result_json.h"

#include <cmath>

namespace mogserve {

// Dividing by the exact power of ten (rather than multiplying by 0.01) yields the double nearest
// the decimal value, which JSON then prints short.
double Round(double v, int decimals) {
  const double scale = std::pow(10.0, decimals);
  return std::round(v * scale) / scale;
}

nlohmann::json ResultToJson(const DetectResult& result, bool include_timing) {
  nlohmann::json faces = nlohmann::json::array();
  for (const Detection& d : result.faces) {
    nlohmann::json face = {
        {"box", {Round(d.x1, 2), Round(d.y1, 2), Round(d.x2, 2), Round(d.y2, 2)}},
        {"score", Round(d.score, 4)}};
    auto points = [](const std::vector<Point>& list) {
      nlohmann::json out = nlohmann::json::array();
      for (const Point& p : list) out.push_back({Round(p.x, 2), Round(p.y, 2)});
      return out;
    };
    if (!d.landmarks.empty()) face["landmarks"] = points(d.landmarks);
    if (!d.landmarks68.empty()) face["landmarks68"] = points(d.landmarks68);
    if (d.track_id > 0) {
      face["track_id"] = d.track_id;
      face["tracked"] = d.tracked;
    }
    faces.push_back(std::move(face));
  }
  nlohmann::json j = {{"width", result.width}, {"height", result.height}, {"faces", faces}};
  if (include_timing) {
    const DetectTiming& t = result.timing;
    j["timing"] = {{"decode_ms", Round(t.decode_ms, 3)},
                   {"preprocess_ms", Round(t.preprocess_ms, 3)},
                   {"queue_ms", Round(t.queue_ms, 3)},
                   {"inference_ms", Round(t.inference_ms, 3)},
                   {"postprocess_ms", Round(t.postprocess_ms, 3)},
                   {"batch_size", t.batch_size}};
  }
  return j;
}

nlohmann::json ResultToModelScopeJson(const DetectResult& result) {
  nlohmann::json scores = nlohmann::json::array(), boxes = nlohmann::json::array();
  nlohmann::json keypoints = nlohmann::json::array();
  bool any_keypoints = false;
  for (const Detection& d : result.faces) {
    scores.push_back(Round(d.score, 4));
    boxes.push_back({Round(d.x1, 2), Round(d.y1, 2), Round(d.x2, 2), Round(d.y2, 2)});
    // ModelScope's keypoints: per face x1, y1, ..., x5, y5 (its retinaface/scrfd order).
    nlohmann::json flat = nlohmann::json::array();
    for (const Point& p : d.landmarks) {
      flat.push_back(Round(p.x, 2));
      flat.push_back(Round(p.y, 2));
    }
    any_keypoints = any_keypoints || !d.landmarks.empty();
    keypoints.push_back(std::move(flat));
  }
  return {{"scores", scores},
          {"boxes", boxes},
          {"keypoints", any_keypoints ? keypoints : nlohmann::json(nullptr)}};
}

nlohmann::json ErrorToJson(const std::string& code, const std::string& message) {
  return {{"error", {{"code", code}, {"message", message}}}};
}

nlohmann::json ErrorToJson(const Status& status) {
  return ErrorToJson(StatusCodeName(status.code()), status.message());
}

std::string ToJsonLine(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace mogserve
