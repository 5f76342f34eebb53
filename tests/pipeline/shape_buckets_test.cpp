#include "pipeline/shape_buckets.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace mogserve::pipeline {
namespace {

void ExpectConsistent(const ShapeBuckets& buckets, int width, int height) {
  const ShapeBuckets::Placement p = buckets.Place(width, height);
  ASSERT_GE(p.bucket, 0);
  ASSERT_LT(p.bucket, buckets.size());
  const CanvasShape shape = buckets.shape(p.bucket);
  const image::Letterbox& lb = p.letterbox;
  EXPECT_EQ(lb.canvas_width, shape.width) << width << "x" << height;
  EXPECT_EQ(lb.canvas_height, shape.height) << width << "x" << height;
  EXPECT_GE(lb.content_width, 1);
  EXPECT_GE(lb.content_height, 1);
  EXPECT_LE(lb.content_width, lb.canvas_width);
  EXPECT_LE(lb.content_height, lb.canvas_height);
  // The content maps back onto the whole original picture.
  EXPECT_NEAR(lb.content_width * lb.to_source_x, width, 1e-6);
  EXPECT_NEAR(lb.content_height * lb.to_source_y, height, 1e-6);
}

TEST(ShapeBucketsTest, FixedSquareLetterboxesEverythingIntoOneCanvas) {
  const ShapeBuckets b = ShapeBuckets::FixedSquare(512);
  EXPECT_EQ(b.policy(), InputPolicy::kFixed);
  ASSERT_EQ(b.size(), 1);
  EXPECT_EQ(b.shape(0).width, 512);
  const ShapeBuckets::Placement p = b.Place(1024, 512);
  EXPECT_EQ(p.bucket, 0);
  EXPECT_EQ(p.letterbox.content_width, 512);
  EXPECT_EQ(p.letterbox.content_height, 256);
  EXPECT_DOUBLE_EQ(p.letterbox.to_source_x, 2.0);
  for (auto [w, h] : {std::pair{1, 1}, {100, 3000}, {512, 512}, {7, 5}}) ExpectConsistent(b, w, h);
  EXPECT_EQ(b.MinDecodeLongSide(), 512);
}

TEST(ShapeBucketsTest, TargetBucketsCoverSquareFourThreeAndSixteenNine) {
  auto b = ShapeBuckets::Target(640, 32);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->policy(), InputPolicy::kBucket);
  ASSERT_EQ(b->size(), 5);
  for (int i = 0; i < b->size(); ++i) {
    EXPECT_EQ(b->shape(i).width % 32, 0);
    EXPECT_EQ(b->shape(i).height % 32, 0);
  }
  auto shape_of = [&](int w, int h) { return b->shape(b->Place(w, h).bucket); };
  EXPECT_EQ(shape_of(1920, 1080).width, 640);  // 640x360 -> 640x384
  EXPECT_EQ(shape_of(1920, 1080).height, 384);
  EXPECT_EQ(shape_of(1080, 1920).width, 384);
  EXPECT_EQ(shape_of(1600, 1200).height, 480);  // 4:3
  EXPECT_EQ(shape_of(1200, 1600).width, 480);
  EXPECT_EQ(shape_of(1000, 999).height, 640);  // nearly square: only the square holds it
  // Small pictures are scaled up to the target, too.
  const ShapeBuckets::Placement small = b->Place(320, 240);
  EXPECT_EQ(small.letterbox.content_width, 640);
  EXPECT_EQ(small.letterbox.content_height, 480);
  for (auto [w, h] : {std::pair{1, 1}, {10000, 10}, {10, 10000}, {641, 479}, {333, 777}}) {
    ExpectConsistent(*b, w, h);
  }
  EXPECT_EQ(b->Describe(), "bucket 640 (640x640, 640x480, 480x640, 640x384, 384x640)");
}

TEST(ShapeBucketsTest, SmallTargetsCollapseDuplicateShapes) {
  auto b = ShapeBuckets::Target(64, 32);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->size(), 1);  // 64x48 and 64x36 both round up to 64x64
  EXPECT_FALSE(ShapeBuckets::Target(100, 32).ok());
  EXPECT_FALSE(ShapeBuckets::Target(0, 32).ok());
  EXPECT_FALSE(ShapeBuckets::Target(640, 0).ok());
}

