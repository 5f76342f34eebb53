// Hiding faces in a picture: each face's region (its box scaled about its centre) blurred so
// that the face cannot be recognised, pixelated, or filled, in an ellipse or the whole box; every
// other pixel left as it was. What `mogserve anonymize` and POST /v1/anonymize do.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "mogserve/result.h"
#include "mogserve/status.h"

namespace mogserve {

struct AnonymizeOptions {
  // "blur" (three box-filter passes half the region wide and high: each covered pixel mixes the
  // whole face), "pixelate" (cells of the region's long side / 8, each its mean colour), "fill".
  std::string method = "blur";
  std::string shape = "ellipse";    // "ellipse" (inscribed in the region) or "box"
  float box_scale = 1.3f;           // the region: the face's box scaled by this about its centre
  uint8_t fill_rgb[3] = {0, 0, 0};  // "fill"'s colour
};

// Covers `faces` (in the picture's pixels, as Detect answers them) in `rgb` in place: `width` x
// `height` RGB pixels, `stride` bytes a row (0 = width * 3). InvalidArgument naming the field for
// an unknown method or shape, a box_scale outside 1..3, or pixels without data or with a stride
// shorter than a row.
Status Anonymize(uint8_t* rgb, int width, int height, int stride, std::span<const Detection> faces,
                 const AnonymizeOptions& options = {});

}  // namespace mogserve
