// The landmark stage's crop (api/landmark_stage.h): the face's box cut from the canvas, padded to
// a centred square with black, resized to 112x112, and the map back to picture pixels.
#include "api/landmark_stage.h"

#include "mogserve/align.h"
#include "mogserve/anonymize.h"

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

// The public AlignFace: a strided picture whose five points sit on the 112 template already
// comes back as the same pixels; bad input names what is wrong.
TEST(PublicAlignFace, PointsOnTheTemplateGiveThePictureBackAndBadInputIsNamed) {
  constexpr int kStride = 112 * 3 + 8;  // rows padded
  std::vector<uint8_t> rows(static_cast<size_t>(kStride) * 112, 77);
  for (int y = 0; y < 112; ++y) {
    for (int x = 0; x < 112; ++x) {
      uint8_t* p = &rows[static_cast<size_t>(y) * kStride + x * 3];
      p[0] = static_cast<uint8_t>(2 * x);
      p[1] = static_cast<uint8_t>(2 * y);
      p[2] = 9;
    }
  }
  const Pixels picture{rows.data(), 112, 112, kStride};
  const std::vector<Point> five = {{38.7946f, 52.1963f},
                                   {74.0318f, 52.0014f},
                                   {56.5252f, 72.2366f},
                                   {42.0493f, 92.8655f},
                                   {71.2299f, 92.7041f}};  // arcface_dst + 0.5
  auto crop = AlignFace(picture, five);
  ASSERT_TRUE(crop.ok()) << crop.status().ToString();
  ASSERT_EQ(crop->width, 112);
  ASSERT_EQ(crop->rgb.size(), 112u * 112 * 3);
  for (int y = 0; y < 112; y += 7) {
    for (int x = 0; x < 112; x += 7) {
      const uint8_t* p = &crop->rgb[(static_cast<size_t>(y) * 112 + x) * 3];
      EXPECT_NEAR(p[0], 2 * x, 1) << x << "," << y;
      EXPECT_NEAR(p[1], 2 * y, 1) << x << "," << y;
      EXPECT_EQ(p[2], 9);
    }
  }
  auto short_stride = AlignFace({rows.data(), 112, 112, 100}, five);
  ASSERT_FALSE(short_stride.ok());
  EXPECT_NE(short_stride.status().message().find("stride"), std::string::npos);
  EXPECT_FALSE(AlignFace({nullptr, 112, 112, 0}, five).ok());
  EXPECT_FALSE(AlignFace(picture, std::span(five).first(4)).ok());
  EXPECT_FALSE(AlignFace(picture, five, 100).ok());
}

// The public Anonymize on a strided picture: the covered pixels change, the row padding and
// everything outside the face stay; bad options and pixels are named.
TEST(PublicAnonymize, CoversTheFaceInPlaceAndNamesBadInput) {
  constexpr int kW = 64, kH = 48, kStride = kW * 3 + 5;
  std::vector<uint8_t> rows(static_cast<size_t>(kStride) * kH, 200);
  const std::vector<Detection> faces = {{.x1 = 20, .y1 = 10, .x2 = 40, .y2 = 30, .score = 0.9f}};
  AnonymizeOptions o;
  o.method = "fill";
  o.shape = "box";
  o.box_scale = 1.0f;
  o.fill_rgb[1] = 7;
  ASSERT_TRUE(Anonymize(rows.data(), kW, kH, kStride, faces, o).ok());
  for (int y = 0; y < kH; ++y) {
    for (int x = 0; x < kW; ++x) {
      const bool in = x >= 20 && x < 40 && y >= 10 && y < 30;
      EXPECT_EQ(rows[static_cast<size_t>(y) * kStride + x * 3 + 1], in ? 7 : 200) << x << "," << y;
    }
    for (int pad = kW * 3; pad < kStride; ++pad) {
      EXPECT_EQ(rows[static_cast<size_t>(y) * kStride + pad], 200) << "row padding of " << y;
    }
  }
  o.method = "smudge";
  const Status bad = Anonymize(rows.data(), kW, kH, kStride, faces, o);
  EXPECT_EQ(bad.message(), "method 'smudge' is not one of: blur, pixelate, fill");
  o.method = "blur";
  o.box_scale = 5;
  EXPECT_NE(Anonymize(rows.data(), kW, kH, kStride, faces, o).message().find("box_scale"),
            std::string::npos);
  o.box_scale = 1.3f;
  EXPECT_NE(Anonymize(rows.data(), kW, kH, 10, faces, o).message().find("stride"),
            std::string::npos);
  EXPECT_FALSE(Anonymize(nullptr, kW, kH, 0, faces, o).ok());
}

}  // namespace
}  // namespace mogserve::api
