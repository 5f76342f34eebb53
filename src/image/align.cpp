#include "image/align.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace mogserve::image {
namespace {

// insightface python/insightface/utils/face_align.py, arcface_dst.
constexpr double kArcFace[kNumLandmarks][2] = {{38.2946, 51.6963},
                                               {73.5318, 51.5014},
                                               {56.0252, 71.7366},
                                               {41.5493, 92.3655},
                                               {70.7299, 92.2041}};

}  // namespace

Point Similarity::Apply(Point p) const {
  return {static_cast<float>(a * p.x - b * p.y + tx), static_cast<float>(b * p.x + a * p.y + ty)};
}

Similarity Similarity::Inverse() const {
  // [a −b; b a]⁻¹ = [a b; −b a] / (a² + b²)
  const double n = a * a + b * b;
  Similarity inv;
  inv.a = a / n;
  inv.b = -b / n;
  inv.tx = -(inv.a * tx - inv.b * ty);
  inv.ty = -(inv.b * tx + inv.a * ty);
  return inv;
}

double Similarity::scale() const {
  return std::hypot(a, b);
}

// Umeyama (1991) in 2-D: with centred point sets x (from) and y (to), the rotation and scale
// minimising Σ|y − (sRx)|² are those of the complex number Σ conj(x)·y / Σ|x|² — the closed
// form of the SVD solution for a 2x2 rotation (no reflection is possible in this form).
StatusOr<Similarity> EstimateSimilarity(std::span<const Point> from, std::span<const Point> to) {
  if (from.size() != to.size() || from.size() < 2) {
    return InvalidArgument("a similarity needs matching point lists of 2 or more (got " +
                           std::to_string(from.size()) + " and " + std::to_string(to.size()) + ")");
  }
  const double n = static_cast<double>(from.size());
  double fx = 0, fy = 0, gx = 0, gy = 0;
  for (size_t i = 0; i < from.size(); ++i) {
    fx += from[i].x / n;
    fy += from[i].y / n;
    gx += to[i].x / n;
    gy += to[i].y / n;
  }
  double re = 0, im = 0, norm = 0;
  for (size_t i = 0; i < from.size(); ++i) {
    const double x = from[i].x - fx, y = from[i].y - fy;
    const double u = to[i].x - gx, v = to[i].y - gy;
    re += x * u + y * v;  // conj(x + iy)·(u + iv)
    im += x * v - y * u;
    norm += x * x + y * y;
  }
  if (!(norm > 0)) return InvalidArgument("the points have no extent (all in one place)");
  Similarity s;
  s.a = re / norm;
  s.b = im / norm;
  s.tx = gx - (s.a * fx - s.b * fy);
  s.ty = gy - (s.b * fx + s.a * fy);
  return s;
}

StatusOr<std::array<Point, kNumLandmarks>> ArcFaceTemplate(int size) {
  double ratio = 0, shift = 0;
  if (size > 0 && size % 112 == 0) {
    ratio = size / 112.0;
  } else if (size > 0 && size % 128 == 0) {
    ratio = size / 128.0;
    shift = 8.0 * ratio;
  } else {
    return InvalidArgument("crop size " + std::to_string(size) +
                           ": a multiple of 112 or of 128 (insightface's templates: 112, 128, "
                           "224, 256, ...)");
  }
  std::array<Point, kNumLandmarks> t;
  for (int i = 0; i < kNumLandmarks; ++i) {
    t[i] = {static_cast<float>(kArcFace[i][0] * ratio + shift + 0.5),
            static_cast<float>(kArcFace[i][1] * ratio + 0.5)};
  }
  return t;
}

Image WarpSimilarity(const Image& picture, const Similarity& to_crop, int width, int height) {
  Image out(width, height);
  const Similarity back = to_crop.Inverse();
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      // The pixel centre back in the picture, as a pixel index (centre at i + 0.5).
      const Point src = back.Apply({x + 0.5f, y + 0.5f});
      const double sx = src.x - 0.5, sy = src.y - 0.5;
      const double fx = std::floor(sx), fy = std::floor(sy);
      const int x0 = static_cast<int>(fx), y0 = static_cast<int>(fy);
      const double wx = sx - fx, wy = sy - fy;
      uint8_t* o = out.pixel(x, y);
      for (int c = 0; c < 3; ++c) {
        auto at = [&](int px, int py) -> double {
          if (px < 0 || py < 0 || px >= picture.width || py >= picture.height) return 0.0;
          return picture.pixel(px, py)[c];
        };
        const double v = (1 - wy) * ((1 - wx) * at(x0, y0) + wx * at(x0 + 1, y0)) +
                         wy * ((1 - wx) * at(x0, y0 + 1) + wx * at(x0 + 1, y0 + 1));
        o[c] = static_cast<uint8_t>(std::clamp(std::lround(v), 0L, 255L));
      }
    }
  }
  return out;
}

StatusOr<Image> AlignFace(const Image& picture, std::span<const Point> five, int size) {
  if (five.size() != static_cast<size_t>(kNumLandmarks)) {
    return InvalidArgument("an aligned crop needs the face's five landmarks (got " +
                           std::to_string(five.size()) + ")");
  }
  MOGSERVE_ASSIGN_OR_RETURN(const auto dst, ArcFaceTemplate(size));
  MOGSERVE_ASSIGN_OR_RETURN(const Similarity to_crop, EstimateSimilarity(five, dst));
  return WarpSimilarity(picture, to_crop, size, size);
}

}  // namespace mogserve::image
