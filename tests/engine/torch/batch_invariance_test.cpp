// The forward pass must not depend on which other images share its batch, nor on the batch size
// or the position in the batch; and the zero letterbox padding must behave like a black border
// in the picture itself.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "image/decode.h"
#include "image/resize.h"
#include "model/ssd_box_coder.h"
#include "model_test_util.h"
#include "pipeline/prepared_image.h"

namespace mogserve::engine {
namespace {

using testing_util::BoxString;
using testing_util::GreedyMatch;
using testing_util::PhotoPath;
using testing_util::ReadBytes;

// Measured on the 2-core development machine (Debian 12, LibTorch 1.13, oneDNN; the test prints
// the values): batch 1 vs batches of 7, 2 and 3 in other positions gave max |score diff| 2.4e-8
// and max |encoding diff| 1.25e-6 (float rounding of oneDNN's per-batch-size kernels). The
// bounds are ~40x above that, leaving room for other CPUs' kernels, and far below anything that
// could move a box: a real mix-up of images or positions gives differences of order 0.1..10.
constexpr double kScoreTolerance = 1e-6;
constexpr double kEncodingTolerance = 5e-5;

struct MaxDiff {
  double score = 0, encoding = 0;
};

MaxDiff Compare(const BatchOutputs& a, int ia, const BatchOutputs& b, int ib) {
  MaxDiff d;
  const auto sa = a.scores_of(ia), sb = b.scores_of(ib);
  for (size_t i = 0; i < sa.size(); ++i)
    d.score = std::max(d.score, double{std::abs(sa[i] - sb[i])});
  const auto ea = a.boxes_of(ia), eb = b.boxes_of(ib);
  for (size_t i = 0; i < ea.size(); ++i) {
    d.encoding = std::max(d.encoding, double{std::abs(ea[i] - eb[i])});
  }
  return d;
}

class BatchInvarianceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto created = testing_util::LoadEngine(testing_util::TestEngineOptions());
    if (created.ok()) engine_ = std::move(created).value().release();
  }
  static void TearDownTestSuite() {
    delete engine_;
    engine_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(engine_, nullptr) << "the engine failed to load"; }

  // Runs the images with the given indices as one batch.
  static BatchOutputs Run(const std::vector<pipeline::PreparedImage>& images,
                          const std::vector<int>& indices) {
    CanvasBatch canvases;
    canvases.width = canvases.height = 512;
    for (int i : indices) canvases.canvases.push_back(images[i].canvas.data.data());
    auto out = engine_->Forward(canvases);
    EXPECT_TRUE(out.ok()) << out.status().ToString();
    return out.ok() ? std::move(out).value() : BatchOutputs{};
  }

  static std::vector<Detection> Faces(const BatchOutputs& out, int index,
                                      const image::Letterbox& letterbox) {
    return engine_->model()->Postprocess(out.rows_of(index, letterbox), DetectOptions{});
  }

  static Engine* engine_;
};

Engine* BatchInvarianceTest::engine_ = nullptr;

