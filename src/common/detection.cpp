// Definitions for the plain result types of include/mogserve/result.h, and KeepFaces.
#include "common/detection.h"

#include <algorithm>

namespace mogserve {

float IoU(const Detection& a, const Detection& b) {
  const float area_a = a.width() * a.height();
  const float area_b = b.width() * b.height();
  if (!(area_a > 0) || !(area_b > 0)) return 0.0f;
  const float iw = std::min(a.x2, b.x2) - std::max(a.x1, b.x1);
  const float ih = std::min(a.y2, b.y2) - std::max(a.y1, b.y1);
  if (iw <= 0 || ih <= 0) return 0.0f;
  const float inter = iw * ih;
  return inter / (area_a + area_b - inter);
}

std::vector<Detection> KeepFaces(std::vector<Detection> faces, const DetectOptions& options) {
  if (options.min_face_size > 0) {
    const auto min = static_cast<float>(options.min_face_size);
    std::erase_if(faces, [min](const Detection& d) { return std::min(d.width(), d.height()) < min; });
  }
  if (options.max_faces > 0 && faces.size() > static_cast<size_t>(options.max_faces)) {
    faces.resize(static_cast<size_t>(options.max_faces));
  }
  return faces;
}

}  // namespace mogserve
