// Tests of the MogFace engine: creation errors, the on-engine normalisation against the
// torch-free reference (spec §6a), padded batch rows, instances sharing weights, batch and
// padding invariance, post-processing into original pixels.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "image/decode.h"
#include "image/resize.h"
#include "model/input_normalization.h"
#include "model/layer_plan.h"
#include "model/mogface/mogface_model.h"
#include "model/mogface/synthetic_weights.h"
#include "model/reference/reference_executor.h"
#include "model_test_util.h"
#include "pipeline/shape_buckets.h"

#include "common/cpu_info.h"

namespace mogserve::engine {
namespace {

using ::testing::HasSubstr;
using testing_util::PhotoPath;
using testing_util::ReadBytes;

api::EngineSetup SyntheticOptions(const std::string& variant, Precision precision) {
  api::EngineSetup options;
  options.model.spec = model::FindModel("mogface").value();
  options.model.source.synthetic_weights = variant;
  options.engine.precision = precision;
  return options;
}

std::unique_ptr<Engine> MustCreate(const api::EngineSetup& options) {
  auto created = testing_util::LoadEngine(options);
  EXPECT_TRUE(created.ok()) << created.status().ToString();
  return created.ok() ? std::move(created).value() : nullptr;
}

// A real photo scaled to width x height.
image::Image Photo(const std::string& name, int width, int height) {
  auto decoded = image::Decode(ReadBytes(PhotoPath(name)));
  EXPECT_TRUE(decoded.ok()) << decoded.status().ToString();
  return image::Resize(decoded->image, width, height);
}

// `picture` at the top-left of a canvas_w x canvas_h canvas, with its geometry.
struct Placed {
  image::Image canvas;
  image::Letterbox letterbox;
};
Placed Place(const image::Image& picture, int canvas_w, int canvas_h) {
  Placed p;
  p.letterbox = image::PlaceLetterbox(picture.width, picture.height, picture.width, picture.height,
                                      canvas_w, canvas_h);
  p.canvas = image::RenderLetterbox(picture, p.letterbox);
  return p;
}

CanvasBatch Batch(const std::vector<const Placed*>& items) {
  CanvasBatch b;
  b.width = items[0]->canvas.width;
  b.height = items[0]->canvas.height;
  for (const Placed* p : items) {
    b.canvases.push_back(p->canvas.data.data());
    b.geometry.push_back(p->letterbox);
  }
  return b;
}

double MaxAbsDiff(std::span<const float> a, std::span<const float> b) {
  EXPECT_EQ(a.size(), b.size());
  double d = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    d = std::max(d, double{std::abs(a[i] - b[i])});
  }
  return d;
}

TEST(MogFaceEngineTest, CreateErrorsNameTheProblem) {
  api::EngineSetup fp16 = SyntheticOptions("r50", Precision::kFp16);
  auto r = testing_util::LoadEngine(fp16);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("CUDA"));
  EXPECT_THAT(r.status().message(), HasSubstr("fp32, bf16"));

  api::EngineSetup neither = SyntheticOptions("", Precision::kFp32);
  r = testing_util::LoadEngine(neither);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("--weights FILE"));

  api::EngineSetup both = SyntheticOptions("r50", Precision::kFp32);
  both.model.source.weights = "x.pt";
  r = testing_util::LoadEngine(both);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("exactly one"));

  r = testing_util::LoadEngine(SyntheticOptions("r34", Precision::kFp32));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("r34"));

  api::EngineSetup missing = SyntheticOptions("", Precision::kFp32);
  missing.model.source.weights = "/nonexistent/model_140000.pth";
  r = testing_util::LoadEngine(missing);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound) << r.status().ToString();
  EXPECT_THAT(r.status().message(), HasSubstr("/nonexistent/model_140000.pth"));

  // A real torch.save file that is not a MogFace checkpoint: the strict check names keys.
  api::EngineSetup not_mogface = SyntheticOptions("", Precision::kFp32);
  not_mogface.model.source.weights = testing_util::DataDir() + "/checkpoints/plain.pt";
  r = testing_util::LoadEngine(not_mogface);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidData) << r.status().ToString();
  EXPECT_THAT(r.status().message(), HasSubstr("plain.pt"));

  api::EngineSetup ssd_fp16;  // a CUDA precision, for either model
  ssd_fp16.model.source.model_dir = MOGSERVE_TEST_MODEL_DIR;
  ssd_fp16.engine.precision = Precision::kFp16;
  r = testing_util::LoadEngine(ssd_fp16);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("allowed: fp32, bf16"));
}

