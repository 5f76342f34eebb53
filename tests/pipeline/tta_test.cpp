// The paper's multi-scale + flip test (spec §6c, §7): the pass plan against the table, box
// voting on hand-computed cases, and the runner against a scripted engine.
#include "pipeline/tta.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace mogserve::pipeline {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// ---------------------------------------------------------------------------------------------
// PlanTtaPasses

struct Expected {
  double scale;
  bool flip;
  double min_area;
  double max_area;
};

void ExpectPlan(const std::vector<TtaPass>& plan, const std::vector<Expected>& expected) {
  ASSERT_EQ(plan.size(), expected.size());
  for (size_t i = 0; i < plan.size(); ++i) {
    SCOPED_TRACE("pass " + std::to_string(i) + " (" + plan[i].name + ")");
    EXPECT_NEAR(plan[i].scale, expected[i].scale, 1e-6);
    EXPECT_EQ(plan[i].flip, expected[i].flip);
    EXPECT_EQ(plan[i].min_area, expected[i].min_area);
    EXPECT_EQ(plan[i].max_area, expected[i].max_area);
  }
}

// A WIDER-sized picture: m = sqrt(2147483647 / 200 / 786432) = 3.695 > 2.2, so m = 2.6.
// Every conditional pass runs: the 11 passes of the paper.
TEST(PlanTtaPassesTest, WiderSizedPictureDefault) {
  ExpectPlan(PlanTtaPasses(1024, 768, TtaOptions()),
             {
                 {1.0, false, -kInf, kInf},    // det0
                 {1.0, true, -kInf, kInf},     // det1
                 {0.5, false, 2000, kInf},     // shrink: m >= 0.75
                 {0.75, false, 2000, kInf},    // m > 0.75
                 {2.0, false, -kInf, 9000},    // enlarge min(2, m), sw·600
                 {1.5, false, -kInf, 12000},   // m > 1.5, sw·800
                 {2.6, false, -kInf, 7500},    // m > 2, sw·500
                 {0.25, false, 2000, kInf},    // pyramid
                 {1.25, false, -kInf, 30000},  // 1.25 <= m, sw·2000
                 {1.75, false, -kInf, 15000},  // sw·1000
                 {2.25, false, -kInf, 9000},   // sw·600
             });
}

// --test_hard 1: m = 2.3, sw = 10, and a 12th pass, mirrored at 1.4.
TEST(PlanTtaPassesTest, WiderSizedPictureHard) {
  ExpectPlan(PlanTtaPasses(1024, 768, TtaOptions::Paper(true)),
             {
                 {1.0, false, -kInf, kInf},
                 {1.0, true, -kInf, kInf},
                 {0.5, false, 2000, kInf},
                 {0.75, false, 2000, kInf},
                 {2.0, false, -kInf, 6000},
                 {1.5, false, -kInf, 8000},
                 {2.3, false, -kInf, 5000},
                 {0.25, false, 2000, kInf},
                 {1.25, false, -kInf, 20000},
                 {1.75, false, -kInf, 10000},
                 {2.25, false, -kInf, 6000},  // 2.25 <= 2.3
                 {1.4, true, -kInf, kInf},
             });
  const TtaOptions hard = TtaOptions::Paper(true);
  EXPECT_FLOAT_EQ(hard.vote_iou, 0.5f);
  EXPECT_FLOAT_EQ(hard.nms_iou, 0.4f);
  const TtaOptions normal = TtaOptions::Paper(false);
  EXPECT_FLOAT_EQ(normal.vote_iou, 0.6f);
  EXPECT_FLOAT_EQ(normal.nms_iou, 0.3f);
  EXPECT_EQ(normal.flip_ratio, 0);
}

// A small picture has a huge m (13.4), which is replaced by 2.6 too: same plan as 1024x768.
TEST(PlanTtaPassesTest, SmallPictureGetsTheSamePlan) {
  const std::vector<TtaPass> small = PlanTtaPasses(300, 200, TtaOptions());
  const std::vector<TtaPass> wider = PlanTtaPasses(1024, 768, TtaOptions());
  ASSERT_EQ(small.size(), 11u);
  for (size_t i = 0; i < small.size(); ++i) EXPECT_EQ(small[i].scale, wider[i].scale);
}

