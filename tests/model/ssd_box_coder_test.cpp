// Tests of the SSD anchor grid and box decoding (spec: shipped_face_models.md §2.4-§2.5), against
// values worked out by hand and against the anchors stored in the shipped weights file.
#include "model/ssd_box_coder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/detection.h"
#include "image/resize.h"
#include "model/nms.h"
#include "model/tfjs_weights.h"

namespace mogserve::model {
namespace {

// The TF-OD-API scale of layer k (k = 0..5), s_6 = 1.
double Scale(int k) {
  return k == 6 ? 1.0 : 0.2 + 0.75 * k / 5.0;
}

// Expected anchor for a cell centre (cy, cx), scale s and aspect ratio r: h = s/sqrt(r),
// w = s*sqrt(r).
AnchorBox Expected(double cy, double cx, double s, double r) {
  const double h = s / std::sqrt(r), w = s * std::sqrt(r);
  return {static_cast<float>(cy - h / 2), static_cast<float>(cx - w / 2),
          static_cast<float>(cy + h / 2), static_cast<float>(cx + w / 2)};
}

void ExpectAnchorNear(const AnchorBox& got, const AnchorBox& want, double tol, int index) {
  EXPECT_NEAR(got.ymin, want.ymin, tol) << "anchor " << index;
  EXPECT_NEAR(got.xmin, want.xmin, tol) << "anchor " << index;
  EXPECT_NEAR(got.ymax, want.ymax, tol) << "anchor " << index;
  EXPECT_NEAR(got.xmax, want.xmax, tol) << "anchor " << index;
}

TEST(SsdAnchorsTest, GridMatchesTheSpecFormulaAndTheWeightsFile) {
  const std::vector<AnchorBox> anchors = SsdGridAnchors();
  ASSERT_EQ(anchors.size(), 5118u);
  ASSERT_EQ(kSsdAnchorCount, 5118);
  constexpr double kTol = 1e-6;

  // Layer 0, cell (0, 0): (0.1, 1), (0.2, 2), (0.2, 0.5) centred at (1/64, 1/64).
  ExpectAnchorNear(anchors[0],
                   {1.0f / 64 - 0.05f, 1.0f / 64 - 0.05f, 1.0f / 64 + 0.05f, 1.0f / 64 + 0.05f},
                   kTol, 0);
  ExpectAnchorNear(anchors[1], Expected(1.0 / 64, 1.0 / 64, 0.2, 2.0), kTol, 1);
  ExpectAnchorNear(anchors[2], Expected(1.0 / 64, 1.0 / 64, 0.2, 0.5), kTol, 2);
  // Layer 0, cell row 3, column 5 (rows ordered by cell row, then column, then anchor).
  const int l0 = (3 * 32 + 5) * 3;
  ExpectAnchorNear(anchors[l0 + 1], Expected(3.5 / 32, 5.5 / 32, 0.2, 2.0), kTol, l0 + 1);

  // Layer 1 starts after 32*32*3 = 3072 rows; its first cell is centred at (1/32, 1/32).
  const double s1 = Scale(1), s2 = Scale(2);  // 0.35, 0.5
  ExpectAnchorNear(anchors[3072], Expected(1.0 / 32, 1.0 / 32, s1, 1.0), kTol, 3072);
  // The interpolated anchor sqrt(0.35 * 0.5) comes second in the cell, not last.
  ExpectAnchorNear(anchors[3073], Expected(1.0 / 32, 1.0 / 32, std::sqrt(s1 * s2), 1.0), kTol,
                   3073);
  ExpectAnchorNear(anchors[3074], Expected(1.0 / 32, 1.0 / 32, s1, 2.0), kTol, 3074);
  ExpectAnchorNear(anchors[3075], Expected(1.0 / 32, 1.0 / 32, s1, 0.5), kTol, 3075);
  ExpectAnchorNear(anchors[3076], Expected(1.0 / 32, 1.0 / 32, s1, 3.0), kTol, 3076);
  ExpectAnchorNear(anchors[3077], Expected(1.0 / 32, 1.0 / 32, s1, 0.3333), kTol, 3077);
  // Layer 1, cell row 1, column 2: second anchor.
  const int l1 = 3072 + (1 * 16 + 2) * 6 + 1;
  ExpectAnchorNear(anchors[l1], Expected(1.5 / 16, 2.5 / 16, std::sqrt(s1 * s2), 1.0), kTol, l1);
  // Layer 4 (2x2 grid) starts at 3072 + 1536 + 384 + 96 = 5088; its cell (1, 0), anchor 3.
  const int l4 = 5088 + (1 * 2 + 0) * 6 + 3;
  ExpectAnchorNear(anchors[l4], Expected(0.75, 0.25, Scale(4), 0.5), kTol, l4);
  // The last anchor: layer 5's single cell, (0.95, 0.3333) with 0.3333 literally, not 1/3.
  ExpectAnchorNear(anchors[5117], Expected(0.5, 0.5, 0.95, 0.3333), kTol, 5117);
  ExpectAnchorNear(anchors[5113], Expected(0.5, 0.5, std::sqrt(0.95 * 1.0), 1.0), kTol, 5113);
  EXPECT_GT(std::abs(anchors[5117].ymax - Expected(0.5, 0.5, 0.95, 1.0 / 3.0).ymax), 1e-5);

  // The weights file's own anchors equal the grid (spec: max abs error 1.2e-7).
  auto weights = LoadTfjsWeights(MOGSERVE_TEST_MODEL_DIR, "ssd_mobilenetv1_model");
  ASSERT_TRUE(weights.ok()) << weights.status().ToString();
  const TfjsTensor& stored = weights->at("Output/extra_dim");
  ASSERT_EQ(stored.values.size(), 5118u * 4);
  auto from_file = AnchorsFromRows(stored.values, kSsdAnchorCount);
  ASSERT_TRUE(from_file.ok()) << from_file.status().ToString();
  double max_err = 0;
  int worst = -1;
  for (int i = 0; i < kSsdAnchorCount; ++i) {
    const AnchorBox& f = (*from_file)[i];
    const AnchorBox& g = anchors[i];
    const double err = std::max({std::abs(f.ymin - g.ymin), std::abs(f.xmin - g.xmin),
                                 std::abs(f.ymax - g.ymax), std::abs(f.xmax - g.xmax)});
    if (err > max_err) max_err = err, worst = i;
  }
  EXPECT_LE(max_err, 1e-6) << "worst anchor " << worst;
  // Unclipped: the stored rows leave the unit square.
  EXPECT_LT((*from_file)[0].ymin, 0.0f);
  EXPECT_GT((*from_file)[5117].ymax, 1.0f);

  // AnchorsFromRows checks the count.
  EXPECT_FALSE(AnchorsFromRows(std::span<const float>(stored.values).first(10), 3).ok());
}

// --- DecodeSsdDetections -----------------------------------------------------------------------

struct Synthetic {
  std::vector<AnchorBox> anchors;
  std::vector<float> encodings;  // (ty, tx, th, tw) per anchor
  std::vector<float> scores;