TEST(MogFaceEngineTest, InfoDefaultsAndMacs) {
  // BF16 where the CPU runs it, else FP32 (the info does not depend on it).
  const Precision precision = HostCpu().RunsBf16() ? Precision::kBf16 : Precision::kFp32;
  const std::string name = PrecisionName(precision);
  auto engine = MustCreate(SyntheticOptions("r50", precision));
  ASSERT_NE(engine, nullptr);
  const EngineInfo& info = engine->info();
  EXPECT_EQ(info.model, "mogface");
  EXPECT_EQ(info.variant, "r50");
  EXPECT_EQ(info.precision, name);
  EXPECT_EQ(info.multiple, 32);
  EXPECT_EQ(info.fixed_side, 0);
  EXPECT_THAT(info.Describe(), HasSubstr("mogface r50 on cpu, " + name));
  EXPECT_EQ(info.cpu_isa, IsaLevelName(HostCpu().Level()));
  EXPECT_EQ(info.cpu_features, HostCpu().Names());
  const DetectOptions d = engine->model()->default_detect_options();
  EXPECT_FLOAT_EQ(d.score_threshold, 0.82f);  // ModelScope's (spec §7)
  EXPECT_EQ(d.top_k, 5000);
  EXPECT_FLOAT_EQ(d.nms_iou, 0.4f);
  EXPECT_EQ(d.max_faces, 750);
  // MACs grow with the area (P6/P7 round up, so not exactly).
  const double ratio = static_cast<double>(engine->MacsPerImage(640, 640)) /
                       static_cast<double>(engine->MacsPerImage(320, 320));
  EXPECT_NEAR(ratio, 4.0, 0.01);
}

// The engine normalises uint8 canvases itself (with zero padding after normalisation, spec
// §6a, §10.1); its outputs must equal the FP64 reference executor's on the torch-free
// NormalizePlanar input of the same network, which the parity tests check against Python.
TEST(MogFaceEngineTest, EngineNormalisationMatchesTheReferencePreprocessing) {
  const api::EngineSetup options = SyntheticOptions("r50", Precision::kFp32);
  auto engine = MustCreate(options);
  ASSERT_NE(engine, nullptr);
  const image::Image picture = Photo("sample1.jpg", 150, 100);
  const Placed placed = Place(picture, 160, 128);
  auto out = engine->Forward(Batch({&placed}));
  ASSERT_TRUE(out.ok()) << out.status().ToString();

  auto model = model::mogface::MogFaceModel::Create(
      model::mogface::SyntheticWeights(model::mogface::Variant::kR50, 1, false));
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const std::vector<double> chw =
      model::NormalizePlanar((*model)->network()->normalization(), picture, 160, 128);
  auto plan = model::LayerPlan::Create((*model)->network(), 128, 160);
  ASSERT_TRUE(plan.ok());
  auto ref = model::RunReference(*plan, (*model)->weights(), chw);
  ASSERT_TRUE(ref.ok()) << ref.status().ToString();
  ASSERT_EQ(out->anchors, plan->anchors());
  const std::vector<float> conf(ref->scores.begin(), ref->scores.end());
  const std::vector<float> loc(ref->boxes.begin(), ref->boxes.end());
  EXPECT_LE(MaxAbsDiff(out->scores_of(0), conf), 1e-5);
  EXPECT_LE(MaxAbsDiff(out->boxes_of(0), loc), 1e-4);
}

TEST(MogFaceEngineTest, BatchesPaddedRowsAndInstancesAgreeWithSinglePasses) {
  auto engine = MustCreate(SyntheticOptions("r50", Precision::kFp32));
  ASSERT_NE(engine, nullptr);
  const std::vector<std::string> names = {"sample1.jpg", "sample2.jpg", "sample3.jpg",
                                          "grace_hopper.jpg"};
  std::vector<Placed> placed;
  for (size_t i = 0; i < names.size(); ++i) {
    // Different content sizes in one 128x96 bucket.
    placed.push_back(Place(Photo(names[i], 128 - 8 * static_cast<int>(i), 96 - 6 * i), 128, 96));
  }
  std::vector<BatchOutputs> single;
  for (const Placed& p : placed) {
    auto out = engine->Forward(Batch({&p}));
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    single.push_back(std::move(out).value());
  }
  CanvasBatch all = Batch({&placed[0], &placed[1], &placed[2], &placed[3]});
  all.padded_batch_size = 6;  // two padding rows, dropped from the outputs
  auto batched = engine->Forward(all);
  ASSERT_TRUE(batched.ok()) << batched.status().ToString();
  ASSERT_EQ(batched->batch, 4);
  ASSERT_EQ(batched->scores.size(), 4u * batched->anchors);
  auto twin = engine->NewInstance();
  ASSERT_TRUE(twin.ok());
  auto from_twin = (*twin)->Forward(Batch({&placed[2]}));
  ASSERT_TRUE(from_twin.ok());
  for (int i = 0; i < 4; ++i) {
    SCOPED_TRACE(names[i]);
    EXPECT_LE(MaxAbsDiff(batched->scores_of(i), single[i].scores_of(0)), 1e-5);
    EXPECT_LE(MaxAbsDiff(batched->boxes_of(i), single[i].boxes_of(0)), 1e-4);
  }
  // Rows of different pictures differ: no row mix-up.
  EXPECT_GT(MaxAbsDiff(batched->scores_of(0), batched->scores_of(1)), 1e-4);
  EXPECT_EQ(MaxAbsDiff(from_twin->scores_of(0), single[2].scores_of(0)), 0.0);
}