// 1800x1352: m = 2.1005 <= 2.2 stays; m > 2 gives an enlarged pass at m itself, 2.25 > m drops
// the last pyramid pass: 10 passes.
TEST(PlanTtaPassesTest, UnreplacedMBetweenTwoAndTwoPointTwo) {
  const double m = 2.1005128200237566;
  ExpectPlan(PlanTtaPasses(1800, 1352, TtaOptions()), {
                                                          {1.0, false, -kInf, kInf},
                                                          {1.0, true, -kInf, kInf},
                                                          {0.5, false, 2000, kInf},
                                                          {0.75, false, 2000, kInf},
                                                          {2.0, false, -kInf, 9000},
                                                          {1.5, false, -kInf, 12000},
                                                          {m, false, -kInf, 7500},
                                                          {0.25, false, 2000, kInf},
                                                          {1.25, false, -kInf, 30000},
                                                          {1.75, false, -kInf, 15000},
                                                      });
}

// 1920x1080: m = 2.2756 > 2.2, so it is *raised* to 2.6 (the original's rule, kept).
TEST(PlanTtaPassesTest, FullHdIsRaisedToMaxImgShrink) {
  const std::vector<TtaPass> plan = PlanTtaPasses(1920, 1080, TtaOptions());
  ASSERT_EQ(plan.size(), 11u);
  EXPECT_DOUBLE_EQ(plan[6].scale, 2.6);
}

// 12 Mpx: m = 0.94593 < 1, so det0 runs at m; the enlarged pass is (st + m) / 2 = 0.72297 (the
// else branch of test_multi.py that the spec's table leaves out); no pyramid above 0.25.
TEST(PlanTtaPassesTest, LargePhotoShrinksTheOriginalPass) {
  const double m = 0.9459306808200412;
  ExpectPlan(PlanTtaPasses(4000, 3000, TtaOptions()), {
                                                          {m, false, -kInf, kInf},
                                                          {m, true, -kInf, kInf},
                                                          {0.5, false, 2000, kInf},
                                                          {0.75, false, 2000, kInf},
                                                          {(0.5 + m) / 2, false, -kInf, 9000},
                                                          {0.25, false, 2000, kInf},
                                                      });
}

// 48 Mpx: m = 0.47297 < 0.75, so the shrink pass is 0.5·m and there is no 0.75 pass.
TEST(PlanTtaPassesTest, HugePhotoHalvesM) {
  const double m = 0.4729653404100206;
  ExpectPlan(PlanTtaPasses(8000, 6000, TtaOptions()),
             {
                 {m, false, -kInf, kInf},
                 {m, true, -kInf, kInf},
                 {0.5 * m, false, 2000, kInf},
                 {0.75 * m, false, -kInf, 9000},  // (0.5·m + m) / 2
                 {0.25, false, 2000, kInf},
             });
}

TEST(PlanTtaPassesTest, FlipOnlyIsTwoPasses) {
  ExpectPlan(PlanTtaPasses(1024, 768, TtaOptions::FlipOnly()),
             {{1.0, false, -kInf, kInf}, {1.0, true, -kInf, kInf}});
  const double m = 0.9459306808200412;
  ExpectPlan(PlanTtaPasses(4000, 3000, TtaOptions::FlipOnly()),
             {{m, false, -kInf, kInf}, {m, true, -kInf, kInf}});
}

// max_side_px caps each pass's long side; the bands stay.
TEST(PlanTtaPassesTest, MaxSideCapsScales) {
  TtaOptions options;
  options.max_side_px = 1536;  // 1.5 of 1024
  const std::vector<TtaPass> plan = PlanTtaPasses(1024, 768, options);
  const std::vector<double> scales = {1.0, 1.0, 0.5, 0.75, 1.5, 1.5, 1.5, 0.25, 1.25, 1.5, 1.5};
  ASSERT_EQ(plan.size(), scales.size());
  for (size_t i = 0; i < plan.size(); ++i) EXPECT_DOUBLE_EQ(plan[i].scale, scales[i]) << i;
  EXPECT_EQ(plan[6].max_area, 7500);  // still the band of the m pass
}

