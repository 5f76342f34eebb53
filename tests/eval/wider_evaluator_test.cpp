// The WIDER FACE protocol, one test per rule of shared/specs/widerface_eval.md, on tiny ground
// truths whose PR curves and AP are worked out by hand in the comments.
#include "eval/wider_evaluator.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

namespace mogserve::eval {
namespace {

namespace fs = std::filesystem;

// One image per entry, each with its faces and the hard keep-list (easy and medium keep the same
// unless a test sets them).
struct Img {
  std::vector<WiderBox> faces;
  std::vector<int> keep;
  std::vector<WiderDetection> dets;
};

WiderGroundTruth Gt(const std::vector<Img>& images) {
  WiderGroundTruth gt;
  gt.events.push_back({"0--Test", {}});
  for (size_t i = 0; i < images.size(); ++i) {
    WiderImage w;
    w.name = "img_" + std::to_string(i);
    w.faces = images[i].faces;
    for (auto& k : w.keep) k = images[i].keep;
    gt.events[0].images.push_back(std::move(w));
  }
  return gt;
}

WiderPredictionSet Preds(const std::vector<Img>& images) {
  WiderPredictionSet p;
  p.boxes.emplace_back();
  for (const Img& i : images) p.boxes[0].push_back(i.dets);
  return p;
}

WiderEvalResult Eval(const std::vector<Img>& images) {
  auto r = EvaluateWider(Gt(images), Preds(images));
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : WiderEvalResult{};
}

const WiderSubsetResult& Hard(const WiderEvalResult& r) {
  return r.subsets[2];
}

// A detection exactly on `f`.
WiderDetection On(const WiderBox& f, double score) {
  return {f.x, f.y, f.w, f.h, score};
}

const WiderBox kA{0, 0, 20, 20};
const WiderBox kB{100, 0, 20, 20};
const WiderBox kC{200, 0, 20, 20};
const WiderDetection kNowhere{500, 500, 20, 20, 0};

WiderDetection Nowhere(double score) {
  WiderDetection d = kNowhere;
  d.score = score;
  return d;
}

// The basic PR curve. Scores 1.0 (on A), 0.6004 (nowhere), 0.0 (on B); min 0 and max 1 leave
// them unchanged. thr 0.999..0.601 (t = 1..399): A only: P 1/1, R 1/2. thr 0.600..0.001: A and
// the miss: P 1/2, R 1/2. thr 0: all: P 2/3, R 1. Running max from the right lifts the 1/2s to
// 2/3, so AP = 0.5 * 1 + 0.5 * 2/3 = 5/6.
TEST(WiderEvaluator, PrCurveAndApByHand) {
  const WiderEvalResult r = Eval({{{kA, kB}, {1, 2}, {On(kA, 1.0), Nowhere(0.6004), On(kB, 0.0)}}});
  const WiderSubsetResult& h = Hard(r);
  ASSERT_EQ(h.thresholds.size(), 1000u);
  EXPECT_DOUBLE_EQ(h.thresholds[0], 0.999);
  EXPECT_DOUBLE_EQ(h.thresholds[999], 0.0);
  EXPECT_EQ(h.faces, 2);
  EXPECT_EQ(h.true_positives[398], 1);
  EXPECT_EQ(h.proposals[398], 1);
  EXPECT_EQ(h.proposals[399], 2);  // thr 0.600
  EXPECT_DOUBLE_EQ(h.precision[500], 0.5);
  EXPECT_DOUBLE_EQ(h.recall[500], 0.5);
  EXPECT_EQ(h.true_positives[999], 2);
  EXPECT_EQ(h.proposals[999], 3);
  EXPECT_DOUBLE_EQ(h.ap, 5.0 / 6.0);
  EXPECT_TRUE(r.warnings.empty());
}

// Rule: a detection matched to a face outside the keep-list ("don't care") is neither a TP nor
// a FP. C is don't care in hard; the detection on it (1.0) leaves the precision count, so
// thr > 0 has no proposals (precision 0 by the guard), and at thr 0 the detection on A makes P
// 1/1, R 1/1: AP = 1. Counted as a false positive, it would give AP = 1/2.
TEST(WiderEvaluator, DontCareMatchesAreNeitherTrueNorFalsePositives) {
  const WiderEvalResult r = Eval({{{kA, kC}, {1}, {On(kC, 1.0), On(kA, 0.0)}}});
  const WiderSubsetResult& h = Hard(r);
  EXPECT_EQ(h.faces, 1);
  EXPECT_EQ(h.proposals[0], 0);
  EXPECT_EQ(h.proposals[999], 1);
  EXPECT_EQ(h.true_positives[999], 1);
  EXPECT_DOUBLE_EQ(h.ap, 1.0);

  const ImageMatch m = MatchImage({On(kC, 1.0), On(kA, 0.0)}, {kA, kC}, {true, false}, 0.5);
  EXPECT_EQ(m.proposal, (std::vector<int>{-1, 1}));
  EXPECT_EQ(m.pred_recall, (std::vector<int>{0, 1}));
}

// Rule: the keep-lists differ per subset; one normalisation serves all three. Detections on A
// (1.0) and B (0.0). Easy keeps A only (B is don't care there): AP 1. Medium keeps A and B: AP 1.
// Hard keeps A, B and the missed D: recall reaches 2/3 at precision 1: AP = 2/3.
TEST(WiderEvaluator, SubsetsUseTheirOwnKeepLists) {
  const WiderBox kD{300, 0, 20, 20};
  WiderGroundTruth gt = Gt({{{kA, kB, kD}, {1, 2, 3}, {}}});
  gt.events[0].images[0].keep[0] = {1};
  gt.events[0].images[0].keep[1] = {1, 2};
  WiderPredictionSet p;
  p.boxes = {{{On(kA, 1.0), On(kB, 0.0)}}};
  auto r = EvaluateWider(gt, p);
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->subsets[0].ap, 1.0);
  EXPECT_EQ(r->subsets[0].faces, 1);
  EXPECT_DOUBLE_EQ(r->subsets[1].ap, 1.0);
  EXPECT_DOUBLE_EQ(r->subsets[2].ap, 2.0 / 3.0);
  EXPECT_EQ(r->subsets[2].faces, 3);
}

// Rule: TP counts matched faces, so a second detection of a matched face is a false positive.
// A 1.0, A again 0.5004, B 0.0: thr > 0.5: P 1/1 R 1/2; thr 0.5..0.001: P 1/2; thr 0: P 2/3,
// R 1: AP = 5/6.
TEST(WiderEvaluator, DuplicatesAreFalsePositives) {
  const WiderDetection again{1, 0, 20, 20, 0.5004};
  const WiderEvalResult r = Eval({{{kA, kB}, {1, 2}, {On(kA, 1.0), again, On(kB, 0.0)}}});
  EXPECT_EQ(Hard(r).true_positives[600], 1);
  EXPECT_EQ(Hard(r).proposals[600], 2);
  EXPECT_DOUBLE_EQ(Hard(r).ap, 5.0 / 6.0);
  const ImageMatch m = MatchImage({On(kA, 1.0), again, On(kB, 0.0)}, {kA, kB}, {true, true}, 0.5);
  EXPECT_EQ(m.pred_recall, (std::vector<int>{1, 1, 2}));
  EXPECT_EQ(m.proposal, (std::vector<int>{1, 1, 1}));
}

// Rule: each detection takes the single face with the highest IoU, with no fallback to the
// second best when that face is taken. F and G overlap; the second detection is closer to F
// (IoU 0.849) than to G (0.818), F is already matched, so G stays unmatched.
TEST(WiderEvaluator, GreedyMatchingHasNoFallback) {
  const WiderBox kF{0, 0, 10, 10}, kG{2, 0, 10, 10};
  const WiderDetection second{0.9, 0, 10, 10, 0.5};
  EXPECT_GT(WiderIoU({0, 0, 10, 10}, {0.9, 0, 10.9, 10}),
            WiderIoU({2, 0, 12, 10}, {0.9, 0, 10.9, 10}));
  EXPECT_GE(WiderIoU({2, 0, 12, 10}, {0.9, 0, 10.9, 10}), 0.5);
  const ImageMatch m = MatchImage({On(kF, 1.0), second}, {kF, kG}, {true, true}, 0.5);
  EXPECT_EQ(m.pred_recall, (std::vector<int>{1, 1}));
  EXPECT_EQ(m.proposal, (std::vector<int>{1, 1}));
}

// Rule: IoU with the "+1" convention. Faces (x y w h) 0 0 9 9 cover corners 0..9 (10 px). A
// detection 0 0 4 9 overlaps 5x10 = 50 of 100 + 50 - 50: IoU exactly 0.5, a match (>= 0.5);
// without +1 it would be 36/81.
TEST(WiderEvaluator, IouUsesThePlusOneConvention) {
  EXPECT_DOUBLE_EQ(WiderIoU({0, 0, 9, 9}, {0, 0, 4, 9}), 0.5);
  EXPECT_DOUBLE_EQ(WiderIoU({0, 0, 9, 9}, {5, 0, 14, 9}), 50.0 / 150.0);
  EXPECT_EQ(WiderIoU({0, 0, 9, 9}, {10, 0, 19, 9}), 0.0);  // touching: iw = 0
  const ImageMatch m = MatchImage({{0, 0, 4, 9, 1.0}}, {{0, 0, 9, 9}}, {true}, 0.5);
  EXPECT_EQ(m.pred_recall, (std::vector<int>{1}));
}

// Rule: the evaluator sorts each image's detections by score (stable) itself, as read_pred.m
// does; the Python port would not, and an unsorted file would change its curve.
TEST(WiderEvaluator, UnsortedDetectionsAreSorted) {
  const WiderEvalResult sorted =
      Eval({{{kA, kB}, {1, 2}, {On(kA, 1.0), Nowhere(0.6004), On(kB, 0.0)}}});
  const WiderEvalResult shuffled =
      Eval({{{kA, kB}, {1, 2}, {On(kB, 0.0), On(kA, 1.0), Nowhere(0.6004)}}});
  EXPECT_DOUBLE_EQ(shuffled.subsets[2].ap, 5.0 / 6.0);
  EXPECT_EQ(shuffled.subsets[2].true_positives, sorted.subsets[2].true_positives);
  EXPECT_EQ(shuffled.subsets[2].proposals, sorted.subsets[2].proposals);
}

// Rule: boxes with w or h <= 0 follow MATLAB's arithmetic: the intersection width is at most
// w + 1 <= -1, so such a face never matches, yet, when kept, it counts in count_face (the
// iceskiing image's face 8 with w = -2 in the Hard list). Faces A and N kept; detections on A
// (1.0) and exactly on N (0.0): thr > 0: P 1/1 R 1/2; thr 0: P 1/2 R 1/2: AP = 1/2.
TEST(WiderEvaluator, NegativeWidthFacesNeverMatchButCount) {
  const WiderBox kN{50, 50, -2, 10};
  EXPECT_EQ(WiderIoU({50, 50, 48, 60}, {50, 50, 48, 60}), 0.0);
  EXPECT_EQ(WiderIoU({50, 50, 48, 60}, {48, 50, 50, 60}), 0.0);
  const WiderEvalResult r = Eval({{{kA, kN}, {1, 2}, {On(kA, 1.0), On(kN, 0.0)}}});
  EXPECT_EQ(Hard(r).faces, 2);
  EXPECT_EQ(Hard(r).true_positives[999], 1);
  EXPECT_EQ(Hard(r).proposals[999], 2);
  EXPECT_DOUBLE_EQ(Hard(r).ap, 0.5);
}

// The four faceless images carry a [0 0 0 0] placeholder that no list keeps: the image is still
// evaluated (its box list is not empty), so its detections are false positives. Image 1: A found
// at 1.0; image 2 (placeholder): a miss at 0.0. thr > 0: P 1/1 R 1; thr 0: P 1/2 R 1: AP = 1,
// and the precision at thr 0 shows the false positive.
TEST(WiderEvaluator, PlaceholderImagesAreEvaluated) {
  const WiderEvalResult r =
      Eval({{{kA}, {1}, {On(kA, 1.0)}}, {{WiderBox{0, 0, 0, 0}}, {}, {Nowhere(0.0)}}});
  EXPECT_EQ(Hard(r).faces, 1);
  EXPECT_EQ(Hard(r).proposals[999], 2);
  EXPECT_DOUBLE_EQ(Hard(r).precision[999], 0.5);
  EXPECT_DOUBLE_EQ(Hard(r).ap, 1.0);
}

// Rule: precision is TP/P, and P = 0 at high thresholds when the top detections all hit
// don't-care faces: MATLAB gets NaN there (0/0) and its max skips it; numpy's maximum would
// propagate it. The curve holds 0, never NaN, and the AP is MATLAB's.
TEST(WiderEvaluator, NoNanAtHighThresholds) {
  const WiderEvalResult r = Eval({{{kA, kC}, {1}, {On(kC, 1.0), On(kA, 0.0)}}});
  for (double p : Hard(r).precision) EXPECT_FALSE(std::isnan(p));
  EXPECT_EQ(Hard(r).precision[0], 0.0);
  EXPECT_DOUBLE_EQ(Hard(r).ap, 1.0);

  // VOCap with NaN inputs, as MATLAB computes it: mpre = [0 NaN NaN 1 .5 0] -> running max
  // [1 1 1 1 .5 0]; recall changes at 0.5 (p 1) and 1 (p .5): AP = .5 + .25.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_DOUBLE_EQ(VocAp({0, 0, 0.5, 1}, {nan, nan, 1, 0.5}), 0.75);
  // A NaN where recall changes: MATLAB's max(NaN, 0) is 0, numpy's is NaN (AP NaN).
  EXPECT_DOUBLE_EQ(VocAp({0.5, 1}, {1, nan}), 0.5);
}

// Rule: scores are normalised once over all images: s' = (s - min) / (max - min). Image 1: A1
// at 0.4, a miss at 0.2; image 2: A2 at 0.6, a miss at 0.8. Globally (min .2, max .8): miss2 1,
// A2 .667, A1 .333, miss1 0: thr > .667: P 0/1 R 0; thr .666-.334: P 1/2 R 1/2; thr .333-.001:
// P 2/3 R 1; thr 0: P 2/4 R 1: AP = .5 * 2/3 + .5 * 2/3 = 2/3. Per image it would be 1/2.
TEST(WiderEvaluator, ScoresAreNormalisedAcrossImages) {
  const WiderBox kA2{0, 100, 20, 20};
  const WiderEvalResult r =
      Eval({{{kA}, {1}, {On(kA, 0.4), Nowhere(0.2)}}, {{kA2}, {1}, {On(kA2, 0.6), Nowhere(0.8)}}});
  EXPECT_DOUBLE_EQ(r.scores.min, 0.2);
  EXPECT_DOUBLE_EQ(r.scores.max, 0.8);
  EXPECT_EQ(r.scores.detections, 4);
  EXPECT_EQ(Hard(r).proposals[100], 1);
  EXPECT_EQ(Hard(r).true_positives[100], 0);
  EXPECT_DOUBLE_EQ(Hard(r).ap, 2.0 / 3.0);
}

// MATLAB seeds the range with realmin/realmax('single'); scores outside [0, 1] are fine.
TEST(WiderEvaluator, NormalisationHandlesAnyScoreRange) {
  WiderPredictionSet p;
  p.boxes = {{{Nowhere(-4), Nowhere(6)}, {Nowhere(1)}}};
  const ScoreRange range = NormalizeScores(p);
  EXPECT_EQ(range.min, -4);
  EXPECT_EQ(range.max, 6);
  EXPECT_DOUBLE_EQ(p.boxes[0][0][0].score, 0.0);
  EXPECT_DOUBLE_EQ(p.boxes[0][0][1].score, 1.0);
  EXPECT_DOUBLE_EQ(p.boxes[0][1][0].score, 0.5);
}

// When every score is equal the normalisation divides 0 by 0 (as in MATLAB): nothing passes a
// threshold, AP is 0, and a warning says why.
TEST(WiderEvaluator, EqualScoresWarn) {
  const WiderEvalResult r = Eval({{{kA}, {1}, {On(kA, 0.9)}}});
  EXPECT_EQ(Hard(r).ap, 0.0);
  ASSERT_FALSE(r.warnings.empty());
  EXPECT_NE(r.warnings[0].find("same score"), std::string::npos);
}

// Rule: a missing prediction file means no detections for that image (MATLAB warns; the Python
// port crashes), and its kept faces still count; an invalid file is dropped the same way. Three
// images with one kept face each; image 0: its face at 0.9, a miss at 0.1; image 1's file is
// missing, image 2's announces 3 boxes and holds 1. thr > 0: P 1/1 R 1/3; thr 0: P 1/2 R 1/3:
// AP = 1/3.
TEST(WiderPredictions, MissingAndInvalidFilesMeanNoDetections) {
  const fs::path dir = fs::temp_directory_path() / ("mogserve_pred_" + std::to_string(getpid()));
  fs::remove_all(dir);
  std::vector<Img> images = {{{kA}, {1}, {}}, {{kB}, {1}, {}}, {{kC}, {1}, {}}};
  const WiderGroundTruth gt = Gt(images);
  ASSERT_TRUE(WritePredictionFile((dir / "0--Test/img_0.txt").string(), "img_0",
                                  {Nowhere(0.1), On(kA, 0.9)})
                  .ok());
  fs::create_directories(dir / "0--Test");
  std::ofstream(dir / "0--Test/img_2.txt") << "img_2\n3\n200 0 20 20 0.5\n";  // 1 of 3 lines
  PredictionReadReport report;
  auto preds = ReadWiderPredictions(dir.string(), gt, &report);
  ASSERT_TRUE(preds.ok()) << preds.status().ToString();
  EXPECT_EQ(report.files_read, 2);
  EXPECT_EQ(report.missing, (std::vector<std::string>{"0--Test/img_1.txt"}));
  ASSERT_EQ(report.invalid.size(), 1u);
  EXPECT_NE(report.invalid[0].find("img_2.txt: line 2 announces 3 boxes"), std::string::npos);
  EXPECT_TRUE(preds->boxes[0][1].empty());
  EXPECT_TRUE(preds->boxes[0][2].empty());
  auto r = EvaluateWider(gt, *preds);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->subsets[2].faces, 3);
  EXPECT_DOUBLE_EQ(r->subsets[2].ap, 1.0 / 3.0);
  EXPECT_FALSE(ReadWiderPredictions((dir / "nope").string(), gt, nullptr).ok());
  fs::remove_all(dir);
}

