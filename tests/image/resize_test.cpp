#include "image/resize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "test_images.h"

namespace mogserve::image {
namespace {

using testutil::Color;

TEST(ResizeTest, ConstantImageStaysConstant) {
  const Image src = testutil::MakeSolid(37, 23, Color{12, 200, 99});
  const std::pair<int, int> sizes[] = {{10, 7}, {1, 1}, {37, 5}, {100, 23}, {200, 150}, {3, 90}};
  for (const auto& [w, h] : sizes) {
    const Image dst = Resize(src, w, h);
    ASSERT_EQ(dst.width, w);
    ASSERT_EQ(dst.height, h);
    EXPECT_EQ(testutil::MaxAbsDiff(dst, testutil::MakeSolid(w, h, Color{12, 200, 99})), 0)
        << w << "x" << h;
  }
}

TEST(ResizeTest, SameSizeIsACopy) {
  const Image src = testutil::MakeGradient(20, 10);
  EXPECT_EQ(testutil::MaxAbsDiff(Resize(src, 20, 10), src), 0);
}

TEST(ResizeTest, InvalidSizesGiveAnEmptyImage) {
  EXPECT_TRUE(Resize(testutil::MakeGradient(4, 4), 0, 5).empty());
  EXPECT_TRUE(Resize(testutil::MakeGradient(4, 4), 5, -1).empty());
  EXPECT_TRUE(Resize(Image(), 5, 5).empty());
}

TEST(ResizeTest, ShrinkingACheckerboardAveragesInsteadOfAliasing) {
  Image board(64, 64);
  for (int y = 0; y < 64; ++y) {
    for (int x = 0; x < 64; ++x) {
      const uint8_t v = (x + y) % 2 ? 255 : 0;
      uint8_t* p = board.pixel(x, y);
      p[0] = p[1] = p[2] = v;
    }
  }
  for (int size : {16, 13, 5}) {
    const Image small = Resize(board, size, size);
    for (uint8_t v : small.data) {
      EXPECT_GE(v, 112) << size;
      EXPECT_LE(v, 143) << size;
    }
  }
}

TEST(ResizeTest, EnlargingIsMonotoneBetweenSamples) {
  Image src(2, 2);
  const uint8_t values[2][2] = {{0, 100}, {100, 200}};
  for (int y = 0; y < 2; ++y) {
    for (int x = 0; x < 2; ++x) src.pixel(x, y)[0] = values[y][x];
  }
  const Image big = Resize(src, 9, 7);
  ASSERT_EQ(big.width, 9);
  ASSERT_EQ(big.height, 7);
  for (int y = 0; y < 7; ++y) {
    for (int x = 1; x < 9; ++x) EXPECT_GE(big.pixel(x, y)[0], big.pixel(x - 1, y)[0]);
  }
  for (int x = 0; x < 9; ++x) {
    for (int y = 1; y < 7; ++y) EXPECT_GE(big.pixel(x, y)[0], big.pixel(x, y - 1)[0]);
  }
  EXPECT_EQ(big.pixel(0, 0)[0], 0);  // corners clamp to the corner samples
  EXPECT_EQ(big.pixel(8, 6)[0], 200);
  EXPECT_EQ(big.pixel(4, 3)[0], 100);  // the centre is the mean of all four
}

TEST(ResizeTest, HalvingAveragesPixelPairsLikeABoxWhereSymmetric) {
  // A 4x1 ramp halved: the stretched triangle gives weights 1/8, 3/8, 3/8, 1/8 (renormalised at
  // the borders), as PIL's BILINEAR does.
  Image src(4, 1);
  const uint8_t ramp[] = {0, 80, 160, 240};
  for (int x = 0; x < 4; ++x) src.pixel(x, 0)[0] = ramp[x];
  const Image half = Resize(src, 2, 1);
  // left: (0 * 3/8 + 80 * 3/8 + 160 * 1/8) / (7/8) = 57.1; right mirrors it: 240 - 57.1.
  EXPECT_EQ(half.pixel(0, 0)[0], 57);
  EXPECT_EQ(half.pixel(1, 0)[0], 183);
}

TEST(ResizeTest, TimingOfATypicalModelInputResize) {
  const Image src = testutil::MakeGradient(960, 640);
  Image dst = Resize(src, 512, 341);  // warm-up
  constexpr int kRounds = 20;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kRounds; ++i) dst = Resize(src, 512, 341);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() /
      kRounds;
  std::printf("Resize 960x640 -> 512x341: %.2f ms per call\n", ms);
  EXPECT_EQ(dst.width, 512);
  EXPECT_LT(ms, 250.0);  // only catches disasters; sanitizer builds are slow
}

TEST(FitLetterboxTest, Landscape1920x1280Into512) {
  const Letterbox box = FitLetterbox(1920, 1280, 512, 512);
  EXPECT_EQ(box.canvas_width, 512);
  EXPECT_EQ(box.canvas_height, 512);
  EXPECT_EQ(box.content_width, 512);
  EXPECT_EQ(box.content_height, 341);
  EXPECT_DOUBLE_EQ(box.to_source_x, 3.75);
  EXPECT_DOUBLE_EQ(box.to_source_y, 1280.0 / 341.0);
}

TEST(FitLetterboxTest, OtherShapes) {
  Letterbox box = FitLetterbox(1280, 1920, 512, 512);  // portrait
  EXPECT_EQ(box.content_width, 341);
  EXPECT_EQ(box.content_height, 512);
  box = FitLetterbox(100, 50, 640, 480);  // enlarging, width-bound
  EXPECT_EQ(box.content_width, 640);
  EXPECT_EQ(box.content_height, 320);
  EXPECT_DOUBLE_EQ(box.to_source_x, 100.0 / 640.0);
  box = FitLetterbox(10000, 1, 512, 512);  // extreme strip keeps at least one row
  EXPECT_EQ(box.content_width, 512);
  EXPECT_EQ(box.content_height, 1);
  box = FitLetterbox(1, 1, 512, 384);
  EXPECT_EQ(box.content_width, 384);
  EXPECT_EQ(box.content_height, 384);
  box = FitLetterbox(0, 10, 512, 512);
  EXPECT_EQ(box.content_width, 0);
}

// insightface's SCRFD.detect: the other side int()-truncated (455.67 → 455, 546.13 → 546), one
// det_scale (content height / height) for both axes, cv2.resize to that size.
TEST(FitLetterboxTest, InsightFaceTruncatesAndScalesByTheHeight) {
  Letterbox box = FitLetterbox(1920, 1367, 640, 640, FitRule::kInsightFace);
  EXPECT_EQ(box.content_width, 640);
  EXPECT_EQ(box.content_height, 455);  // FitRule::kRounded: 456
  EXPECT_EQ(FitLetterbox(1920, 1367, 640, 640).content_height, 456);
  EXPECT_DOUBLE_EQ(box.to_source_x, 1367.0 / 455.0);
  EXPECT_DOUBLE_EQ(box.to_source_y, 1367.0 / 455.0);
  EXPECT_EQ(box.filter, ResizeFilter::kOpenCvLinearToSize);
  box = FitLetterbox(512, 600, 640, 640, FitRule::kInsightFace);  // portrait, enlarged
  EXPECT_EQ(box.content_width, 546);
  EXPECT_EQ(box.content_height, 640);
  EXPECT_DOUBLE_EQ(box.to_source_x, 600.0 / 640.0);
  box = FitLetterbox(640, 640, 640, 640, FitRule::kInsightFace);  // square: the whole canvas
  EXPECT_EQ(box.content_width, 640);
  EXPECT_EQ(box.content_height, 640);
  box = FitLetterbox(10000, 1, 640, 640, FitRule::kInsightFace);  // int(0.064) → at least 1
  EXPECT_EQ(box.content_height, 1);
}

TEST(RenderLetterboxTest, PlacesContentAtOriginAndZeroesPadding) {
  // A decoder-reduced 960x640 picture of a 1920x1280 original: the geometry is the original's.
  const Image src = testutil::MakeSolid(960, 640, Color{200, 150, 100});
  const Letterbox box = FitLetterbox(1920, 1280, 512, 512);
  const Image canvas = RenderLetterbox(src, box);
  ASSERT_EQ(canvas.width, 512);
  ASSERT_EQ(canvas.height, 512);
  EXPECT_EQ(box.content_width, 512);
  EXPECT_EQ(box.content_height, 341);
  EXPECT_DOUBLE_EQ(box.to_source_x, 3.75);  // relative to the original, not to src
  EXPECT_DOUBLE_EQ(box.to_source_y, 1280.0 / 341.0);
  for (int y = 0; y < 512; ++y) {
    for (int x = 0; x < 512; ++x) {
      const Color expected = y < 341 ? Color{200, 150, 100} : Color{0, 0, 0};
      ASSERT_TRUE(testutil::PixelNear(canvas, x, y, expected, 0)) << x << "," << y;
    }
  }
}

TEST(RenderLetterboxTest, PortraitPadsOnTheRight) {
  const Image src = testutil::MakeSolid(30, 60, Color{9, 9, 9});
  const Letterbox box = FitLetterbox(30, 60, 64, 64);
  const Image canvas = RenderLetterbox(src, box);
  EXPECT_EQ(box.content_width, 32);
  EXPECT_EQ(box.content_height, 64);
  EXPECT_TRUE(testutil::PixelNear(canvas, 31, 63, Color{9, 9, 9}, 0));
  EXPECT_TRUE(testutil::PixelNear(canvas, 32, 0, Color{0, 0, 0}, 0));
  EXPECT_TRUE(testutil::PixelNear(canvas, 63, 63, Color{0, 0, 0}, 0));
}

TEST(RenderLetterboxTest, IntoABufferOverwritesEveryByte) {
  // A reused canvas (the pipeline's pool) holds the previous picture: nothing of it may remain.
  const Image src = testutil::MakeSolid(40, 20, Color{7, 8, 9});
  const Letterbox box = FitLetterbox(40, 20, 32, 32);
  ASSERT_EQ(box.content_width, 32);
  ASSERT_EQ(box.content_height, 16);
  std::vector<uint8_t> canvas(32 * 32 * 3, 0xAB);
  RenderLetterboxInto(src, box, canvas.data());
  EXPECT_EQ(RenderLetterbox(src, box).data, canvas);
  for (int y = 0; y < 32; ++y) {
    for (int x = 0; x < 32; ++x) {
      const uint8_t* p = canvas.data() + (y * 32 + x) * 3;
      const uint8_t expected[3] = {static_cast<uint8_t>(y < 16 ? 7 : 0),
                                   static_cast<uint8_t>(y < 16 ? 8 : 0),
                                   static_cast<uint8_t>(y < 16 ? 9 : 0)};
      ASSERT_EQ(std::vector<uint8_t>(p, p + 3), std::vector<uint8_t>(expected, expected + 3))
          << x << "," << y;
    }
  }
  // An empty picture leaves an all-zero canvas.
  std::fill(canvas.begin(), canvas.end(), 0xAB);
  RenderLetterboxInto(Image(), box, canvas.data());
  EXPECT_EQ(std::count(canvas.begin(), canvas.end(), 0), static_cast<long>(canvas.size()));
}

TEST(RenderLetterboxTest, ZeroPaddingLeavesTheContent) {
  Letterbox box = FitLetterbox(20, 40, 16, 16);  // content 8x16: padding on the right only
  ASSERT_EQ(box.content_width, 8);
  std::vector<uint8_t> canvas(16 * 16 * 3, 0xAB);
  ZeroLetterboxPadding(box, canvas.data());
  for (int y = 0; y < 16; ++y) {
    for (int x = 0; x < 16; ++x) {
      ASSERT_EQ(canvas[(y * 16 + x) * 3], x < 8 ? 0xAB : 0) << x << "," << y;
    }
  }
}

}  // namespace
}  // namespace mogserve::image