TEST(PlanTtaPassesTest, EmptyForNonPositiveSizes) {
  EXPECT_TRUE(PlanTtaPasses(0, 100, TtaOptions()).empty());
  EXPECT_TRUE(PlanTtaPasses(100, -1, TtaOptions()).empty());
}

// ---------------------------------------------------------------------------------------------
// BoxVote

Detection Box(float x1, float y1, float x2, float y2, float score) {
  return {x1, y1, x2, y2, score};
}

void ExpectBox(const Detection& d, double x1, double y1, double x2, double y2, double score) {
  EXPECT_NEAR(d.x1, x1, 1e-4);
  EXPECT_NEAR(d.y1, y1, 1e-4);
  EXPECT_NEAR(d.x2, x2, 1e-4);
  EXPECT_NEAR(d.y2, y2, 1e-4);
  EXPECT_NEAR(d.score, score, 1e-6);
}

TEST(BoxVoteTest, EmptyInEmptyOut) {
  EXPECT_TRUE(BoxVote({}, 0.6f, 750).empty());
}

TEST(BoxVoteTest, SingleMemberIsKeptUnchangedButRounded) {
  const std::vector<Detection> out = BoxVote({Box(10.4f, 20.6f, 50.2f, 60.7f, 0.3f)}, 0.6f, 750);
  ASSERT_EQ(out.size(), 1u);
  ExpectBox(out[0], 10, 21, 50, 61, 0.3);
}

// numpy's round goes half to even: 2.5 -> 2, 3.5 -> 4, -0.5 -> -0, 101.5 -> 102.
TEST(BoxVoteTest, RoundsHalfToEven) {
  const std::vector<Detection> out = BoxVote({Box(2.5f, 3.5f, 100.5f, 101.5f, 0.9f)}, 0.6f, 0);
  ASSERT_EQ(out.size(), 1u);
  ExpectBox(out[0], 2, 4, 100, 102, 0.9);
}

// Two boxes, IoU = 90·100 / (100·100 + 100·100 - 9000) = 0.818: merged into the score-weighted
// mean, x1 = (0.9·0 + 0.3·10) / 1.2 = 2.5, x2 = (0.9·100 + 0.3·110) / 1.2 = 102.5, score max.
TEST(BoxVoteTest, WeightedMeanWithMaxScore) {
  const std::vector<Detection> out =
      BoxVote({Box(10, 0, 110, 100, 0.3f), Box(0, 0, 100, 100, 0.9f)}, 0.6f, 750);
  ASSERT_EQ(out.size(), 1u);
  ExpectBox(out[0], 2.5, 0, 102.5, 100, 0.9);
}

// The mean uses the rounded coordinates (rounding comes first) and is not rounded again.
TEST(BoxVoteTest, MeanOfRoundedCoordinates) {
  const std::vector<Detection> out =
      BoxVote({Box(0.4f, 0, 99.6f, 100, 0.5f), Box(1.6f, 0, 100.4f, 100, 0.25f)}, 0.6f, 750);
  ASSERT_EQ(out.size(), 1u);
  // Rounded: (0, 0, 100, 100) at 0.5 and (2, 0, 100, 100) at 0.25: x1 = 0.5 / 0.75 = 0.6667.
  ExpectBox(out[0], 0.5 / 0.75, 0, 100, 100, 0.5);
}

// A = (0,0,10,10), B = (0,0,10,5): IoU without +1 = 50 / 100 = 0.5 (with +1 it would be
// 66 / 121 = 0.545). At 0.5 they merge (>= is inclusive), at 0.52 they do not (only the +1
// convention would merge them).
TEST(BoxVoteTest, IoUWithoutPlusOneAtTheBoundary) {
  const std::vector<Detection> boxes = {Box(0, 0, 10, 10, 0.8f), Box(0, 0, 10, 5, 0.2f)};
  const std::vector<Detection> at = BoxVote(boxes, 0.5f, 750);
  ASSERT_EQ(at.size(), 1u);
  ExpectBox(at[0], 0, 0, 10, 9, 0.8);  // y2 = (0.8·10 + 0.2·5) / 1.0
  EXPECT_EQ(BoxVote(boxes, 0.52f, 750).size(), 2u);
  // An overlap of exactly 0.6 (60 / 100) meets the 0.6 default.
  EXPECT_EQ(BoxVote({Box(0, 0, 10, 10, 0.8f), Box(0, 0, 10, 6, 0.2f)}, 0.6f, 750).size(), 1u);
}

