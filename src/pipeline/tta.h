// Test-time augmentation: the MogFace paper's multi-scale + flip test with box voting (spec §6c,
// §7; the original test_multi.py), for accuracy work (`mogserve detect --tta`, `eval --tta`).
// Torch-free: it drives any engine::Engine that takes free canvas sizes (MogFace).
//
// Cost: a WIDER-sized picture takes 11 forward passes (12 with `hard`), several of them at 2-2.6x
// the picture's size, so one image is ~40x the work of a single pass. TtaOptions::max_side_px
// and TtaOptions::FlipOnly() bound that for CPU users.
#pragma once

#include <limits>
#include <string_view>
#include <vector>

#include "engine/engine.h"
#include "image/image.h"
#include "mogserve/result.h"
#include "mogserve/status.h"
#include "pipeline/face_stage.h"
#include "pipeline/offline_detector.h"

namespace mogserve::pipeline {

struct TtaOptions {
  // Which passes run: kPaper = the full table of spec §6c; kFlipOnly = the original-size pass
  // and its mirror only (what veesion's video fork kept: 2 passes, still voted).
  enum class Mode { kPaper, kFlipOnly };
  Mode mode = Mode::kPaper;

  // The original test's arguments; the defaults are its defaults, Paper(true) its --test_hard 1.
  double max_img_shrink = 2.6;  // replaces m when m > 2.2
  double scale_weight = 15;     // "sw": the upper area bounds of the enlarged passes scale by it
  double flip_ratio = 0;        // > 0: one more mirrored pass at this scale, all areas (hard: 1.4)
  float nms_iou = 0.3f;         // per pass; the engine drops boxes overlapping a kept one by more
  float vote_iou = 0.6f;        // BoxVote's grouping threshold (IoU >= vote_iou, no +1)
  float score_threshold = 0.01f;
  int top_k = 5000;
  int max_faces_per_pass = 750;
  int max_faces = 750;    // after voting
  int min_face_size = 0;  // after voting, before max_faces (KeepFaces)

  // Bounds for CPU users; 0 = off (the paper). A pass whose long side would exceed max_side_px
  // is run at the scale that makes it max_side_px instead (its area band, in original pixels,
  // is unchanged). Passes that end up at the same size share one forward pass.
  int max_side_px = 0;
  // Passes whose canvases have the same shape (the flip pairs) run as one batch of up to this
  // many rows: faster on a GPU, but a CPU's peak memory grows with it.
  int max_batch_size = 1;

  // The original rescales inclusive corners, x2 = (x2' + 1) / shrink - 1, while
  // The decoder maps every coordinate by one factor (x2' / shrink, ModelScope's way);
  // true adds (1 / shrink - 1) to x2 and y2 to get the original's boxes back (3 px at 0.25).
  bool inclusive_rescale = true;

  // The original test (test_multi.py defaults), or with hard = true its --test_hard 1: vote 0.5,
  // NMS 0.4, max_img_shrink 2.3, scale_weight 10, an extra flip at 1.4 (the R101 paper run).
  static TtaOptions Paper(bool hard);
  // det0 + det1 at the original scale (m when the picture is huge), thresholds of Paper(false).
  static TtaOptions FlipOnly();
  // The presets by the names the CLI takes (`--tta`): "paper", "hard", "flip".
  static TtaOptions Named(std::string_view preset);
};

// One forward pass of the plan. Area = w·h in original pixels without +1 (w = x2 - x1), after
// un-flipping; a box is kept when min_area < area < max_area (both strict, as in the original).
struct TtaPass {
  const char* name = "";  // "original", "flip", "shrink", "enlarge", "pyramid", "flip-hard"
  double scale = 1.0;     // relative to the original picture (after max_side_px)
  bool flip = false;      // mirrored left-right
  double min_area = -std::numeric_limits<double>::infinity();
  double max_area = std::numeric_limits<double>::infinity();
};

// The passes for a width x height original picture, in the original's order (det0, det1,
// shrink 0.5/0.75, enlarge bt/1.5/m, pyramid 0.25/1.25/1.75/2.25, hard flip), with
// m = sqrt((2^31-1) / 200 / (H·W)) replaced by options.max_img_shrink when m > 2.2. Empty when a
// side is not positive.
std::vector<TtaPass> PlanTtaPasses(int width, int height, const TtaOptions& options);

// Box voting (spec §7, bbox_vote): sort by score (highest first, stable), round coordinates
// half to even (numpy's round), then repeatedly take the best remaining box and every remaining
// box with IoU >= vote_iou against it (IoU without +1; the best box always belongs); a group of
// one is kept unchanged, a larger group becomes the score-weighted mean of its (rounded)
// coordinates with the group's highest score. Returns the first max_keep (<= 0: all), in score
// order.
std::vector<Detection> BoxVote(std::vector<Detection> pooled, float vote_iou, int max_keep);

// What DetectWithTta did, per pass in plan order.
struct TtaPassStats {
  TtaPass pass;
  int content_width = 0;  // the picture resized by pass.scale
  int content_height = 0;
  int canvas_width = 0;  // padded bottom/right to engine.info().multiple
  int canvas_height = 0;
  int found = 0;  // faces the decoder returned
  int kept = 0;   // of those, inside the area band
};
struct TtaStats {
  std::vector<TtaPassStats> passes;
  int forward_calls = 0;  // Engine::Forward calls (shared sizes and batching make it < passes)
  int pooled = 0;         // boxes entering BoxVote
};

// Runs the plan on `picture` (RGB, EXIF-oriented) and votes: for each pass, the picture resized
// to round(original side · scale) (the picture may be a reduced decode: scales are relative to
// original_width x original_height, which detections are reported in; <= 0 = the picture's own
// size), mirrored when the pass says so, padded bottom/right to a multiple of
// engine.info().multiple, one Forward, `decoder` (the model the engine runs) with the pass's
// thresholds, un-mirrored, the
// area band; then BoxVote over all passes and a clip to the picture ([0, W-1] x [0, H-1], the
// original's inclusive pixels). A reduced decode loses the detail the enlarged passes look for:
// decode at full size for accuracy work.
// Needs an engine that takes any canvas size (info().fixed_side == 0), else FailedPrecondition;
// Forward errors are returned as they are. `stats` (optional) receives what ran. Not
// thread-safe in `engine` (one caller per Engine instance, like Forward).
StatusOr<std::vector<Detection>> DetectWithTta(engine::Engine& engine,
                                               const model::OutputDecoder& decoder,
                                               const image::Image& picture, int original_width,
                                               int original_height, const TtaOptions& options,
                                               TtaStats* stats = nullptr);

// `detect --tta` and `eval --tta`: one source read from its path and decoded at full size, run
// through DetectWithTta, with decode and TTA times; the passes keep every face above 0.01 for
// voting, and `score_threshold` applies to the voted result. `face_stage` (optional: the
// 68-point landmark net) then runs on the voted faces, reading them from the whole picture.
SourceResult DetectSourceWithTta(engine::Engine& engine, const model::OutputDecoder& decoder,
                                 const ImageSource& source,
                                 const image::DecodeOptions& decode_options,
                                 const TtaOptions& options, float score_threshold,
                                 const FaceStage* face_stage = nullptr);

}  // namespace mogserve::pipeline
