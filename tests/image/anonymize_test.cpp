#include "image/anonymize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace mogserve::image {
namespace {

// A picture of uniform noise: every pixel differs from its neighbours, so a blur shows.
Image Noise(int w, int h, uint32_t seed) {
  Image img(w, h);
  std::mt19937 rng(seed);
  for (uint8_t& v : img.data) v = static_cast<uint8_t>(rng() & 255);
  return img;
}

Detection Face(float x1, float y1, float x2, float y2) {
  return Detection{.x1 = x1, .y1 = y1, .x2 = x2, .y2 = y2, .score = 0.9f};
}

// Variance of one channel over the pixels `region` covers.
double CoveredVariance(const Image& img, const CoverRegion& g, AnonymizeShape shape, int c) {
  double sum = 0, sq = 0;
  int n = 0;
  for (int y = g.y1; y < g.y2; ++y) {
    for (int x = g.x1; x < g.x2; ++x) {
      if (!Covers(g, shape, x, y)) continue;
      const double v = img.pixel(x, y)[c];
      sum += v;
      sq += v * v;
      ++n;
    }
  }
  return sq / n - (sum / n) * (sum / n);
}

TEST(RegionOfTest, ScalesTheBoxAboutItsCentreAndClipsToThePicture) {
  const CoverRegion g = RegionOf(Face(100, 50, 200, 170), 1.3f, 640, 480);
  EXPECT_FLOAT_EQ(g.left, 85);
  EXPECT_FLOAT_EQ(g.right, 215);
  EXPECT_FLOAT_EQ(g.top, 32);
  EXPECT_FLOAT_EQ(g.bottom, 188);
  EXPECT_EQ(g.x1, 85);
  EXPECT_EQ(g.x2, 215);
  EXPECT_EQ(g.y1, 32);
  EXPECT_EQ(g.y2, 188);
  const CoverRegion edge = RegionOf(Face(-20, 440, 40, 500), 1.0f, 640, 480);
  EXPECT_EQ(edge.x1, 0);
  EXPECT_EQ(edge.x2, 40);
  EXPECT_EQ(edge.y2, 480);
  EXPECT_TRUE(RegionOf(Face(700, 10, 760, 60), 1.3f, 640, 480).empty());
  EXPECT_TRUE(RegionOf(Face(10, 10, 10, 60), 1.3f, 640, 480).empty());
  EXPECT_TRUE(RegionOf(Face(NAN, 10, 20, 60), 1.3f, 640, 480).empty());
}

TEST(CoversTest, TheEllipseLeavesTheBoxsCornersAndTheBoxTakesThem) {
  const CoverRegion g = RegionOf(Face(0, 0, 100, 60), 1.0f, 200, 200);
  EXPECT_TRUE(Covers(g, AnonymizeShape::kEllipse, 50, 30));
  EXPECT_TRUE(Covers(g, AnonymizeShape::kEllipse, 0, 29));  // the ends of the axes
  EXPECT_TRUE(Covers(g, AnonymizeShape::kEllipse, 49, 0));
  EXPECT_FALSE(Covers(g, AnonymizeShape::kEllipse, 3, 3));  // a corner
  EXPECT_TRUE(Covers(g, AnonymizeShape::kBox, 3, 3));
  EXPECT_TRUE(Covers(g, AnonymizeShape::kBox, 99, 59));
  EXPECT_FALSE(Covers(g, AnonymizeShape::kBox, 100, 30));
  EXPECT_FALSE(Covers(g, AnonymizeShape::kBox, 50, 60));
}

// Every method and shape: the pixels outside what a face covers are the picture's own, exactly;
// those inside changed as the method says.
TEST(AnonymizeFacesTest, OnlyTheCoveredPixelsChange) {
  const Image original = Noise(320, 240, 7);
  const std::vector<Detection> faces = {Face(40, 30, 120, 130), Face(250, 150, 330, 250)};
  for (AnonymizeMethod method :
       {AnonymizeMethod::kBlur, AnonymizeMethod::kPixelate, AnonymizeMethod::kFill}) {
    for (AnonymizeShape shape : {AnonymizeShape::kEllipse, AnonymizeShape::kBox}) {
      SCOPED_TRACE(std::string(AnonymizeMethodName(method)) + " " + AnonymizeShapeName(shape));
      AnonymizeOptions o;
      o.method = method;
      o.shape = shape;
      o.fill = {10, 200, 30};
      Image img = original;
      AnonymizeFaces(img, faces, o);
      int changed = 0, covered = 0;
      for (int y = 0; y < img.height; ++y) {
        for (int x = 0; x < img.width; ++x) {
          bool in = false;
          for (const Detection& f : faces) {
            in = in || Covers(RegionOf(f, o.box_scale, 320, 240), shape, x, y);
          }
          const bool same = std::equal(img.pixel(x, y), img.pixel(x, y) + 3, original.pixel(x, y));
          if (!in) {
            ASSERT_TRUE(same) << "pixel " << x << "," << y << " outside every face changed";
            continue;
          }
          ++covered;
          changed += same ? 0 : 1;
          if (method == AnonymizeMethod::kFill) {
            ASSERT_EQ(img.pixel(x, y)[1], 200) << x << "," << y;
          }
        }
      }
      EXPECT_GT(covered, 0);
      EXPECT_GT(changed, covered * 0.95) << changed << " of " << covered;  // noise: nearly all
    }
  }
}

// The blur mixes the whole face: on noise, the covered pixels' spread falls to a few per cent of
// the picture's (uniform bytes: variance 5461), and their mean stays the picture's.
TEST(AnonymizeFacesTest, BlurWipesOutTheFacesDetail) {
  Image img = Noise(400, 400, 11);
  const Detection face = Face(100, 80, 260, 280);
  AnonymizeFaces(img, {face}, {});
  const CoverRegion g = RegionOf(face, 1.3f, 400, 400);
  for (int c = 0; c < 3; ++c) {
    EXPECT_LT(CoveredVariance(img, g, AnonymizeShape::kEllipse, c), 0.02 * 5461) << "channel " << c;
  }
  double mean = 0;
  int n = 0;
  for (int y = g.y1; y < g.y2; ++y) {
    for (int x = g.x1; x < g.x2; ++x) {
      if (Covers(g, AnonymizeShape::kEllipse, x, y)) mean += img.pixel(x, y)[0], ++n;
    }
  }
  EXPECT_NEAR(mean / n, 127.5, 5);
}

// Pixelate: cells of the covered box's long side / 8, each one colour (its mean).
TEST(AnonymizeFacesTest, PixelateGivesCellsOfOneColour) {
  Image img = Noise(300, 300, 3);
  const Detection face = Face(60, 60, 220, 220);  // scaled by 1.3: 208 px, cells of 26
  AnonymizeOptions o;
  o.method = AnonymizeMethod::kPixelate;
  o.shape = AnonymizeShape::kBox;
  AnonymizeFaces(img, {face}, o);
  const CoverRegion g = RegionOf(face, o.box_scale, 300, 300);
  ASSERT_EQ(g.x1, 36);
  int cells = 0;
  for (int cy = g.y1; cy + 26 <= g.y2; cy += 26) {
    for (int cx = g.x1; cx + 26 <= g.x2; cx += 26) {
      ++cells;
      for (int y = cy; y < cy + 26; ++y) {
        for (int x = cx; x < cx + 26; ++x) {
          ASSERT_TRUE(std::equal(img.pixel(x, y), img.pixel(x, y) + 3, img.pixel(cx, cy)))
              << "cell at " << cx << "," << cy << " pixel " << x << "," << y;
        }
      }
    }
  }
  EXPECT_EQ(cells, 64);
  EXPECT_FALSE(std::equal(img.pixel(g.x1, g.y1), img.pixel(g.x1, g.y1) + 3,
                          img.pixel(g.x1 + 26, g.y1)));  // neighbouring cells differ
}

TEST(AnonymizeNamesTest, ParseNamesTheFieldAndTheAllowedValues) {
  EXPECT_EQ(*ParseAnonymizeMethod("--method", "pixelate"), AnonymizeMethod::kPixelate);
  EXPECT_EQ(*ParseAnonymizeShape("shape", "box"), AnonymizeShape::kBox);
  const auto bad = ParseAnonymizeMethod("--method", "smudge");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "--method 'smudge' is not one of: blur, pixelate, fill");
}

}  // namespace
}  // namespace mogserve::image
