// The public AlignFace (include/mogserve/align.h) over image::AlignFace.
#include "mogserve/align.h"

#include <cstring>
#include <string>

#include "image/align.h"

namespace mogserve {

StatusOr<AlignedFace> AlignFace(const Pixels& picture, std::span<const Point> landmarks, int size) {
  const int stride = picture.stride > 0 ? picture.stride : picture.width * 3;
  if (picture.data == nullptr || picture.width <= 0 || picture.height <= 0) {
    return InvalidArgument("picture: no pixels (data is null or a side is 0)");
  }
  if (stride < picture.width * 3) {
    return InvalidArgument("picture: stride " + std::to_string(stride) +
                           " is shorter than a row (" + std::to_string(picture.width * 3) +
                           " bytes)");
  }
  image::Image copy(picture.width, picture.height);
  for (int y = 0; y < picture.height; ++y) {
    std::memcpy(copy.pixel(0, y), picture.data + static_cast<size_t>(y) * stride,
                static_cast<size_t>(picture.width) * 3);
  }
  MOGSERVE_ASSIGN_OR_RETURN(image::Image crop, image::AlignFace(copy, landmarks, size));
  return AlignedFace{crop.width, crop.height, std::move(crop.data)};
}

}  // namespace mogserve
