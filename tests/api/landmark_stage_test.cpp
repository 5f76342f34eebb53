// The landmark stage's crop (api/landmark_stage.h): the face's box cut from the canvas, padded to
// a centred square with black, resized to 112x112, and the map back to picture pixels.
#include "api/landmark_stage.h"

#include <gtest/gtest.h>

#include <cmath>

namespace mogserve::api {
namespace {

// A canvas whose red channel is 4·x and green 4·y: bilinear sampling of it is exact.
std::vector<uint8_t> Ramp(int width, int height) {
  std::vector<uint8_t> canvas(static_cast<size_t>(width) * height * 3);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      uint8_t* p = &canvas[(static_cast<size_t>(y) * width + x) * 3];
      p[0] = static_cast<uint8_t>(4 * x);
      p[1] = static_cast<uint8_t>(4 * y);
      p[2] = 200;
    }
  }
  return canvas;
}

TEST(LandmarkCrop, TallBoxIsCentredInASquareWithBlackBesideIt) {
  image::Letterbox box;
  box.canvas_width = 64;
  box.canvas_height = 48;
  box.content_width = 60;
  box.content_height = 40;
  box.to_source_x = box.to_source_y = 2.0;
  const std::vector<uint8_t> canvas = Ramp(64, 48);
  Detection face;
  face.x1 = 20;  // canvas 10 .. 30 wide (20), 5 .. 35 tall (30)
  face.y1 = 10;
  face.x2 = 60;
  face.y2 = 70;
  const LandmarkCrop crop = CutLandmarkCrop(canvas, box, face);
  EXPECT_EQ(crop.side, 30);
  EXPECT_EQ(crop.origin_x, 5);  // 10 padding columns: 5 before, 5 after
  EXPECT_EQ(crop.origin_y, 5);
  ASSERT_EQ(crop.pixels.size(), 112u * 112 * 3);
  const double scale = 30.0 / 112;
  for (int oy : {10, 56, 100}) {
    for (int ox = 0; ox < 112; ++ox) {
      const uint8_t* p = &crop.pixels[(oy * 112 + ox) * 3];
      const double fx = (ox + 0.5) * scale - 0.5;  // square pixels
      const double fy = (oy + 0.5) * scale - 0.5;
      if (fx < 4 || fx > 25) {  // wholly in the padding columns (5 each side)
        EXPECT_EQ(p[2], 0) << ox << "," << oy;
      } else if (fx > 5 && fx < 24) {  // wholly inside the box
        EXPECT_NEAR(p[0], 4 * (5 + fx), 0.51) << ox << "," << oy;
        EXPECT_NEAR(p[1], 4 * (5 + fy), 0.51) << ox << "," << oy;
        EXPECT_EQ(p[2], 200) << ox << "," << oy;
      }
    }
  }
}

TEST(LandmarkCrop, BoxBeyondThePictureIsClippedToIt) {
  image::Letterbox box;
  box.canvas_width = box.canvas_height = 32;
  box.content_width = 20;  // columns 20..31 are the canvas's padding, not the picture
  box.content_height = 32;
  const std::vector<uint8_t> canvas = Ramp(32, 32);
  Detection face;
  face.x1 = 10;
  face.y1 = -4;
  face.x2 = 30;
  face.y2 = 12;
  const LandmarkCrop crop = CutLandmarkCrop(canvas, box, face);
  // Clipped to x 10..20, y 0..12: 10 x 12, one column of black before, one after.
  EXPECT_EQ(crop.side, 12);
  EXPECT_EQ(crop.origin_x, 9);
  EXPECT_EQ(crop.origin_y, 0);
  // The last columns are black: the canvas's padding was not read.
  for (int oy = 0; oy < 112; ++oy) EXPECT_EQ(crop.pixels[(oy * 112 + 111) * 3 + 2], 0) << oy;
}

}  // namespace
}  // namespace mogserve::api
