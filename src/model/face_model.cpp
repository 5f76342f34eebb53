#include "model/face_model.h"

#include <algorithm>

namespace mogserve::model {

void ClipToPicture(std::vector<Detection>& faces, const image::Letterbox& letterbox) {
  const auto max_x = static_cast<float>(letterbox.source_extent_x());
  const auto max_y = static_cast<float>(letterbox.source_extent_y());
  for (Detection& d : faces) {
    d.x1 = std::clamp(d.x1, 0.0f, max_x);
    d.x2 = std::clamp(d.x2, 0.0f, max_x);
    d.y1 = std::clamp(d.y1, 0.0f, max_y);
    d.y2 = std::clamp(d.y2, 0.0f, max_y);
  }
  std::erase_if(faces, [](const Detection& d) { return !(d.x2 > d.x1 && d.y2 > d.y1); });
}

}  // namespace mogserve::model
