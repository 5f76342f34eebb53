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

TEST(ShapeBucketsTest, ModelScopeKeepsTheSizeAndPadsToTheMultiple) {
  const ShapeBuckets b = ShapeBuckets::ModelScope(32);
  EXPECT_EQ(b.size(), 47 * 47);  // sides 32..1504
  const ShapeBuckets::Placement p = b.Place(100, 50);
  EXPECT_EQ(p.letterbox.content_width, 100);
  EXPECT_EQ(p.letterbox.content_height, 50);
  EXPECT_EQ(b.shape(p.bucket).width, 128);
  EXPECT_EQ(b.shape(p.bucket).height, 64);
  // Long side over 1500: scaled to 1000.
  const ShapeBuckets::Placement big = b.Place(3000, 1500);
  EXPECT_EQ(big.letterbox.content_width, 1000);
  EXPECT_EQ(big.letterbox.content_height, 500);
  EXPECT_EQ(b.shape(big.bucket).width, 1024);
  EXPECT_EQ(b.shape(big.bucket).height, 512);
  // Exactly 1500 stays.
  EXPECT_EQ(b.Place(1500, 1500).letterbox.content_width, 1500);
  EXPECT_EQ(b.shape(b.Place(1500, 1500).bucket).width, 1504);
  for (auto [w, h] : {std::pair{1, 1}, {31, 33}, {1501, 2}, {4000, 4000}, {1504, 1}}) {
    ExpectConsistent(b, w, h);
  }
  // Every bucket index maps back to the shape it was computed from (the 1504 sides hold
  // pictures of 1473..1500: longer ones are scaled to 1000).
  for (int bucket : {0, 1, 46, 47, 2208}) {
    const CanvasShape s = b.shape(bucket);
    const int w = std::min(s.width, 1500), h = std::min(s.height, 1500);
    EXPECT_EQ(b.shape(b.Place(w, h).bucket).width, s.width);
    EXPECT_EQ(b.Place(w, h).bucket, bucket);
  }
  EXPECT_EQ(b.MinDecodeLongSide(), 1000);
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