TEST(ShapeBucketsTest, ModelScopeRunsTheExactSizeInItsOwnBucket) {
  const ShapeBuckets b = ShapeBuckets::ModelScope(32);
  EXPECT_EQ(b.size(), ShapeBuckets::kModelScopeExactSlots + 47 * 47);
  // Up to 1500 px: the exact size, no padding, one bucket per shape; the same shape again (also
  // through a copy of the buckets) lands in the same bucket.
  const ShapeBuckets::Placement p = b.Place(333, 517);
  EXPECT_EQ(p.letterbox.content_width, 333);
  EXPECT_EQ(p.letterbox.canvas_width, 333);
  EXPECT_EQ(p.letterbox.canvas_height, 517);
  EXPECT_EQ(b.shape(p.bucket).width, 333);
  EXPECT_EQ(b.shape(p.bucket).height, 517);
  EXPECT_EQ(p.letterbox.filter, image::ResizeFilter::kOpenCvLinear);
  const ShapeBuckets copy = b;
  EXPECT_EQ(copy.Place(333, 517).bucket, p.bucket);
  EXPECT_NE(b.Place(334, 517).bucket, p.bucket);
  EXPECT_EQ(b.Place(1500, 1500).letterbox.canvas_width, 1500);
  // Long side over 1500: cv2's sides round(n·s), s = 1000 / long side; boxes map back by 1/s on
  // both axes (ModelScope divides by its factor, not by the rounded side ratio).
  const ShapeBuckets::Placement big = b.Place(1800, 1350);
  EXPECT_EQ(big.letterbox.content_width, 1000);
  EXPECT_EQ(big.letterbox.content_height, 750);
  EXPECT_EQ(b.shape(big.bucket).width, 1000);
  EXPECT_DOUBLE_EQ(big.letterbox.to_source_x, 1.8);
  EXPECT_DOUBLE_EQ(big.letterbox.to_source_y, 1.8);
  const ShapeBuckets::Placement odd = b.Place(1501, 1333);
  EXPECT_EQ(odd.letterbox.content_height, 888);  // 1333 · 1000/1501 = 888.07
  EXPECT_DOUBLE_EQ(odd.letterbox.to_source_y, 1.501);
  EXPECT_EQ(odd.letterbox.source_height, 1333);
  EXPECT_EQ(b.MinDecodeLongSide(), 0);  // cv2 resizes the full picture: no DCT reduction
}

TEST(ShapeBucketsTest, NativeKeepsTheSizeAndPadsBottomRightToTheMultiple) {
  const ShapeBuckets b = ShapeBuckets::Native(32);
  EXPECT_EQ(b.policy(), InputPolicy::kNative);
  EXPECT_EQ(b.size(), 64 * 64);  // 2048 / 32 per side
  // FaceDetectorYN: padW = ((w − 1) / 32 + 1) · 32; the picture unscaled at the top left.
  const ShapeBuckets::Placement p = b.Place(500, 375);
  EXPECT_EQ(p.letterbox.content_width, 500);
  EXPECT_EQ(p.letterbox.content_height, 375);
  EXPECT_EQ(p.letterbox.canvas_width, 512);
  EXPECT_EQ(p.letterbox.canvas_height, 384);
  EXPECT_DOUBLE_EQ(p.letterbox.to_source_x, 1.0);
  EXPECT_EQ(b.shape(p.bucket).width, 512);
  EXPECT_EQ(b.shape(p.bucket).height, 384);
  // Every picture padding to the same shape shares its bucket; a multiple stays as it is.
  EXPECT_EQ(b.Place(481, 353).bucket, p.bucket);
  EXPECT_NE(b.Place(513, 375).bucket, p.bucket);
  EXPECT_EQ(b.Place(640, 480).letterbox.canvas_width, 640);
  EXPECT_EQ(b.Place(1, 1).letterbox.canvas_height, 32);
  // Over 2048: cv2's sides round(n·s), s = 2048 / long side, boxes back by 1/s.
  const ShapeBuckets::Placement big = b.Place(4096, 3000);
  EXPECT_EQ(big.letterbox.content_width, 2048);
  EXPECT_EQ(big.letterbox.content_height, 1500);
  EXPECT_EQ(big.letterbox.canvas_height, 1504);
  EXPECT_DOUBLE_EQ(big.letterbox.to_source_y, 2.0);
  EXPECT_EQ(b.shape(big.bucket).width, 2048);
  EXPECT_EQ(b.shape(big.bucket).height, 1504);
  EXPECT_EQ(b.MinDecodeLongSide(), 0);
}

TEST(ShapeBucketsTest, ModelScopePadsNewShapesOnceEveryExactSlotIsTaken) {
  const ShapeBuckets b = ShapeBuckets::ModelScope(32);
  for (int i = 0; i < ShapeBuckets::kModelScopeExactSlots; ++i) {
    const ShapeBuckets::Placement p = b.Place(1 + i % 1000, 1 + i / 1000);
    ASSERT_EQ(p.bucket, i);
  }
  const ShapeBuckets::Placement seen = b.Place(5, 1);  // an exact slot already
  EXPECT_EQ(seen.bucket, 4);
  const ShapeBuckets::Placement late = b.Place(100, 50);
  EXPECT_GE(late.bucket, ShapeBuckets::kModelScopeExactSlots);
  EXPECT_EQ(late.letterbox.content_width, 100);
  EXPECT_EQ(late.letterbox.canvas_width, 128);
  EXPECT_EQ(b.shape(late.bucket).width, 128);
  EXPECT_EQ(b.shape(late.bucket).height, 64);
  EXPECT_NE(b.Describe().find("padded to multiples of 32"), std::string::npos);
}

TEST(ShapeBucketsTest, ParseInputPolicy) {
  EXPECT_EQ(*ParseInputPolicy("bucket"), InputPolicy::kBucket);
  EXPECT_EQ(*ParseInputPolicy("modelscope"), InputPolicy::kModelScope);
  const auto bad = ParseInputPolicy("square");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("bucket, modelscope"), std::string::npos);
}

}  // namespace
}  // namespace mogserve::pipeline