  void Add(AnchorBox a, float ty, float tx, float th, float tw, float score) {
    anchors.push_back(a);
    encodings.insert(encodings.end(), {ty, tx, th, tw});
    scores.push_back(score);
  }
  // As the model answers: the decoder, then KeepFaces (max_faces).
  std::vector<Detection> Decode(const DetectOptions& o, const image::Letterbox& lb) const {
    return KeepFaces(DecodeSsdDetections(encodings, scores, anchors, o, lb), o);
  }
};

// A letterbox that maps the unit square to 0..100 pixels.
image::Letterbox Percent() {
  image::Letterbox lb;
  lb.canvas_width = lb.canvas_height = 100;
  lb.content_width = lb.content_height = 100;
  return lb;
}

// Expects a detection at pixel corners (x1, y1, x2, y2).
void ExpectBox(const Detection& d, double x1, double y1, double x2, double y2, double tol = 1e-3) {
  EXPECT_NEAR(d.x1, x1, tol);
  EXPECT_NEAR(d.y1, y1, tol);
  EXPECT_NEAR(d.x2, x2, tol);
  EXPECT_NEAR(d.y2, y2, tol);
}

void DecodesEncodingsThresholdsAndClamps() {
  const float ln2 = std::log(2.0f);
  Synthetic s;
  // 0: zero encodings give the anchor itself.
  s.Add({0.1f, 0.1f, 0.3f, 0.2f}, 0, 0, 0, 0, 0.95f);
  // 1: ty = 10 moves the centre down by one anchor height (0.2): [0.4, 0.3, 0.6, 0.5].
  s.Add({0.2f, 0.3f, 0.4f, 0.5f}, 10, 0, 0, 0, 0.9f);
  // 2: th = 5 ln 2 doubles the height around the same centre 0.7: [0.6, 0.7, 0.8, 0.8].
  s.Add({0.65f, 0.7f, 0.75f, 0.8f}, 0, 0, 5 * ln2, 0, 0.85f);
  // 3: tx = -5 moves left by half a width (0.2 → centre 0.8), tw = -5 ln 2 halves the width:
  //    x [0.75, 0.85], y unchanged [0.05, 0.15].
  s.Add({0.05f, 0.8f, 0.15f, 1.0f}, 0, -5, 0, -5 * ln2, 0.8f);
  // 4: reaches outside the unit square on every side → clamped to [0, 1].
  s.Add({-0.2f, -0.1f, 1.3f, 1.1f}, 0, 0, 0, 0, 0.75f);
  // 5: exactly at the threshold → dropped (keep score > threshold).
  s.Add({0.45f, 0.05f, 0.55f, 0.15f}, 0, 0, 0, 0, 0.5f);
  // 6: below the threshold.
  s.Add({0.45f, 0.45f, 0.55f, 0.55f}, 0, 0, 0, 0, 0.2f);

  DetectOptions o;
  o.nms_iou = 0.99f;  // nothing here overlaps that much except the big box; keep them all
  const std::vector<Detection> d = s.Decode(o, Percent());
  ASSERT_EQ(d.size(), 5u);
  ExpectBox(d[0], 10, 10, 20, 30);
  EXPECT_FLOAT_EQ(d[0].score, 0.95f);
  ExpectBox(d[1], 30, 40, 50, 60);
  ExpectBox(d[2], 70, 60, 80, 80);
  ExpectBox(d[3], 75, 5, 85, 15);
  ExpectBox(d[4], 0, 0, 100, 100);
  EXPECT_FLOAT_EQ(d[4].score, 0.75f);
  for (size_t i = 1; i < d.size(); ++i) EXPECT_GT(d[i - 1].score, d[i].score);

  // Just above the threshold is kept; a higher threshold drops more.
  s.scores[5] = 0.5001f;
  EXPECT_EQ(s.Decode(o, Percent()).size(), 6u);
  o.score_threshold = 0.85f;  // 0.95, 0.9 pass; 0.85 is not > 0.85
  EXPECT_EQ(s.Decode(o, Percent()).size(), 2u);
  o.score_threshold = 0.0f;
  EXPECT_EQ(s.Decode(o, Percent()).size(), 7u);
}

void MapsThroughTheLetterboxAndClipsToThePicture() {
  // A 1920x1280 picture in a 512x512 canvas: content 512 x round(341.33) = 341, anchored
  // top-left, zero padding below.
  const image::Letterbox lb = image::FitLetterbox(1920, 1280, 512, 512);
  ASSERT_EQ(lb.content_width, 512);
  ASSERT_EQ(lb.content_height, 341);
  ASSERT_NEAR(lb.to_source_x, 3.75, 1e-12);
  ASSERT_NEAR(lb.to_source_y, 1280.0 / 341.0, 1e-12);
  const double py = 512.0 * 1280.0 / 341.0;  // pixels per normalised unit vertically (≈ 1921.9)

  Synthetic s;
  // [ymin, xmin, ymax, xmax] = [0, 0, 0.5, 0.5] → x [0, 960], y [0, 0.5 * 512 * 1280/341].
  s.Add({0.0f, 0.0f, 0.5f, 0.5f}, 0, 0, 0, 0, 0.9f);
  // A box reaching into the bottom padding (y 0.6..0.9 of the canvas; the picture ends at
  // 341/512 = 0.666): clipped to the picture's bottom edge, 1280.
  s.Add({0.6f, 0.7f, 0.9f, 0.8f}, 0, 0, 0, 0, 0.8f);
  DetectOptions o;
  const std::vector<Detection> d = s.Decode(o, lb);
  ASSERT_EQ(d.size(), 2u);
  ExpectBox(d[0], 0, 0, 960, 0.5 * py, 0.01);
  EXPECT_NEAR(d[0].y2, 960.94, 0.01);
  ExpectBox(d[1], 0.7 * 512 * 3.75, 0.6 * py, 0.8 * 512 * 3.75, 1280.0, 0.01);
  for (const Detection& f : d) {
    EXPECT_GE(f.x1, 0.0f);
    EXPECT_GE(f.y1, 0.0f);
    EXPECT_LE(f.x2, 1920.0f);
    EXPECT_LE(f.y2, 1280.0f);
  }

  // A portrait 600x900 picture: padding on the right, content 341 x 512.
  const image::Letterbox portrait = image::FitLetterbox(600, 900, 512, 512);
  ASSERT_EQ(portrait.content_width, 341);
  Synthetic p;
  p.Add({0.25f, 0.5f, 0.75f, 1.0f}, 0, 0, 0, 0, 0.9f);  // right half reaches into the padding
  const std::vector<Detection> pd = p.Decode(o, portrait);
  ASSERT_EQ(pd.size(), 1u);
  ExpectBox(pd[0], 0.5 * 512 * 600.0 / 341, 0.25 * 900, 600, 0.75 * 900, 0.01);
}

void AppliesNmsAndMaxFaces() {
  Synthetic s;
  // Three 0.1 x 0.1 boxes in one row, at x = 0.10, 0.14 and 0.12: the outer two overlap by 0.06
  // in x (IoU 0.06/0.14 = 0.43), the middle one overlaps each of them by 0.08 (IoU 0.08/0.12 =
  // 0.67).
  s.Add({0.1f, 0.1f, 0.2f, 0.2f}, 0, 0, 0, 0, 0.7f);
  s.Add({0.1f, 0.14f, 0.2f, 0.24f}, 0, 0, 0, 0, 0.6f);
  s.Add({0.1f, 0.12f, 0.2f, 0.22f}, 0, 0, 0, 0, 0.9f);
  // Far away, low score.
  s.Add({0.6f, 0.6f, 0.7f, 0.7f}, 0, 0, 0, 0, 0.55f);
  DetectOptions o;  // nms_iou 0.5
  // The 0.9 box suppresses both neighbours (0.67 > 0.5).
  std::vector<Detection> d = s.Decode(o, Percent());
  ASSERT_EQ(d.size(), 2u);
  EXPECT_FLOAT_EQ(d[0].score, 0.9f);
  EXPECT_FLOAT_EQ(d[1].score, 0.55f);
  // At 0.7 nothing overlaps enough to be suppressed.
  o.nms_iou = 0.7f;
  EXPECT_EQ(s.Decode(o, Percent()).size(), 4u);
  o.nms_iou = 0.5f;
  o.max_faces = 1;
  d = s.Decode(o, Percent());
  ASSERT_EQ(d.size(), 1u);
  EXPECT_FLOAT_EQ(d[0].score, 0.9f);

  // max_faces on many disjoint boxes keeps the best ones.
  Synthetic many;
  for (int i = 0; i < 8; ++i) {
    const float x = 0.1f * i;
    many.Add({0.0f, x, 0.05f, x + 0.05f}, 0, 0, 0, 0, 0.6f + 0.04f * ((i * 3) % 8));
  }
  o.max_faces = 3;
  d = many.Decode(o, Percent());
  ASSERT_EQ(d.size(), 3u);
  EXPECT_NEAR(d[0].score, 0.88f, 1e-6);
  EXPECT_NEAR(d[1].score, 0.84f, 1e-6);
  EXPECT_NEAR(d[2].score, 0.80f, 1e-6);
  o.max_faces = 100;
  EXPECT_EQ(many.Decode(o, Percent()).size(), 8u);
}

TEST(DecodeSsdDetectionsTest, DecodesThresholdsClampsMapsToPixelsAndSuppresses) {
  {
    SCOPED_TRACE("DecodesEncodingsThresholdsAndClamps");
    DecodesEncodingsThresholdsAndClamps();
  }
  {
    SCOPED_TRACE("MapsThroughTheLetterboxAndClipsToThePicture");
    MapsThroughTheLetterboxAndClipsToThePicture();
  }
  {
    SCOPED_TRACE("AppliesNmsAndMaxFaces");
    AppliesNmsAndMaxFaces();
  }
}

TEST(DecodeSsdDetectionsTest, BoxEntirelyInThePaddingIsNotAFace) {
  // A box wholly in the letterbox padding has no area once clipped: it must be dropped, not
  // returned with zero height, and it must not take a max_faces slot from a real face.
  const image::Letterbox lb = image::FitLetterbox(1920, 1280, 512, 512);  // picture ends at 0.666
  Synthetic s;
  s.Add({0.8f, 0.4f, 0.9f, 0.5f}, 0, 0, 0, 0, 0.95f);  // wholly below the picture
  s.Add({0.1f, 0.1f, 0.2f, 0.2f}, 0, 0, 0, 0, 0.9f);   // a real face
  DetectOptions o;
  o.max_faces = 1;
  const std::vector<Detection> d = s.Decode(o, lb);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_FLOAT_EQ(d[0].score, 0.9f);
  EXPECT_GT(d[0].width() * d[0].height(), 0.0f);
}

}  // namespace
}  // namespace mogserve::model