TEST_F(BatchInvarianceTest, BatchCompositionDoesNotChangeResults) {
  const std::vector<std::string> names = {"sample1.jpg",     "sample2.jpg", "sample3.jpg",
                                          "sample4.jpg",     "sample5.jpg", "sample6.jpg",
                                          "grace_hopper.jpg"};
  const int n = static_cast<int>(names.size());
  std::vector<pipeline::PreparedImage> images;
  for (const std::string& name : names) {
    auto prepared = pipeline::PrepareImage(ReadBytes(PhotoPath(name)),
                                           pipeline::ShapeBuckets::FixedSquare(512), {});
    ASSERT_TRUE(prepared.ok()) << name << ": " << prepared.status().ToString();
    images.push_back(std::move(prepared).value());
  }

  // The reference: each image alone.
  std::vector<BatchOutputs> single;
  for (int i = 0; i < n; ++i) single.push_back(Run(images, {i}));

  // All at once, then batches of 2 and 3 with the images in other positions and orders.
  struct Batch {
    std::vector<int> indices;
    BatchOutputs out;
  };
  std::vector<Batch> batches;
  std::vector<int> all;
  for (int i = 0; i < n; ++i) all.push_back(i);
  batches.push_back({all, {}});
  batches.push_back({{1, 0}, {}});
  batches.push_back({{6, 3, 2}, {}});
  batches.push_back({{5, 4}, {}});
  for (Batch& b : batches) b.out = Run(images, b.indices);

  MaxDiff worst;
  for (const Batch& b : batches) {
    for (int pos = 0; pos < static_cast<int>(b.indices.size()); ++pos) {
      const int i = b.indices[pos];
      SCOPED_TRACE(names[i] + " at position " + std::to_string(pos) + " of a batch of " +
                   std::to_string(b.indices.size()));
      ASSERT_EQ(b.out.batch, static_cast<int>(b.indices.size()));
      const MaxDiff d = Compare(b.out, pos, single[i], 0);
      worst.score = std::max(worst.score, d.score);
      worst.encoding = std::max(worst.encoding, d.encoding);
      EXPECT_LE(d.score, kScoreTolerance);
      EXPECT_LE(d.encoding, kEncodingTolerance);

      const std::vector<Detection> got = Faces(b.out, pos, images[i].letterbox);
      const std::vector<Detection> want = Faces(single[i], 0, images[i].letterbox);
      ASSERT_EQ(got.size(), want.size());
      EXPECT_FALSE(want.empty()) << "each of these photos has faces";
      const std::vector<int> match = GreedyMatch(want, got, 0.99f);
      for (size_t k = 0; k < want.size(); ++k) {
        EXPECT_GE(match[k], 0) << "unmatched " << BoxString(want[k]);
      }
    }
  }
  std::printf(
      "batch invariance over %zu batches: max |score diff| %.3g, max |encoding diff| %.3g\n",
      batches.size(), worst.score, worst.encoding);
}

TEST_F(BatchInvarianceTest, LetterboxPaddingActsLikeABlackBorder) {
  // sample1.jpg is 1920x1280: letterboxed, the bottom 171 of 512 canvas rows are zero padding.
  // The same picture extended to 1920x1920 with black rows is square and fills the canvas; its
  // black rows become the same (up to resampling at the seam) black area. Both must give the
  // same faces in original pixels: the padding carries no signal and the mapping back undoes
  // the different scales (3.75 vs 1280/341 vertically).
  auto decoded = image::Decode(ReadBytes(PhotoPath("sample1.jpg")));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  const image::Image& photo = decoded->image;
  ASSERT_EQ(photo.width, 1920);
  ASSERT_EQ(photo.height, 1280);
  image::Image square(1920, 1920);  // zero-filled
  std::memcpy(square.data.data(), photo.data.data(), photo.data.size());

  const image::Letterbox lb_photo = image::FitLetterbox(1920, 1280, 512, 512);
  const image::Letterbox lb_square = image::FitLetterbox(1920, 1920, 512, 512);
  const image::Image canvas_photo = image::RenderLetterbox(photo, lb_photo);
  const image::Image canvas_square = image::RenderLetterbox(square, lb_square);
  ASSERT_EQ(lb_photo.content_height, 341);
  ASSERT_EQ(lb_square.content_height, 512);

  CanvasBatch batch;
  batch.width = batch.height = 512;
  batch.canvases = {canvas_photo.data.data(), canvas_square.data.data()};
  auto out = engine_->Forward(batch);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const std::vector<Detection> from_photo = Faces(*out, 0, lb_photo);
  const std::vector<Detection> from_square = Faces(*out, 1, lb_square);
  ASSERT_EQ(from_photo.size(), 3u);
  ASSERT_EQ(from_square.size(), from_photo.size());
  // Measured: IoU 0.992..0.996 and score differences below 0.001 between the two.
  const std::vector<int> match = GreedyMatch(from_photo, from_square, 0.95f);
  for (size_t k = 0; k < from_photo.size(); ++k) {
    ASSERT_GE(match[k], 0) << "unmatched " << BoxString(from_photo[k]);
    const Detection& a = from_photo[k];
    const Detection& b = from_square[match[k]];
    std::printf("padding: %s vs %s, IoU %.4f\n", BoxString(a).c_str(), BoxString(b).c_str(),
                IoU(a, b));
    EXPECT_NEAR(a.score, b.score, 0.01);
    EXPECT_LE(b.y2, 1280.0f) << "no face in the black rows";
  }
}

}  // namespace
}  // namespace mogserve::engine
