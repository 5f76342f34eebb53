#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "image/decode.h"
#include "image/draw.h"
#include "image/encode.h"
#include "test_images.h"

namespace mogserve::image {
namespace {

constexpr Rgb kMagenta{255, 0, 255};

bool IsColor(const Image& img, int x, int y, Rgb c) {
  const uint8_t* p = img.pixel(x, y);
  return p[0] == c.r && p[1] == c.g && p[2] == c.b;
}

int CountColor(const Image& img, Rgb c) {
  int n = 0;
  for (int y = 0; y < img.height; ++y) {
    for (int x = 0; x < img.width; ++x) n += IsColor(img, x, y, c);
  }
  return n;
}

TEST(DrawRectTest, OutlineCoversExactlyTheExpectedPixels) {
  Image img(20, 20);
  DrawRect(img, 2.f, 3.f, 10.f, 12.f, kMagenta, 2);
  for (int y = 0; y < 20; ++y) {
    for (int x = 0; x < 20; ++x) {
      const bool inside_outer = x >= 2 && x <= 10 && y >= 3 && y <= 12;
      const bool inside_inner = x >= 4 && x <= 8 && y >= 5 && y <= 10;
      EXPECT_EQ(IsColor(img, x, y, kMagenta), inside_outer && !inside_inner) << x << "," << y;
    }
  }
}

TEST(DrawRectTest, SwappedCornersAndRoundingWork) {
  Image img(10, 10);
  DrawRect(img, 7.4f, 6.6f, 1.6f, 2.2f, kMagenta, 1);  // -> x 2..7, y 2..7
  EXPECT_TRUE(IsColor(img, 2, 2, kMagenta));
  EXPECT_TRUE(IsColor(img, 7, 7, kMagenta));
  EXPECT_FALSE(IsColor(img, 1, 2, kMagenta));
  EXPECT_FALSE(IsColor(img, 4, 4, kMagenta));
  EXPECT_EQ(CountColor(img, kMagenta), 6 * 4 - 4);
}

TEST(DrawRectTest, ClipsToTheImage) {
  Image img(10, 10);
  DrawRect(img, -5.f, -5.f, 4.f, 20.f, kMagenta, 1);  // only the right edge (x = 4) is visible
  for (int y = 0; y < 10; ++y) {
    for (int x = 0; x < 10; ++x) EXPECT_EQ(IsColor(img, x, y, kMagenta), x == 4) << x << "," << y;
  }
}

TEST(DrawDotTest, FillsThePixelsWhoseCentresAreWithinTheRadius) {
  Image img(12, 12);
  DrawDot(img, 5.5f, 6.5f, 2.0f, kMagenta);  // centred on pixel (5, 6)
  int n = 0;
  for (int y = 0; y < 12; ++y) {
    for (int x = 0; x < 12; ++x) {
      const bool in = (x - 5) * (x - 5) + (y - 6) * (y - 6) <= 4;
      EXPECT_EQ(IsColor(img, x, y, kMagenta), in) << x << "," << y;
      n += in;
    }
  }
  EXPECT_EQ(n, 13);
  Image edge(4, 4);
  DrawDot(edge, 0.0f, 0.0f, 1.0f, kMagenta);  // a quarter inside: pixel (0, 0) only
  EXPECT_EQ(CountColor(edge, kMagenta), 1);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  Image untouched(4, 4);
  DrawDot(untouched, nan, 1.0f, 2.0f, kMagenta);
  DrawDot(untouched, inf, -inf, 2.0f, kMagenta);
  DrawDot(untouched, 1e30f, 1.0f, 1e30f, kMagenta);
  EXPECT_EQ(CountColor(untouched, kMagenta), 0);
}

TEST(DrawRectTest, CrazyCoordinatesNeverWriteOutOfBounds) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float values[] = {nan, inf, -inf, 1e30f, -1e30f, 3e9f, -3e9f, -0.5f, 0.f, 4.5f, 1e6f};
  for (Image img : {Image(8, 8), Image(1, 1), Image()}) {
    for (float a : values) {
      for (float b : values) {
        DrawRect(img, a, b, b, a, kMagenta, 3);
        DrawRect(img, a, 0.f, b, 7.f, kMagenta, std::numeric_limits<int>::max());
        DrawRect(img, 0.f, a, 7.f, b, kMagenta, std::numeric_limits<int>::min());
      }
    }
    if (!img.empty()) {
      EXPECT_EQ(img.data.size(), static_cast<size_t>(img.width) * img.height * 3);
    }
  }
  Image img(8, 8);
  DrawRect(img, -inf, -inf, inf, inf, kMagenta, 1);  // off-image edges: nothing visible
  EXPECT_EQ(CountColor(img, kMagenta), 0);
}

TEST(DrawLabelTest, DrawsGlyphsOnABackgroundBox) {
  Image img(40, 20);
  const Rgb white{255, 255, 255}, black{0, 0, 1};
  DrawLabel(img, 2, 3, "0.98", white, black, 1);
  // Background box: (4 * 6 - 1 + 2) x 9 pixels at (2, 3).
  const int box_pixels = 25 * 9;
  EXPECT_EQ(CountColor(img, white) + CountColor(img, black), box_pixels);
  EXPECT_GT(CountColor(img, white), 20);
  EXPECT_TRUE(IsColor(img, 2, 3, black));      // padding corner
  EXPECT_FALSE(IsColor(img, 27, 3, black));    // just right of the box
  EXPECT_TRUE(IsColor(img, 3 + 1, 4, white));  // top bar of the '0' (row 0 = .###.)
  // The '.' glyph's dots occupy columns 1-2 of rows 5-6 of the second cell.
  EXPECT_TRUE(IsColor(img, 3 + 6 + 1, 4 + 5, white));
}

TEST(DrawLabelTest, ScalesAndClipsAnywhere) {
  Image scaled(60, 30);
  DrawLabel(scaled, 0, 0, "Ab:%-?", Rgb{1, 2, 3}, Rgb{4, 5, 6}, 2);
  EXPECT_EQ(CountColor(scaled, Rgb{1, 2, 3}) % 4, 0);  // every dot is a 2x2 block
  const int positions[] = {-1000000000,
                           -50,
                           -3,
                           0,
                           5,
                           39,
                           1000000000,
                           std::numeric_limits<int>::min(),
                           std::numeric_limits<int>::max()};
  for (Image img : {Image(40, 20), Image(1, 1), Image()}) {
    for (int x : positions) {
      for (int y : positions) {
        DrawLabel(img, x, y, "face 0.99 100%", Rgb{}, Rgb{1, 1, 1}, 3);
        DrawLabel(img, x, y, std::string(500, '8'), Rgb{}, Rgb{1, 1, 1}, 1000);
      }
    }
  }
}

TEST(EncodeTest, PngRoundTripsExactly) {
  const Image original = testutil::MakeGradient(50, 33);
  const auto png = EncodePng(original);
  ASSERT_TRUE(png.ok());
  const auto decoded = Decode(*png);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(testutil::MaxAbsDiff(decoded->image, original), 0);
}

TEST(EncodeTest, JpegRoundTripsAndQualityMatters) {
  const Image original = testutil::MakeGradient(64, 64);
  const auto high = EncodeJpeg(original, 95);
  const auto low = EncodeJpeg(original, 10);
  ASSERT_TRUE(high.ok());
  ASSERT_TRUE(low.ok());
  EXPECT_LT(low->size(), high->size());
  const auto decoded = Decode(*high);
  ASSERT_TRUE(decoded.ok());
  EXPECT_LE(testutil::MaxAbsDiff(decoded->image, original), 12);
  EXPECT_TRUE(EncodeJpeg(original, 1000).ok());  // quality is clamped, not an error
}

TEST(EncodeTest, EmptyOrInconsistentImagesAreRefused) {
  EXPECT_EQ(EncodePng(Image()).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(EncodeJpeg(Image()).status().code(), StatusCode::kInvalidArgument);
  Image broken(4, 4);
  broken.data.resize(5);
  EXPECT_EQ(EncodePng(broken).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(EncodeJpeg(broken).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace mogserve::image