// Groups are formed against the best remaining box only (not transitively), in score order;
// an absorbed box cannot seed its own group.
TEST(BoxVoteTest, GroupsAgainstTheTopBoxOnly) {
  // B overlaps A (IoU 0.667) and C (IoU 0.667) but A and C only 0.333: A takes B, C stays.
  const Detection a = Box(0, 0, 100, 100, 0.9f);
  const Detection b = Box(20, 0, 120, 100, 0.5f);
  const Detection c = Box(40, 0, 140, 100, 0.7f);
  const std::vector<Detection> out = BoxVote({c, b, a}, 0.6f, 750);
  ASSERT_EQ(out.size(), 2u);
  ExpectBox(out[0], (0.9 * 0 + 0.5 * 20) / 1.4, 0, (0.9 * 100 + 0.5 * 120) / 1.4, 100, 0.9);
  ExpectBox(out[1], 40, 0, 140, 100, 0.7);
}

TEST(BoxVoteTest, MaxKeepTakesTheFirstGroups) {
  std::vector<Detection> boxes;
  for (int i = 0; i < 5; ++i) boxes.push_back(Box(i * 200.0f, 0, i * 200.0f + 50, 50, 0.1f * i));
  const std::vector<Detection> out = BoxVote(boxes, 0.6f, 3);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_FLOAT_EQ(out[0].score, 0.4f);
  EXPECT_FLOAT_EQ(out[1].score, 0.3f);
  EXPECT_FLOAT_EQ(out[2].score, 0.2f);
  EXPECT_EQ(BoxVote(boxes, 0.6f, 0).size(), 5u);  // 0 = no limit
}

// A zero-area box has IoU 0 with everything, so it stays on its own.
TEST(BoxVoteTest, DegenerateBoxStaysAlone) {
  EXPECT_EQ(BoxVote({Box(0, 0, 10, 10, 0.9f), Box(0, 0, 0, 10, 0.5f)}, 0.5f, 750).size(), 2u);
}

// ---------------------------------------------------------------------------------------------
// DetectWithTta with a scripted engine

// The picture handed to the runner: left half red, right half blue, so a canvas tells whether it
// was mirrored.
image::Image TwoColourPicture(int width, int height) {
  image::Image img(width, height);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) img.pixel(x, y)[x < width / 2 ? 0 : 2] = 255;
  }
  return img;
}

// A MogFace-like engine: any canvas whose sides are multiples of 32. Forward records what it got;
// Postprocess returns the scripted faces (original inclusive pixels) as the network would see
// them in the (possibly mirrored) canvas, mapped back the way the real engine maps them.
class FakeEngine : public engine::Engine, public model::OutputDecoder {
 public:
  struct Call {
    int width = 0, height = 0;
    std::vector<image::Letterbox> geometry;
    std::vector<bool> mirrored;
    bool padding_zero = true;
  };

  std::vector<Detection> faces;  // true faces, original inclusive pixels
  float mirrored_shift_px = 0;   // the network sees faces this far right in a mirrored picture
  float mirrored_score_bonus = 0;
  Status fail_forward;
  int fixed_side = 0;

  std::vector<Call> calls;
  mutable std::vector<DetectOptions> options_seen;

  const engine::EngineInfo& info() const override {
    info_.model = "fake";
    info_.multiple = 32;
    info_.fixed_side = fixed_side;
    return info_;
  }
  std::shared_ptr<const model::FaceModel> model() const override { return nullptr; }
  DetectOptions default_detect_options() const override { return {}; }
  int64_t MacsPerImage(int width, int height) const override { return int64_t{width} * height; }