// Post-processing maps boxes through the letterbox into original pixels and clips them; with
// a threshold of 0 every kept box lies inside the picture and the count obeys max_faces.
TEST(MogFaceEngineTest, PostprocessMapsToOriginalPixelsAndClips) {
  auto engine = MustCreate(SyntheticOptions("r50", Precision::kFp32));
  ASSERT_NE(engine, nullptr);
  const image::Image picture = Photo("sample2.jpg", 120, 80);
  // As if the original were 600 x 400 and the bucket policy had scaled it by 0.2.
  Placed placed;
  placed.letterbox = image::PlaceLetterbox(600, 400, 120, 80, 128, 96);
  placed.canvas = image::RenderLetterbox(picture, placed.letterbox);
  auto out = engine->Forward(Batch({&placed}));
  ASSERT_TRUE(out.ok());
  DetectOptions options = engine->model()->default_detect_options();
  options.score_threshold = 0.0f;
  options.max_faces = 40;
  const std::vector<Detection> faces =
      engine->model()->Postprocess(out->rows_of(0, placed.letterbox), options);
  ASSERT_EQ(faces.size(), 40u);
  float max_x = 0, max_y = 0;
  for (size_t i = 0; i < faces.size(); ++i) {
    const Detection& d = faces[i];
    EXPECT_GE(d.x1, 0.0f);
    EXPECT_GE(d.y1, 0.0f);
    EXPECT_LE(d.x2, 600.0f);
    EXPECT_LE(d.y2, 400.0f);
    EXPECT_GT(d.width(), 0.0f);
    if (i > 0) {
      EXPECT_GE(faces[i - 1].score, d.score);
    }
    max_x = std::max(max_x, d.x2);
    max_y = std::max(max_y, d.y2);
  }
  // Boxes are in original pixels: they reach beyond the 120 x 80 network picture.
  EXPECT_GT(max_x, 200.0f);
  EXPECT_GT(max_y, 150.0f);

  // Raising the threshold only removes faces (NMS survivors are a subset).
  options.score_threshold = faces[10].score;
  const std::vector<Detection> fewer =
      engine->model()->Postprocess(out->rows_of(0, placed.letterbox), options);
  EXPECT_LE(fewer.size(), 10u);
  for (const Detection& d : fewer) EXPECT_GT(d.score, faces[10].score);
}

// DESIGN §4 asks that padding into a larger bucket not change detections. For a CNN it cannot
// be exact: after the first layer the padded area is no longer zero (biases), and R101's
// GroupNorm heads take statistics over the whole map. What holds, and is checked here: P2
// scores at anchors well inside the picture (more than `margin` px from the padded edge) barely
// move; near the edge they move more. Measured values are printed; the real-photo check of the
// same property with the real SSD weights is in batch_invariance_test.cpp.
TEST(MogFaceEngineTest, PaddingIntoALargerBucketBarelyMovesInteriorScores) {
  struct Case {
    const char* variant;
    double interior_bound;
  };
  for (const Case& c : {Case{"r50", 2e-4}, Case{"r101", 1e-2}}) {
    SCOPED_TRACE(c.variant);
    auto engine = MustCreate(SyntheticOptions(c.variant, Precision::kFp32));
    ASSERT_NE(engine, nullptr);
    const image::Image picture = Photo("sample1.jpg", 160, 96);
    const Placed exact = Place(picture, 160, 96);
    const Placed padded = Place(picture, 160, 160);
    auto a = engine->Forward(Batch({&exact}));
    auto b = engine->Forward(Batch({&padded}));
    ASSERT_TRUE(a.ok() && b.ok());
    // P2 (stride 4) comes first: 24 x 40 cells in the exact input, 40 x 40 padded.
    constexpr int kCols = 40, kExactRows = 24, kStride = 4, kMargin = 48;
    double interior = 0, edge = 0;
    for (int row = 0; row < kExactRows; ++row) {
      for (int col = 0; col < kCols; ++col) {
        const int k = row * kCols + col;
        const double d = std::abs(a->scores_of(0)[k] - b->scores_of(0)[k]);
        const bool near_edge = (row + 0.5) * kStride > 96 - kMargin;
        (near_edge ? edge : interior) = std::max(near_edge ? edge : interior, d);
      }
    }
    std::printf("%s: P2 max |score diff| %.3g more than %d px from the padding, %.3g nearer\n",
                c.variant, interior, kMargin, edge);
    EXPECT_LE(interior, c.interior_bound);
    EXPECT_GT(edge, 0.0);  // the comparison does see the padding
  }
}

}  // namespace
}  // namespace mogserve::engine
