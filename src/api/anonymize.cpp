// The public Anonymize (include/mogserve/anonymize.h) over image::AnonymizeFaces.
#include "mogserve/anonymize.h"

#include <cstring>
#include <vector>

#include "image/anonymize.h"

namespace mogserve {

Status Anonymize(uint8_t* rgb, int width, int height, int stride, std::span<const Detection> faces,
                 const AnonymizeOptions& options) {
  const int row = width * 3;
  if (stride == 0) stride = row;
  if (rgb == nullptr || width <= 0 || height <= 0) {
    return InvalidArgument("rgb: no pixels (data is null or a side is 0)");
  }
  if (stride < row) {
    return InvalidArgument("stride " + std::to_string(stride) + " is shorter than a row (" +
                           std::to_string(row) + " bytes)");
  }
  if (!(options.box_scale >= 1 && options.box_scale <= 3)) {
    return InvalidArgument("box_scale " + std::to_string(options.box_scale) +
                           " is not allowed; a number from 1 to 3");
  }
  image::AnonymizeOptions o;
  MOGSERVE_ASSIGN_OR_RETURN(o.method, image::ParseAnonymizeMethod("method", options.method));
  MOGSERVE_ASSIGN_OR_RETURN(o.shape, image::ParseAnonymizeShape("shape", options.shape));
  o.box_scale = options.box_scale;
  o.fill = {options.fill_rgb[0], options.fill_rgb[1], options.fill_rgb[2]};
  image::Image picture(width, height);
  for (int y = 0; y < height; ++y) {
    std::memcpy(picture.pixel(0, y), rgb + static_cast<size_t>(y) * stride, row);
  }
  image::AnonymizeFaces(picture, std::vector<Detection>(faces.begin(), faces.end()), o);
  for (int y = 0; y < height; ++y) {
    std::memcpy(rgb + static_cast<size_t>(y) * stride, picture.pixel(0, y), row);
  }
  return Status::Ok();
}

}  // namespace mogserve
