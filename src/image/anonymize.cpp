#include "image/anonymize.h"

#include <algorithm>
#include <cmath>

#include "common/enum_names.h"

namespace mogserve::image {
namespace {

constexpr EnumNames<AnonymizeMethod, AnonymizeMethod::kFill> kMethodNames{
    {"blur", "pixelate", "fill"}};
constexpr EnumNames<AnonymizeShape, AnonymizeShape::kBox> kShapeNames{{"ellipse", "box"}};

constexpr int kBlurPasses = 3;
constexpr int kPixelateCellsPerSide = 8;

// One box-filter pass of radius r along a line of n values `stride` apart, edges replicated:
// out[i] = mean of in[clamp(i - r .. i + r)]. Running sum, O(n) whatever r.
void BoxLine(const float* in, float* out, int n, int stride, int r) {
  const auto at = [&](int i) {
    return in[static_cast<ptrdiff_t>(std::clamp(i, 0, n - 1)) * stride];
  };
  float sum = 0;
  for (int i = -r; i <= r; ++i) sum += at(i);
  const float scale = 1.0f / static_cast<float>(2 * r + 1);
  for (int i = 0; i < n; ++i) {
    out[static_cast<ptrdiff_t>(i) * stride] = sum * scale;
    sum += at(i + r + 1) - at(i - r);
  }
}

// The region's pixels blurred: kBlurPasses box passes of radius width / 4 across and height / 4
// down, per channel, in floats.
std::vector<float> BlurredRegion(const Image& img, const CoverRegion& g) {
  const int w = g.x2 - g.x1, h = g.y2 - g.y1;
  std::vector<float> a(static_cast<size_t>(w) * h * 3), b(a.size());
  for (int y = 0; y < h; ++y) {
    const uint8_t* row = img.pixel(g.x1, g.y1 + y);
    for (int i = 0; i < w * 3; ++i) a[static_cast<size_t>(y) * w * 3 + i] = row[i];
  }
  const int rx = std::max(1, w / 4), ry = std::max(1, h / 4);
  for (int pass = 0; pass < kBlurPasses; ++pass) {
    for (int y = 0; y < h; ++y) {
      for (int c = 0; c < 3; ++c) {
        const size_t at = static_cast<size_t>(y) * w * 3 + c;
        BoxLine(a.data() + at, b.data() + at, w, 3, rx);
      }
    }
    for (int x = 0; x < w; ++x) {
      for (int c = 0; c < 3; ++c) {
        const size_t at = static_cast<size_t>(x) * 3 + c;
        BoxLine(b.data() + at, a.data() + at, h, w * 3, ry);
      }
    }
  }
  return a;
}

// The region in square cells, each its covered pixels' mean colour (cells clipped at the
// region's edges); the mean over the whole cell, so the shape's edge does not show through.
std::vector<float> PixelatedRegion(const Image& img, const CoverRegion& g) {
  const int w = g.x2 - g.x1, h = g.y2 - g.y1;
  const float long_side = std::max(g.right - g.left, g.bottom - g.top);
  const int cell = std::max(2, static_cast<int>(std::lround(long_side / kPixelateCellsPerSide)));
  std::vector<float> out(static_cast<size_t>(w) * h * 3);
  for (int cy = 0; cy < h; cy += cell) {
    for (int cx = 0; cx < w; cx += cell) {
      const int ex = std::min(w, cx + cell), ey = std::min(h, cy + cell);
      float sum[3] = {0, 0, 0};
      for (int y = cy; y < ey; ++y) {
        for (int x = cx; x < ex; ++x) {
          const uint8_t* p = img.pixel(g.x1 + x, g.y1 + y);
          for (int c = 0; c < 3; ++c) sum[c] += p[c];
        }
      }
      const float n = static_cast<float>((ex - cx) * (ey - cy));
      for (int y = cy; y < ey; ++y) {
        for (int x = cx; x < ex; ++x) {
          for (int c = 0; c < 3; ++c) out[(static_cast<size_t>(y) * w + x) * 3 + c] = sum[c] / n;
        }
      }
    }
  }
  return out;
}

void CoverFace(Image& img, const CoverRegion& g, const AnonymizeOptions& o) {
  const int w = g.x2 - g.x1;
  std::vector<float> replaced;
  if (o.method == AnonymizeMethod::kBlur) replaced = BlurredRegion(img, g);
  if (o.method == AnonymizeMethod::kPixelate) replaced = PixelatedRegion(img, g);
  for (int y = g.y1; y < g.y2; ++y) {
    for (int x = g.x1; x < g.x2; ++x) {
      if (!Covers(g, o.shape, x, y)) continue;
      uint8_t* p = img.pixel(x, y);
      if (o.method == AnonymizeMethod::kFill) {
        p[0] = o.fill.r;
        p[1] = o.fill.g;
        p[2] = o.fill.b;
        continue;
      }
      const float* v = &replaced[(static_cast<size_t>(y - g.y1) * w + (x - g.x1)) * 3];
      for (int c = 0; c < 3; ++c) {
        p[c] = static_cast<uint8_t>(std::clamp(std::lround(v[c]), 0L, 255L));
      }
    }
  }
}

}  // namespace

StatusOr<AnonymizeMethod> ParseAnonymizeMethod(std::string_view field, std::string_view name) {
  return ParseName(kMethodNames.table(), field, name);
}

StatusOr<AnonymizeShape> ParseAnonymizeShape(std::string_view field, std::string_view name) {
  return ParseName(kShapeNames.table(), field, name);
}

const char* AnonymizeMethodName(AnonymizeMethod method) {
  return NameOf(kMethodNames, method);
}
const char* AnonymizeShapeName(AnonymizeShape shape) {
  return NameOf(kShapeNames, shape);
}

CoverRegion RegionOf(const Detection& face, float box_scale, int width, int height) {
  CoverRegion g;
  const float cx = (face.x1 + face.x2) / 2, cy = (face.y1 + face.y2) / 2;
  const float hw = face.width() * box_scale / 2, hh = face.height() * box_scale / 2;
  if (!(hw > 0) || !(hh > 0)) return g;  // NaN or empty: nothing to cover
  g.left = cx - hw;
  g.right = cx + hw;
  g.top = cy - hh;
  g.bottom = cy + hh;
  const auto clip = [](float v, int hi) {
    return static_cast<int>(std::clamp(v, 0.0f, static_cast<float>(hi)));
  };
  g.x1 = clip(std::floor(g.left), width);
  g.x2 = clip(std::ceil(g.right), width);
  g.y1 = clip(std::floor(g.top), height);
  g.y2 = clip(std::ceil(g.bottom), height);
  return g;
}

bool Covers(const CoverRegion& g, AnonymizeShape shape, int x, int y) {
  const float px = static_cast<float>(x) + 0.5f, py = static_cast<float>(y) + 0.5f;
  if (px < g.left || px > g.right || py < g.top || py > g.bottom) return false;
  if (shape == AnonymizeShape::kBox) return true;
  const float a = (g.right - g.left) / 2, b = (g.bottom - g.top) / 2;
  const float dx = (px - (g.left + a)) / a, dy = (py - (g.top + b)) / b;
  return dx * dx + dy * dy <= 1.0f;
}

void AnonymizeFaces(Image& img, const std::vector<Detection>& faces,
                    const AnonymizeOptions& options) {
  for (const Detection& face : faces) {
    const CoverRegion g = RegionOf(face, options.box_scale, img.width, img.height);
    if (!g.empty()) CoverFace(img, g, options);
  }
}

}  // namespace mogserve::image
