// Drawing boxes and labels on an image, for annotated outputs.
#pragma once

#include <cstdint>
#include <string>

#include "image/image.h"

namespace mogserve::image {

struct Rgb {
  uint8_t r = 0, g = 255, b = 0;
};

// Outline of the rectangle [x1,y1]-[x2,y2] (pixel coordinates, clipped to the image), with the
// given line thickness in pixels.
void DrawRect(Image& img, float x1, float y1, float x2, float y2, Rgb color, int thickness);

// A filled disc of `radius` pixels (1 to the thickness limit) centred on the point (x, y) in
// continuous pixel coordinates (pixel i spans [i, i + 1)): every pixel whose centre lies within
// the radius; clipped to the image, nothing for NaN. Landmarks.
void DrawDot(Image& img, float x, float y, float radius, Rgb color);

// Text in a built-in 5x7 bitmap font (digits, letters, . % : - and space), scaled by `scale`,
// with its top-left corner at (x, y), on a filled background box; clipped to the image.
void DrawLabel(Image& img, int x, int y, const std::string& text, Rgb color, Rgb background,
               int scale);

}  // namespace mogserve::image
