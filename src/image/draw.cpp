#include "image/draw.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <utility>

namespace mogserve::image {
namespace {

// Coordinates are clamped to this range before any integer arithmetic, so that huge or infinite
// floats cannot overflow; anything this far out is off every image anyway.
constexpr int64_t kCoordinateLimit = int64_t{1} << 30;
constexpr int kMaxThickness = 1 << 12;
constexpr int kMaxScale = 64;

constexpr int kGlyphWidth = 5;
constexpr int kGlyphHeight = 7;
constexpr int kGlyphAdvance = kGlyphWidth + 1;  // one blank column between glyphs
constexpr int kLabelPadding = 1;                // background margin around the text, in cells

struct Glyph {
  char ch;
  uint8_t rows[kGlyphHeight];  // 5 bits per row, most significant bit = leftmost column
};

// A classic 5x7 dot-matrix font (the HD44780 character set), for the characters labels use.
constexpr Glyph kFont[] = {
    {'0', {0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E}},
    {'1', {0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E}},
    {'2', {0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F}},
    {'3', {0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E}},
    {'4', {0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02}},
    {'5', {0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E}},
    {'6', {0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E}},
    {'7', {0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08}},
    {'8', {0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E}},
    {'9', {0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C}},
    {'A', {0x0E, 0x11, 0x11, 0x11, 0x1F, 0x11, 0x11}},
    {'B', {0x1E, 0x11, 0x11, 0x1E, 0x11, 0x11, 0x1E}},
    {'C', {0x0E, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0E}},
    {'D', {0x1C, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1C}},
    {'E', {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F}},
    {'F', {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x10}},
    {'G', {0x0E, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0F}},
    {'H', {0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11}},
    {'I', {0x0E, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E}},
    {'J', {0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0C}},
    {'K', {0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11}},
    {'L', {0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1F}},
    {'M', {0x11, 0x1B, 0x15, 0x15, 0x11, 0x11, 0x11}},
    {'N', {0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11}},
    {'O', {0x0E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E}},
    {'P', {0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10, 0x10}},
    {'Q', {0x0E, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0D}},
    {'R', {0x1E, 0x11, 0x11, 0x1E, 0x14, 0x12, 0x11}},
    {'S', {0x0F, 0x10, 0x10, 0x0E, 0x01, 0x01, 0x1E}},
    {'T', {0x1F, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04}},
    {'U', {0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E}},
    {'V', {0x11, 0x11, 0x11, 0x11, 0x11, 0x0A, 0x04}},
    {'W', {0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0A}},
    {'X', {0x11, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x11}},
    {'Y', {0x11, 0x11, 0x11, 0x0A, 0x04, 0x04, 0x04}},
    {'Z', {0x1F, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1F}},
    {'.', {0x00, 0x00, 0x00, 0x00, 0x00, 0x0C, 0x0C}},
    {'%', {0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03}},
    {':', {0x00, 0x0C, 0x0C, 0x00, 0x0C, 0x0C, 0x00}},
    {'-', {0x00, 0x00, 0x00, 0x1F, 0x00, 0x00, 0x00}},
    {' ', {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}},
    {'?', {0x0E, 0x11, 0x01, 0x02, 0x04, 0x00, 0x04}},
};

// Lower-case letters use the upper-case glyphs; anything unknown shows as '?'.
const Glyph& GlyphFor(char c) {
  const char upper = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const Glyph& glyph : kFont) {
    if (glyph.ch == upper) return glyph;
  }
  return kFont[std::size(kFont) - 1];
}

// Fills the inclusive rectangle [x1, x2] x [y1, y2], clipped to the image. int64 so that no
// combination of clamped inputs can overflow.
void FillRect(Image& img, int64_t x1, int64_t y1, int64_t x2, int64_t y2, Rgb color) {
  if (img.empty()) return;
  x1 = std::max<int64_t>(x1, 0);
  y1 = std::max<int64_t>(y1, 0);
  x2 = std::min<int64_t>(x2, img.width - 1);
  y2 = std::min<int64_t>(y2, img.height - 1);
  if (x1 > x2 || y1 > y2) return;
  for (int64_t y = y1; y <= y2; ++y) {
    uint8_t* p = img.pixel(static_cast<int>(x1), static_cast<int>(y));
    for (int64_t x = x1; x <= x2; ++x, p += 3) {
      p[0] = color.r;
      p[1] = color.g;
      p[2] = color.b;
    }
  }
}

// Rounds a float coordinate to a pixel index; false for NaN, which has no sensible place.
bool ToPixelIndex(float v, int64_t* out) {
  if (std::isnan(v)) return false;
  const double clamped = std::clamp(static_cast<double>(v), -static_cast<double>(kCoordinateLimit),
                                    static_cast<double>(kCoordinateLimit));
  *out = static_cast<int64_t>(std::floor(clamped + 0.5));
  return true;
}

}  // namespace

