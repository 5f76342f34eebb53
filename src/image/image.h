// Image: an 8-bit interleaved RGB picture in memory, the currency of the image layer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mogserve::image {

// Row-major, interleaved RGB (3 bytes per pixel), no row padding: pixel (x, y) channel c is at
// data[(y * width + x) * 3 + c]. Cheap to move, expensive to copy.
struct Image {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> data;

  Image() = default;
  Image(int w, int h) : width(w), height(h), data(static_cast<size_t>(w) * h * 3, 0) {}

  bool empty() const { return width <= 0 || height <= 0; }
  uint8_t* pixel(int x, int y) { return data.data() + (static_cast<size_t>(y) * width + x) * 3; }
  const uint8_t* pixel(int x, int y) const {
    return data.data() + (static_cast<size_t>(y) * width + x) * 3;
  }
};

}  // namespace mogserve::image
