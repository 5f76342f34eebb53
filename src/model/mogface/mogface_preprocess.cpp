#include "model/mogface/mogface_preprocess.h"

#include <cassert>

namespace mogserve::model::mogface {
namespace {

// ImageNet mean and std, x255, in RGB order (spec §6a).
constexpr float kMean[3] = {123.675f, 116.28f, 103.53f};
constexpr float kStd[3] = {58.395f, 57.12f, 57.375f};

}  // namespace

int PadToMultiple(int side, int multiple) {
  return multiple <= 1 ? side : (side + multiple - 1) / multiple * multiple;
}

std::vector<float> NormalizeAndPad(const image::Image& rgb, int padded_width, int padded_height) {
  assert(padded_width >= rgb.width && padded_height >= rgb.height);
  const size_t plane = static_cast<size_t>(padded_width) * padded_height;
  std::vector<float> out(plane * 3, 0.0f);
  for (int c = 0; c < 3; ++c) {
    // Same operation order as the reference: subtract, divide by std, divide by 255.
    float* dst = out.data() + c * plane;
    for (int y = 0; y < rgb.height; ++y) {
      const uint8_t* src = rgb.pixel(0, y) + c;
      float* row = dst + static_cast<size_t>(y) * padded_width;
      for (int x = 0; x < rgb.width; ++x) row[x] = (src[3 * x] - kMean[c]) / kStd[c] / 255.0f;
    }
  }
  return out;
}

}  // namespace mogserve::model::mogface