// The outline covers the pixels from round(x1) to round(x2) inclusive (likewise for y) and grows
// inwards with the thickness, so a box never paints outside the area it describes.
void DrawRect(Image& img, float x1, float y1, float x2, float y2, Rgb color, int thickness) {
  int64_t left, top, right, bottom;
  if (!ToPixelIndex(x1, &left) || !ToPixelIndex(y1, &top) || !ToPixelIndex(x2, &right) ||
      !ToPixelIndex(y2, &bottom)) {
    return;
  }
  if (left > right) std::swap(left, right);
  if (top > bottom) std::swap(top, bottom);
  const int64_t t = std::clamp(thickness, 1, kMaxThickness);
  FillRect(img, left, top, right, std::min(bottom, top + t - 1), color);     // top edge
  FillRect(img, left, std::max(top, bottom - t + 1), right, bottom, color);  // bottom edge
  FillRect(img, left, top, std::min(right, left + t - 1), bottom, color);    // left edge
  FillRect(img, std::max(left, right - t + 1), top, right, bottom, color);   // right edge
}

void DrawDot(Image& img, float x, float y, float radius, Rgb color) {
  if (img.empty() || std::isnan(x) || std::isnan(y) || std::isnan(radius)) return;
  const double r = std::clamp(static_cast<double>(radius), 1.0, static_cast<double>(kMaxThickness));
  const double cx =
      std::clamp(static_cast<double>(x), -kCoordinateLimit * 1.0, kCoordinateLimit * 1.0);
  const double cy =
      std::clamp(static_cast<double>(y), -kCoordinateLimit * 1.0, kCoordinateLimit * 1.0);
  const int64_t x1 = std::max<int64_t>(static_cast<int64_t>(std::floor(cx - r)), 0);
  const int64_t x2 = std::min<int64_t>(static_cast<int64_t>(std::ceil(cx + r)), img.width - 1);
  const int64_t y1 = std::max<int64_t>(static_cast<int64_t>(std::floor(cy - r)), 0);
  const int64_t y2 = std::min<int64_t>(static_cast<int64_t>(std::ceil(cy + r)), img.height - 1);
  for (int64_t py = y1; py <= y2; ++py) {
    for (int64_t px = x1; px <= x2; ++px) {
      const double dx = px + 0.5 - cx, dy = py + 0.5 - cy;
      if (dx * dx + dy * dy <= r * r) FillRect(img, px, py, px, py, color);
    }
  }
}

void DrawLabel(Image& img, int x, int y, const std::string& text, Rgb color, Rgb background,
               int scale) {
  if (img.empty() || text.empty()) return;
  const int64_t s = std::clamp(scale, 1, kMaxScale);
  const int64_t n = static_cast<int64_t>(text.size());
  const int64_t box_w = (n * kGlyphAdvance - 1 + 2 * kLabelPadding) * s;
  const int64_t box_h = (kGlyphHeight + 2 * kLabelPadding) * s;
  FillRect(img, x, y, x + box_w - 1, y + box_h - 1, background);
  const int64_t text_x = x + kLabelPadding * s;
  const int64_t text_y = y + kLabelPadding * s;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t glyph_x = text_x + i * kGlyphAdvance * s;
    if (glyph_x >= img.width) break;  // the rest is clipped away
    if (glyph_x + kGlyphWidth * s <= 0) continue;
    const Glyph& glyph = GlyphFor(text[i]);
    for (int row = 0; row < kGlyphHeight; ++row) {
      for (int col = 0; col < kGlyphWidth; ++col) {
        if ((glyph.rows[row] >> (kGlyphWidth - 1 - col) & 1) == 0) continue;
        const int64_t px = glyph_x + col * s;
        const int64_t py = text_y + row * s;
        FillRect(img, px, py, px + s - 1, py + s - 1, color);
      }
    }
  }
}

}  // namespace mogserve::image
