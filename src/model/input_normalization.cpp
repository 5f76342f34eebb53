#include "model/input_normalization.h"

#include <cassert>

namespace mogserve::model {

std::vector<double> NormalizePlanar(const InputNormalization& n, const image::Image& rgb,
                                    int padded_width, int padded_height) {
  assert(padded_width >= rgb.width && padded_height >= rgb.height);
  const size_t plane = static_cast<size_t>(padded_width) * padded_height;
  std::vector<double> out(plane * 3);
  for (int c = 0; c < 3; ++c) {
    double* dst = out.data() + c * plane;
    const double pad = n.zero_padding ? 0.0 : (0.0 - n.mean[c]) / n.divisor[c];
    for (size_t i = 0; i < plane; ++i) dst[i] = pad;
    for (int y = 0; y < rgb.height; ++y) {
      const uint8_t* src = rgb.pixel(0, y) + c;
      double* row = dst + static_cast<size_t>(y) * padded_width;
      for (int x = 0; x < rgb.width; ++x) row[x] = (src[3 * x] - n.mean[c]) / n.divisor[c];
    }
  }
  return out;
}

}  // namespace mogserve::model
