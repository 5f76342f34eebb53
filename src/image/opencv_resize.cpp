#include "image/opencv_resize.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace mogserve::image {
namespace {

constexpr int kCoefBits = 11;  // INTER_RESIZE_COEF_BITS
constexpr int kCoefScale = 1 << kCoefBits;

// OpenCV's saturate_cast<short>(float) and cvRound: round half to even.
int RoundEven(double v) {
  return static_cast<int>(std::nearbyint(v));
}

struct Taps {
  std::vector<int> first;      // source index of the first tap
  std::vector<int16_t> alpha;  // two weights per output
};

// Per output index: float source coordinate, floor, fraction; `clamp` moves taps that leave the
// source onto its first/last sample with weights (1, 0) (x axis); the y axis keeps the raw index
// (rows are clamped when read) and its weights.
Taps ComputeTaps(int out_size, int in_size, double scale, bool clamp) {
  Taps t;
  t.first.resize(out_size);
  t.alpha.resize(static_cast<size_t>(out_size) * 2);
  for (int d = 0; d < out_size; ++d) {
    float f = static_cast<float>((d + 0.5) * scale - 0.5);
    int s = static_cast<int>(std::floor(f));
    f -= static_cast<float>(s);
    if (clamp && s < 0) f = 0, s = 0;
    if (clamp && s >= in_size - 1) f = 0, s = in_size - 1;
    t.first[d] = s;
    t.alpha[2 * d] = static_cast<int16_t>(RoundEven((1.0f - f) * kCoefScale));
    t.alpha[2 * d + 1] = static_cast<int16_t>(RoundEven(f * kCoefScale));
  }
  return t;
}

// One source row through the horizontal taps: value · 2048 sums, per channel.
void HorizontalPass(const uint8_t* row, int in_width, const Taps& x, int out_width, int* out) {
  for (int d = 0; d < out_width; ++d) {
    const int s0 = x.first[d], s1 = std::min(x.first[d] + 1, in_width - 1);
    for (int c = 0; c < 3; ++c) {
      out[d * 3 + c] = row[s0 * 3 + c] * x.alpha[2 * d] + row[s1 * 3 + c] * x.alpha[2 * d + 1];
    }
  }
}

uint8_t Saturate(int v) {
  return static_cast<uint8_t>(std::clamp(v, 0, 255));
}

// The vertical pass over one output row of `width` elements, with the rounding of OpenCV's SIMD
// loop (VResizeLinearVec_32s8u): ((s0 >> 4)·β0 >> 16) + ((s1 >> 4)·β1 >> 16), then (+2) >> 2.
// Its plain-C formula (s0·β0 + s1·β1 + 2^21) >> 22 differs by one level now and then; measured
// against Debian's python3-opencv 4.6, every element of every row width follows the SIMD one.
void VerticalPass(const int* s0, const int* s1, int16_t b0, int16_t b1, int width, uint8_t* out) {
  for (int x = 0; x < width; ++x) {
    const int y = (((s0[x] >> 4) * b0) >> 16) + (((s1[x] >> 4) * b1) >> 16);
    out[x] = Saturate((y + 2) >> 2);
  }
}

Image ResizeLinear(const Image& src, int out_w, int out_h, double fx, double fy) {
  const Taps x = ComputeTaps(out_w, src.width, 1.0 / fx, /*clamp=*/true);
  const Taps y = ComputeTaps(out_h, src.height, 1.0 / fy, /*clamp=*/false);
  Image out(out_w, out_h);
  const int row_elems = out_w * 3;
  std::vector<int> rows[2] = {std::vector<int>(row_elems), std::vector<int>(row_elems)};
  int cached[2] = {-1, -1};
  auto row = [&](int sy, int slot) -> const int* {
    sy = std::clamp(sy, 0, src.height - 1);
    if (cached[slot] != sy) {
      HorizontalPass(src.pixel(0, sy), src.width, x, out_w, rows[slot].data());
      cached[slot] = sy;
    }
    return rows[slot].data();
  };
  for (int d = 0; d < out_h; ++d) {
    const int* r0 = row(y.first[d], 0);
    const int* r1 = row(y.first[d] + 1, 1);
    VerticalPass(r0, r1, y.alpha[2 * d], y.alpha[2 * d + 1], row_elems, out.pixel(0, d));
  }
  return out;
}

// OpenCV turns INTER_LINEAR with both factors exactly 1/2 into its fast 2x2 area average.
Image ResizeHalf(const Image& src, int out_w, int out_h) {
  Image out(out_w, out_h);
  for (int dy = 0; dy < out_h; ++dy) {
    for (int dx = 0; dx < out_w; ++dx) {
      for (int c = 0; c < 3; ++c) {
        int sum = 0, count = 0;
        for (int sy = 2 * dy; sy < std::min(2 * dy + 2, src.height); ++sy) {
          for (int sx = 2 * dx; sx < std::min(2 * dx + 2, src.width); ++sx) {
            sum += src.pixel(sx, sy)[c];
            ++count;
          }
        }
        out.pixel(dx, dy)[c] = count == 4   ? static_cast<uint8_t>((sum + 2) >> 2)
                               : count == 0 ? 0
                                            : Saturate(RoundEven(static_cast<float>(sum) / count));
      }
    }
  }
  return out;
}

}  // namespace

int OpenCvScaledSide(int n, double f) {
  return RoundEven(n * f);
}

Image ResizeLinearLikeOpenCv(const Image& src, double fx, double fy) {
  const int out_w = OpenCvScaledSide(src.width, fx), out_h = OpenCvScaledSide(src.height, fy);
  if (out_w < 1 || out_h < 1 || src.empty()) return Image();
  if (1.0 / fx == 2.0 && 1.0 / fy == 2.0) return ResizeHalf(src, out_w, out_h);
  return ResizeLinear(src, out_w, out_h, fx, fy);
}

}  // namespace mogserve::image