TEST(WiderPredictions, FilesAreWrittenSortedAndParsedAsMatlabDoes) {
  const std::string text =
      FormatPredictionFile("img", {{1, 2, 3, 4, 0.25}, {5, 6, 7, 8, 0.75}, {9, 10, 11, 12, 0.25}});
  EXPECT_EQ(text,
            "img\n3\n5.00 6.00 7.00 8.00 0.75\n1.00 2.00 3.00 4.00 0.25\n"
            "9.00 10.00 11.00 12.00 0.25\n");
  auto parsed = ParsePredictionFile(text);
  ASSERT_TRUE(parsed.ok());
  ASSERT_EQ(parsed->size(), 3u);
  EXPECT_EQ((*parsed)[0].score, 0.75);

  // The last number is the score (extra columns between are ignored); commas and tabs separate;
  // blank lines and lines after the N boxes are skipped; CRLF is fine.
  parsed = ParsePredictionFile("name\r\n2\r\n1,2,3,4,99,0.5\r\n\r\n5\t6 7 8 0.25\r\nignored\r\n");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ASSERT_EQ(parsed->size(), 2u);
  EXPECT_EQ((*parsed)[0].score, 0.5);
  EXPECT_EQ((*parsed)[0].w, 3);
  EXPECT_EQ((*parsed)[1].x, 5);
  EXPECT_EQ((*parsed)[1].score, 0.25);

  EXPECT_TRUE(ParsePredictionFile("name\n0\n")->empty());
  EXPECT_FALSE(ParsePredictionFile("name\n").ok());
  EXPECT_FALSE(ParsePredictionFile("name\nthree\n").ok());
  auto bad = ParsePredictionFile("name\n1\n1 2 3 4\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("line 3 should be 'x y w h score'"), std::string::npos);
  EXPECT_FALSE(ParsePredictionFile("name\n1\n1 2 3 4 nan\n").ok());
}

TEST(WiderPredictions, DetectionBoxConversion) {
  const Detection d{.x1 = 10, .y1 = 20, .x2 = 40, .y2 = 60, .score = 0.5f};
  const WiderDetection edges = ToWiderDetection(d, BoxCorners::kEdges);
  EXPECT_EQ(edges.x, 10);
  EXPECT_EQ(edges.y, 20);
  EXPECT_EQ(edges.w, 30);
  EXPECT_EQ(edges.h, 40);
  EXPECT_EQ(edges.score, 0.5);
  const WiderDetection inclusive = ToWiderDetection(d, BoxCorners::kInclusive);
  EXPECT_EQ(inclusive.w, 31);
  EXPECT_EQ(inclusive.h, 41);
}

TEST(WiderEvaluator, MismatchedShapesAreRefused) {
  const WiderGroundTruth gt = Gt({{{kA}, {1}, {}}});
  WiderPredictionSet p;
  EXPECT_FALSE(EvaluateWider(gt, p).ok());
  p.boxes = {{{}, {}}};
  EXPECT_FALSE(EvaluateWider(gt, p).ok());
}

TEST(VocAp, RunningMaxFromTheRight) {
  // Precision rises after a dip: the dip is lifted to the later value.
  EXPECT_DOUBLE_EQ(VocAp({0.25, 0.5, 0.75}, {1.0, 0.5, 0.8}), 0.25 * 1 + 0.25 * 0.8 + 0.25 * 0.8);
  EXPECT_DOUBLE_EQ(VocAp({}, {}), 0.0);
  EXPECT_DOUBLE_EQ(VocAp({1.0}, {1.0}), 1.0);
}

}  // namespace
}  // namespace mogserve::eval