  StatusOr<engine::BatchOutputs> Forward(const engine::CanvasBatch& batch) override {
    if (!fail_forward.ok()) return fail_forward;
    Call call;
    call.width = batch.width;
    call.height = batch.height;
    call.geometry = batch.geometry;
    engine::BatchOutputs out;
    out.batch = static_cast<int>(batch.canvases.size());
    out.anchors = 1;
    out.canvas_width = batch.width;
    out.canvas_height = batch.height;
    out.box_encodings.assign(static_cast<size_t>(out.batch) * 4, 0.0f);
    for (size_t i = 0; i < batch.canvases.size(); ++i) {
      const uint8_t* canvas = batch.canvases[i];
      const image::Letterbox& box = batch.geometry[i];
      // Mirrored: the left edge is blue (the right half of the picture).
      const bool mirrored = canvas[2] > canvas[0];
      call.mirrored.push_back(mirrored);
      out.scores.push_back(mirrored ? 1.0f : 0.0f);
      for (int y = 0; y < batch.height; ++y) {
        for (int x = 0; x < batch.width; ++x) {
          const bool padding = x >= box.content_width || y >= box.content_height;
          const uint8_t* p = canvas + (static_cast<size_t>(y) * batch.width + x) * 3;
          if (padding && (p[0] | p[1] | p[2]) != 0) call.padding_zero = false;
        }
      }
    }
    calls.push_back(std::move(call));
    return out;
  }

  std::vector<Detection> Postprocess(const model::OutputRows& rows,
                                     const DetectOptions& options) const override {
    options_seen.push_back(options);
    const image::Letterbox& letterbox = rows.letterbox;
    const bool mirrored = rows.scores[0] > 0.5f;
    const float width =
        static_cast<float>(std::lround(letterbox.content_width * letterbox.to_source_x));
    const float tx = static_cast<float>(letterbox.to_source_x);
    const float ty = static_cast<float>(letterbox.to_source_y);
    std::vector<Detection> out;
    for (Detection f : faces) {
      if (mirrored) {
        const float x1 = width - 1 - f.x2 + mirrored_shift_px;
        f.x2 = width - 1 - f.x1 + mirrored_shift_px;
        f.x1 = x1;
        f.score += mirrored_score_bonus;
        // In the mirrored picture the face's left eye is on the picture's right: the network
        // reports the points mirrored with left and right traded.
        for (Point& p : f.landmarks) p.x = width - 1 - p.x + mirrored_shift_px;
        if (f.landmarks.size() == 5) {
          std::swap(f.landmarks[0], f.landmarks[1]);
          std::swap(f.landmarks[3], f.landmarks[4]);
        }
      }
      // The network finds the face's inclusive corners in canvas pixels: x1/t and (x2+1)/t - 1;
      // the engine multiplies every coordinate by t.
      out.push_back({f.x1, f.y1, ((f.x2 + 1) / tx - 1) * tx, ((f.y2 + 1) / ty - 1) * ty, f.score,
                     f.landmarks});
    }
    return out;
  }

  engine::MemoryStats Memory() const override { return {}; }
  void ResetPeakMemory() override {}
  StatusOr<std::unique_ptr<engine::Engine>> NewInstance() const override {
    return Unsupported("fake");
  }

 private:
  mutable engine::EngineInfo info_;
};

// A reduced decode (320x240) of a 640x480 original: m = 5.9 -> 2.6, the full 11-pass plan.
constexpr int kWidth = 640, kHeight = 480;
const Detection kBigFace = {100, 50, 299, 249, 0.8f};     // area 199² = 39601: shrunk passes
const Detection kSmallFace = {400, 300, 419, 319, 0.7f};  // area 19² = 361: enlarged passes

TEST(DetectWithTtaTest, CanvasShapesMirroringAndPadding) {
  FakeEngine engine;
  const image::Image picture = TwoColourPicture(320, 240);
  TtaStats stats;
  auto result = DetectWithTta(engine, engine, picture, kWidth, kHeight, TtaOptions(), &stats);
  ASSERT_TRUE(result.ok()) << result.status().ToString();

  // Content = round(640·s) x round(480·s), canvas rounded up to 32.
  struct Shape {
    int content_w, content_h, canvas_w, canvas_h;
    bool mirrored;
  };
  const std::vector<Shape> expected = {
      {640, 480, 640, 480, false},     {640, 480, 640, 480, true},     // 1.0, flip
      {320, 240, 320, 256, false},     {480, 360, 480, 384, false},    // 0.5, 0.75
      {1280, 960, 1280, 960, false},   {960, 720, 960, 736, false},    // 2, 1.5
      {1664, 1248, 1664, 1248, false}, {160, 120, 160, 128, false},    // 2.6, 0.25
      {800, 600, 800, 608, false},     {1120, 840, 1120, 864, false},  // 1.25, 1.75
      {1440, 1080, 1440, 1088, false},                                 // 2.25
  };
  ASSERT_EQ(engine.calls.size(), expected.size());
  EXPECT_EQ(stats.forward_calls, 11);
  for (size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE("call " + std::to_string(i));
    const FakeEngine::Call& call = engine.calls[i];
    EXPECT_EQ(call.width, expected[i].canvas_w);
    EXPECT_EQ(call.height, expected[i].canvas_h);
    ASSERT_EQ(call.geometry.size(), 1u);
    EXPECT_EQ(call.geometry[0].content_width, expected[i].content_w);
    EXPECT_EQ(call.geometry[0].content_height, expected[i].content_h);
    // Letterboxes map to the original 640x480, not to the reduced decode.
    EXPECT_DOUBLE_EQ(call.geometry[0].to_source_x, 640.0 / expected[i].content_w);
    EXPECT_EQ(call.mirrored, std::vector<bool>{expected[i].mirrored});
    EXPECT_TRUE(call.padding_zero);
    EXPECT_EQ(stats.passes[i].canvas_width, expected[i].canvas_w);
  }
  for (const DetectOptions& o : engine.options_seen) {
    EXPECT_FLOAT_EQ(o.score_threshold, 0.01f);
    EXPECT_FLOAT_EQ(o.nms_iou, 0.3f);
    EXPECT_EQ(o.top_k, 5000);
    EXPECT_EQ(o.max_faces, 750);
  }
}

// Each face is found by every pass, exactly where it is; the area bands keep the big face in the
// 5 passes that look for big faces and the small one in the 8 that look for small ones; voting
// merges each face's copies back into the exact box, with the highest score (the mirrored one).
// An off-by-one in the un-mirroring would move the merged box off the integers.
TEST(DetectWithTtaTest, UnflipsBandsAndVotesTheFacesTogether) {
  FakeEngine engine;
  engine.faces = {kBigFace, kSmallFace};
  engine.mirrored_score_bonus = 0.1f;
  TtaStats stats;
  auto result = DetectWithTta(engine, engine, TwoColourPicture(320, 240), kWidth, kHeight,
                              TtaOptions(), &stats);
  ASSERT_TRUE(result.ok()) << result.status().ToString();

  //                                 orig flip 0.5 0.75 2  1.5 2.6 0.25 1.25 1.75 2.25
  const std::vector<int> kept = {2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  ASSERT_EQ(stats.passes.size(), kept.size());
  for (size_t i = 0; i < kept.size(); ++i) {
    EXPECT_EQ(stats.passes[i].found, 2) << i;
    EXPECT_EQ(stats.passes[i].kept, kept[i]) << i;
  }
  EXPECT_EQ(stats.pooled, 13);

  const std::vector<Detection>& faces = *result;
  ASSERT_EQ(faces.size(), 2u);
  ExpectBox(faces[0], 100, 50, 299, 249, 0.9);
  ExpectBox(faces[1], 400, 300, 419, 319, 0.8);
}

// Both band ends are strict, as in the original: area exactly 2000 is not "> 2000", exactly 9000
// not "< 9000". Checked at scales whose factors are exact in binary (0.5, 0.25, 2).
// A model's own points: un-mirrored by the boxes' rule with left and right traded back, then
// voted with the boxes' weights. Here the mirrored pass sees them 2 px to the right and scores
// 0.9 against 0.8, so each voted point is the original's + 2 · 0.9 / 1.7 in x.
TEST(DetectWithTtaTest, LandmarksAreUnmirroredTradedBackAndVoted) {
  FakeEngine engine;
  Detection face = kBigFace;
  face.landmarks = {{150, 100}, {250, 104}, {200, 150}, {160, 200}, {240, 196}};
  engine.faces = {face};
  engine.mirrored_shift_px = -2;  // un-mirrored: 2 px to the right
  engine.mirrored_score_bonus = 0.1f;
  auto result = DetectWithTta(engine, engine, TwoColourPicture(320, 240), kWidth, kHeight,
                              TtaOptions::FlipOnly());
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  ASSERT_EQ(result->size(), 1u);
  const Detection& voted = (*result)[0];
  ASSERT_EQ(voted.landmarks.size(), 5u);
  const double dx = 2.0 * 0.9 / 1.7;
  for (size_t k = 0; k < 5; ++k) {
    EXPECT_NEAR(voted.landmarks[k].x, face.landmarks[k].x + dx, 1e-3) << k;
    EXPECT_NEAR(voted.landmarks[k].y, face.landmarks[k].y, 1e-3) << k;
  }
}

TEST(DetectWithTtaTest, AreaBandsAreStrict) {
  FakeEngine engine;
  engine.faces = {{10, 10, 50, 60, 0.5f}, {200, 200, 290, 300, 0.5f}};  // 40·50, 90·100
  TtaStats stats;
  auto result = DetectWithTta(engine, engine, TwoColourPicture(320, 240), kWidth, kHeight,
                              TtaOptions(), &stats);
  ASSERT_TRUE(result.ok());
  ASSERT_EQ(stats.passes.size(), 11u);
  EXPECT_EQ(stats.passes[2].kept, 1);  // 0.5, > 2000: only the 9000 one
  EXPECT_EQ(stats.passes[7].kept, 1);  // 0.25, > 2000: only the 9000 one
  EXPECT_EQ(stats.passes[4].kept, 1);  // 2.0, < 9000: only the 2000 one
  EXPECT_EQ(stats.passes[0].kept, 2);  // det0 keeps all
}

// The mirrored passes see the big face 4 px to the right of where it is, i.e. 4 px to the left
// once un-mirrored. Group: det0, shrink 0.5, 0.75, pyramid 0.25 at (100..299, score 0.8) and
// det1 at (96..295, score 0.9): x1 = (4·0.8·100 + 0.9·96) / 4.1 = 99.1220.
TEST(DetectWithTtaTest, VotingWeighsThePassesByScore) {
  FakeEngine engine;
  engine.faces = {kBigFace};
  engine.mirrored_shift_px = 4;
  engine.mirrored_score_bonus = 0.1f;
  auto result =
      DetectWithTta(engine, engine, TwoColourPicture(320, 240), kWidth, kHeight, TtaOptions());
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  ASSERT_EQ(result->size(), 1u);
  ExpectBox((*result)[0], (3.2 * 100 + 0.9 * 96) / 4.1, 50, (3.2 * 299 + 0.9 * 295) / 4.1, 249,
            0.9);
}

// Without the inclusive-corner correction the engine's x2' · t is (x2 + 1) - t: at 0.5 one pixel
// short, at 0.25 three, at 0.75 a third (rounded away by the vote). Mean over the 5 passes that
// keep the big face: x2 = (299 + 299 + 298 + 299 + 296) / 5 = 298.2.
TEST(DetectWithTtaTest, InclusiveRescaleMatchesTheOriginal) {
  FakeEngine engine;
  engine.faces = {kBigFace};
  TtaOptions options;
  options.inclusive_rescale = false;
  auto result = DetectWithTta(engine, engine, TwoColourPicture(320, 240), kWidth, kHeight, options);
  ASSERT_TRUE(result.ok());
  ASSERT_EQ(result->size(), 1u);
  ExpectBox((*result)[0], 100, 50, 298.2, 248.2, 0.8);
}

// det0 and det1 share a canvas shape: with batches of 2 they run as one Forward, same answer.
TEST(DetectWithTtaTest, BatchesTheFlipPair) {
  FakeEngine engine;
  engine.faces = {kBigFace, kSmallFace};
  TtaOptions options;
  options.max_batch_size = 2;
  TtaStats stats;
  auto result =
      DetectWithTta(engine, engine, TwoColourPicture(320, 240), kWidth, kHeight, options, &stats);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(stats.forward_calls, 10);
  ASSERT_EQ(engine.calls[0].mirrored.size(), 2u);
  EXPECT_EQ(engine.calls[0].mirrored, (std::vector<bool>{false, true}));
  ASSERT_EQ(result->size(), 2u);
  ExpectBox((*result)[0], 100, 50, 299, 249, 0.8);
  ExpectBox((*result)[1], 400, 300, 419, 319, 0.7);
}

// max_side_px 640 caps every enlarged pass to 1.0: they share det0's forward pass (5 runs: 1.0,
// 1.0 mirrored, 0.5, 0.75, 0.25) but each keeps its own band.
TEST(DetectWithTtaTest, CappedPassesShareAForwardPass) {
  FakeEngine engine;
  engine.faces = {kBigFace, kSmallFace};
  TtaOptions options;
  options.max_side_px = 640;
  TtaStats stats;
  auto result =
      DetectWithTta(engine, engine, TwoColourPicture(320, 240), kWidth, kHeight, options, &stats);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(stats.forward_calls, 5);
  for (const FakeEngine::Call& call : engine.calls)
    EXPECT_LE(std::max(call.width, call.height), 640);
  const std::vector<int> kept = {2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  for (size_t i = 0; i < kept.size(); ++i) EXPECT_EQ(stats.passes[i].kept, kept[i]) << i;
  ASSERT_EQ(result->size(), 2u);
  ExpectBox((*result)[1], 400, 300, 419, 319, 0.7);
}

// The voted boxes are clipped to the picture's inclusive pixels [0, 639] x [0, 479].
TEST(DetectWithTtaTest, ClipsToThePicture) {
  FakeEngine engine;
  engine.faces = {{620, -5, 660, 30, 0.9f}};
  TtaStats stats;
  auto result = DetectWithTta(engine, engine, TwoColourPicture(320, 240), kWidth, kHeight,
                              TtaOptions::FlipOnly(), &stats);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(stats.forward_calls, 2);
  ASSERT_EQ(result->size(), 1u);
  ExpectBox((*result)[0], 620, 0, 639, 30, 0.9);
}

TEST(DetectWithTtaTest, HardModeThresholdsReachTheEngine) {
  FakeEngine engine;
  auto result =
      DetectWithTta(engine, engine, TwoColourPicture(64, 48), 64, 48, TtaOptions::Paper(true));
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(engine.calls.size(), 12u);
  EXPECT_EQ(engine.calls.back().mirrored, std::vector<bool>{true});  // the flip at 1.4
  ASSERT_FALSE(engine.options_seen.empty());
  EXPECT_FLOAT_EQ(engine.options_seen[0].nms_iou, 0.4f);
}

TEST(DetectWithTtaTest, OriginalSizeDefaultsToThePicture) {
  FakeEngine engine;
  auto result =
      DetectWithTta(engine, engine, TwoColourPicture(64, 48), 0, 0, TtaOptions::FlipOnly());
  ASSERT_TRUE(result.ok());
  ASSERT_FALSE(engine.calls.empty());
  EXPECT_EQ(engine.calls[0].geometry[0].content_width, 64);
  EXPECT_EQ(engine.calls[0].width, 64);
  EXPECT_EQ(engine.calls[0].height, 64);  // 48 padded to 64
}

TEST(DetectWithTtaTest, ForwardErrorsArePassedOn) {
  FakeEngine engine;
  engine.fail_forward = ResourceExhausted("out of memory");
  auto result = DetectWithTta(engine, engine, TwoColourPicture(64, 48), 64, 48, TtaOptions());
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kResourceExhausted);
}

TEST(DetectWithTtaTest, RejectsFixedSizeEnginesAndBadOptions) {
  FakeEngine ssd_like;
  ssd_like.fixed_side = 512;
  auto fixed = DetectWithTta(ssd_like, ssd_like, TwoColourPicture(64, 48), 64, 48, TtaOptions());
  EXPECT_EQ(fixed.status().code(), StatusCode::kFailedPrecondition);

  FakeEngine engine;
  TtaOptions bad;
  bad.max_batch_size = 0;
  EXPECT_EQ(DetectWithTta(engine, engine, TwoColourPicture(64, 48), 64, 48, bad).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(DetectWithTta(engine, engine, image::Image(), 64, 48, TtaOptions()).status().code(),
            StatusCode::kInvalidArgument);
  TtaOptions absurd;
  absurd.max_img_shrink = 1000;  // 64x48 · 1000 is beyond any canvas
  EXPECT_EQ(DetectWithTta(engine, engine, TwoColourPicture(64, 48), 64, 48, absurd).status().code(),
            StatusCode::kResourceExhausted);
  EXPECT_TRUE(engine.calls.empty());
}

}  // namespace
}  // namespace mogserve::pipeline
