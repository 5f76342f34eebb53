#include "pipeline/tta.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "common/clock.h"
#include "common/detection.h"
#include "common/file_util.h"
#include "image/decode.h"
#include "image/resize.h"

namespace mogserve::pipeline {
namespace {

// The original sizes its scales so that the enlarged input stays under what its Caffe ancestor
// could hold: m = sqrt((2^31 - 1) / 200 / (H·W)) (spec §6c).
constexpr double kPixelBudget = 2147483647.0 / 200.0;
// Above this m is not trusted and replaced by max_img_shrink (so a 1920x1080 picture, m 2.28,
// is enlarged to 2.6: the original's rule, kept).
constexpr double kShrinkReplaceAbove = 2.2;
// The shrunk passes (0.25, 0.5, 0.75) only look for big faces; this bound is not scaled by sw.
constexpr double kBigFaceMinArea = 2000;
// A canvas side beyond this is a mistake (an absurd max_img_shrink), not a request to honour.
constexpr int kMaxCanvasSide = 32768;

constexpr double kNoBound = std::numeric_limits<double>::infinity();

// multi_scale_test + multi_scale_test_pyramid: the shrunk passes keep big faces, the enlarged
// ones small faces, with bounds that grow with sw.
void AppendScalePasses(double m, const TtaOptions& options, std::vector<TtaPass>* passes) {
  const double sw = options.scale_weight;
  const double st = m >= 0.75 ? 0.5 : 0.5 * m;
  passes->push_back({"shrink", st, false, kBigFaceMinArea, kNoBound});
  if (m > 0.75) passes->push_back({"shrink", 0.75, false, kBigFaceMinArea, kNoBound});
  // For huge pictures (m <= 1) the "enlarged" pass sits between st and m. The spec's table
  // only gives min(2, m); test_multi.py has this else branch.
  const double bt = m > 1 ? std::min(2.0, m) : (st + m) / 2;
  passes->push_back({"enlarge", bt, false, -kNoBound, sw * 600});
  if (m > 1.5) passes->push_back({"enlarge", 1.5, false, -kNoBound, sw * 800});
  if (m > 2) passes->push_back({"enlarge", m, false, -kNoBound, sw * 500});

  passes->push_back({"pyramid", 0.25, false, kBigFaceMinArea, kNoBound});
  if (1.25 <= m) passes->push_back({"pyramid", 1.25, false, -kNoBound, sw * 2000});
  if (1.75 <= m) passes->push_back({"pyramid", 1.75, false, -kNoBound, sw * 1000});
  if (2.25 <= m) passes->push_back({"pyramid", 2.25, false, -kNoBound, sw * 600});
}

Status ValidateOptions(const TtaOptions& options) {
  if (!(options.max_img_shrink > 0)) return InvalidArgument("TTA max_img_shrink must be > 0");
  // The original's scale_weight -1 switches to side-length bands; that variant is not offered.
  if (!(options.scale_weight > 0)) return InvalidArgument("TTA scale_weight must be > 0");
  if (!(options.flip_ratio >= 0)) return InvalidArgument("TTA flip_ratio must be >= 0");
  if (!(options.vote_iou > 0 && options.vote_iou <= 1)) {
    return InvalidArgument("TTA vote_iou must be in (0, 1]");
  }
  if (options.max_side_px < 0) return InvalidArgument("TTA max_side_px must be >= 0");
  if (options.max_batch_size < 1) return InvalidArgument("TTA max_batch_size must be >= 1");
  return Status::Ok();
}

int RoundUp(int value, int multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

// One distinct canvas to run: passes that come out at the same size and mirroring (possible
// with max_side_px) share it, since the same input gives the same faces.
struct Run {
  image::Letterbox letterbox;
  bool flip = false;
  std::vector<size_t> passes;  // indices into the plan
  bool done = false;
};

StatusOr<std::vector<Run>> PlanRuns(const std::vector<TtaPass>& plan, int width, int height,
                                    int multiple, TtaStats* stats) {
  std::vector<Run> runs;
  for (size_t i = 0; i < plan.size(); ++i) {
    const TtaPass& pass = plan[i];
    const double content_w = std::max(1.0, std::round(width * pass.scale));
    const double content_h = std::max(1.0, std::round(height * pass.scale));
    if (content_w > kMaxCanvasSide || content_h > kMaxCanvasSide) {
      return ResourceExhausted("TTA pass at scale " + std::to_string(pass.scale) + " of a " +
                               std::to_string(width) + "x" + std::to_string(height) +
                               " picture exceeds " + std::to_string(kMaxCanvasSide) +
                               " px a side; bound it with max_side_px");
    }
    const int cw = static_cast<int>(content_w), ch = static_cast<int>(content_h);
    TtaPassStats pass_stats;
    pass_stats.pass = pass;
    pass_stats.content_width = cw;
    pass_stats.content_height = ch;
    pass_stats.canvas_width = RoundUp(cw, multiple);
    pass_stats.canvas_height = RoundUp(ch, multiple);
    stats->passes.push_back(pass_stats);

    auto same = std::find_if(runs.begin(), runs.end(), [&](const Run& run) {
      return run.flip == pass.flip && run.letterbox.content_width == cw &&
             run.letterbox.content_height == ch;
    });
    if (same != runs.end()) {
      same->passes.push_back(i);
      continue;
    }
    Run run;
    run.letterbox = image::PlaceLetterbox(width, height, cw, ch, pass_stats.canvas_width,
                                          pass_stats.canvas_height);
    run.flip = pass.flip;
    run.passes.push_back(i);
    runs.push_back(std::move(run));
  }
  return runs;
}

// Mirrors the picture part of a canvas left-right, leaving the padding at the right.
void MirrorContent(const image::Letterbox& box, image::Image* canvas) {
  for (int y = 0; y < box.content_height; ++y) {
    uint8_t* row = canvas->pixel(0, y);
    for (int left = 0, right = box.content_width - 1; left < right; ++left, --right) {
      std::swap_ranges(row + 3 * left, row + 3 * left + 3, row + 3 * right);
    }
  }
}

// Back from the pass's frame to the original picture's.
Detection ToOriginalFrame(Detection face, const Run& run, int width, const TtaOptions& options) {
  if (options.inclusive_rescale) {
    // Postprocess gave x2'·s⁻¹; the original's inclusive corners give (x2' + 1)·s⁻¹ - 1.
    face.x2 += static_cast<float>(run.letterbox.to_source_x - 1.0);
    face.y2 += static_cast<float>(run.letterbox.to_source_y - 1.0);
  }
  if (run.flip) {
    // Inclusive pixel corners, as MogFace decodes them (spec §5) and as flip_test un-mirrors:
    // column x of the mirrored picture is column W - 1 - x of the original, so
    // x1 = W - 1 - x2' and x2 = W - 1 - x1'.
    const float last = static_cast<float>(width - 1);
    const float x1 = last - face.x2;
    face.x2 = last - face.x1;
    face.x1 = x1;
    // Points by the same rule, and the picture's left and right trade places: the mirrored
    // picture's left eye is the original's right eye.
    for (Point& p : face.landmarks) p.x = last - p.x;
    if (face.landmarks.size() == static_cast<size_t>(kNumLandmarks)) {
      std::swap(face.landmarks[kLeftEye], face.landmarks[kRightEye]);
      std::swap(face.landmarks[kLeftMouth], face.landmarks[kRightMouth]);
    }
    face.landmarks68.clear();  // the 68-point order has no such simple swap
  }
  return face;
}

bool InBand(const Detection& face, const TtaPass& pass) {
  const double area = static_cast<double>(face.x2 - face.x1) * (face.y2 - face.y1);
  return area > pass.min_area && area < pass.max_area;
}

// Runs `runs[first]` and up to max_batch_size - 1 later runs of the same canvas shape as one
// batch, appending their in-band faces to `pooled`.
Status RunBatch(engine::Engine& engine, const model::OutputDecoder& decoder,
                const image::Image& picture, int width, const TtaOptions& options, size_t first,
                std::vector<Run>* runs, std::vector<Detection>* pooled, TtaStats* stats) {
  const image::Letterbox& shape = (*runs)[first].letterbox;
  std::vector<Run*> members;
  for (size_t i = first;
       i < runs->size() && members.size() < static_cast<size_t>(options.max_batch_size); ++i) {
    Run& run = (*runs)[i];
    if (run.done || run.letterbox.canvas_width != shape.canvas_width ||
        run.letterbox.canvas_height != shape.canvas_height) {
      continue;
    }
    run.done = true;
    members.push_back(&run);
  }

  std::vector<image::Image> canvases;
  canvases.reserve(members.size());
  engine::CanvasBatch batch;
  batch.width = shape.canvas_width;
  batch.height = shape.canvas_height;
  for (Run* run : members) {
    canvases.push_back(image::RenderLetterbox(picture, run->letterbox));
    if (run->flip) MirrorContent(run->letterbox, &canvases.back());
    batch.canvases.push_back(canvases.back().data.data());
    batch.geometry.push_back(run->letterbox);
  }
  MOGSERVE_ASSIGN_OR_RETURN(engine::BatchOutputs outputs, engine.Forward(batch));
  ++stats->forward_calls;
  if (outputs.batch < static_cast<int>(members.size())) {
    return Internal("engine returned " + std::to_string(outputs.batch) + " rows for a batch of " +
                    std::to_string(members.size()));
  }

  DetectOptions detect;
  detect.score_threshold = options.score_threshold;
  detect.max_faces = options.max_faces_per_pass;
  detect.nms_iou = options.nms_iou;
  detect.top_k = options.top_k;
  for (size_t row = 0; row < members.size(); ++row) {
    const Run& run = *members[row];
    for (Detection face :
         decoder.Postprocess(outputs.rows_of(static_cast<int>(row), run.letterbox), detect)) {
      face = ToOriginalFrame(face, run, width, options);
      for (size_t index : run.passes) {
        TtaPassStats& pass_stats = stats->passes[index];
        ++pass_stats.found;
        if (!InBand(face, pass_stats.pass)) continue;
        ++pass_stats.kept;
        pooled->push_back(face);
      }
    }
  }
  return Status::Ok();
}

// numpy's round: halves go to the even neighbour (the default floating-point rounding mode).
double RoundHalfEven(float v) {
  return std::nearbyint(static_cast<double>(v));
}

struct VoteBox {
  double x1, y1, x2, y2, score;
  std::vector<Point> landmarks;  // as decoded (not rounded)
  double area() const { return std::max(x2 - x1, 0.0) * std::max(y2 - y1, 0.0); }
};

// bbox_vote's overlap: no +1, a union <= 0 counts as 1.
double VoteOverlap(const VoteBox& top, double top_area, const VoteBox& other) {
  const double w = std::max(0.0, std::min(top.x2, other.x2) - std::max(top.x1, other.x1));
  const double h = std::max(0.0, std::min(top.y2, other.y2) - std::max(top.y1, other.y1));
  const double inter = w * h;
  double union_area = top_area + other.area() - inter;
  if (union_area <= 0) union_area = 1;
  return inter / union_area;
}

Detection ToDetection(const VoteBox& box) {
  Detection d{.x1 = static_cast<float>(box.x1),
              .y1 = static_cast<float>(box.y1),
              .x2 = static_cast<float>(box.x2),
              .y2 = static_cast<float>(box.y2),
              .score = static_cast<float>(box.score)};
  d.landmarks = box.landmarks;
  return d;
}

// The score-weighted mean of a group; group[0] holds the highest score.
Detection MergeGroup(const std::vector<VoteBox>& group) {
  VoteBox sum{0, 0, 0, 0, 0, {}};
  for (const VoteBox& box : group) {
    sum.x1 += box.x1 * box.score;
    sum.y1 += box.y1 * box.score;
    sum.x2 += box.x2 * box.score;
    sum.y2 += box.y2 * box.score;
    sum.score += box.score;
  }
  // All-zero scores would make the original divide 0 by 0; the best box is the sane answer.
  if (!(sum.score > 0)) return ToDetection(group[0]);
  // Points by the same weights, over the members that have as many as the best box.
  std::vector<Point> points = group[0].landmarks;
  if (!points.empty()) {
    std::vector<double> x(points.size(), 0.0), y(points.size(), 0.0);
    double weight = 0;
    for (const VoteBox& box : group) {
      if (box.landmarks.size() != points.size()) continue;
      for (size_t k = 0; k < points.size(); ++k) {
        x[k] += box.landmarks[k].x * box.score;
        y[k] += box.landmarks[k].y * box.score;
      }
      weight += box.score;
    }
    for (size_t k = 0; k < points.size() && weight > 0; ++k) {
      points[k] = {static_cast<float>(x[k] / weight), static_cast<float>(y[k] / weight)};
    }
  }
  return ToDetection({sum.x1 / sum.score, sum.y1 / sum.score, sum.x2 / sum.score,
                      sum.y2 / sum.score, group[0].score, std::move(points)});
}

}  // namespace

TtaOptions TtaOptions::Paper(bool hard) {
  TtaOptions options;
  if (hard) {
    options.max_img_shrink = 2.3;
    options.vote_iou = 0.5f;
    options.nms_iou = 0.4f;
    options.scale_weight = 10;
    options.flip_ratio = 1.4;
  }
  return options;
}

TtaOptions TtaOptions::FlipOnly() {
  TtaOptions options;
  options.mode = Mode::kFlipOnly;
  return options;
}

std::vector<TtaPass> PlanTtaPasses(int width, int height, const TtaOptions& options) {
  if (width <= 0 || height <= 0) return {};
  double m = std::sqrt(kPixelBudget / (static_cast<double>(width) * height));
  if (m > kShrinkReplaceAbove) m = options.max_img_shrink;
  const double shrink = m < 1 ? m : 1.0;

  std::vector<TtaPass> passes;
  passes.push_back({"original", shrink, false, -kNoBound, kNoBound});
  passes.push_back({"flip", shrink, true, -kNoBound, kNoBound});
  if (options.mode == TtaOptions::Mode::kPaper) {
    AppendScalePasses(m, options, &passes);
    if (options.flip_ratio > 0) {
      passes.push_back({"flip-hard", options.flip_ratio, true, -kNoBound, kNoBound});
    }
  }
  if (options.max_side_px > 0) {
    const double cap = static_cast<double>(options.max_side_px) / std::max(width, height);
    for (TtaPass& pass : passes) pass.scale = std::min(pass.scale, cap);
  }
  return passes;
}

std::vector<Detection> BoxVote(std::vector<Detection> pooled, float vote_iou, int max_keep) {
  std::stable_sort(pooled.begin(), pooled.end(),
                   [](const Detection& a, const Detection& b) { return a.score > b.score; });
  std::vector<VoteBox> rest;
  rest.reserve(pooled.size());
  for (const Detection& d : pooled) {
    rest.push_back({RoundHalfEven(d.x1), RoundHalfEven(d.y1), RoundHalfEven(d.x2),
                    RoundHalfEven(d.y2), d.score, d.landmarks});
  }

  std::vector<Detection> voted;
  std::vector<VoteBox> group, others;
  while (!rest.empty()) {
    if (max_keep > 0 && voted.size() >= static_cast<size_t>(max_keep)) break;
    const VoteBox& top = rest.front();
    const double top_area = top.area();
    group.assign(1, top);
    others.clear();
    for (size_t i = 1; i < rest.size(); ++i) {
      // Compared in float, where the threshold was given, so that an overlap of exactly 0.6
      // meets a threshold of 0.6f (in double, 0.6f is 0.6000000238).
      const bool member = static_cast<float>(VoteOverlap(top, top_area, rest[i])) >= vote_iou;
      (member ? group : others).push_back(rest[i]);
    }
    voted.push_back(group.size() == 1 ? ToDetection(group[0]) : MergeGroup(group));
    rest.swap(others);
  }
  return voted;
}

StatusOr<std::vector<Detection>> DetectWithTta(engine::Engine& engine,
                                               const model::OutputDecoder& decoder,
                                               const image::Image& picture, int original_width,
                                               int original_height, const TtaOptions& options,
                                               TtaStats* stats) {
  if (picture.empty()) return InvalidArgument("TTA needs a non-empty picture");
  if (engine.info().fixed_side > 0) {
    return FailedPrecondition("TTA needs a model that takes any input size (MogFace, YuNet); " +
                              engine.info().model + " takes a fixed square");
  }
  MOGSERVE_RETURN_IF_ERROR(ValidateOptions(options));
  const int width = original_width > 0 ? original_width : picture.width;
  const int height = original_height > 0 ? original_height : picture.height;
  const int multiple = std::max(1, engine.info().multiple);

  TtaStats local_stats;
  TtaStats* out_stats = stats != nullptr ? stats : &local_stats;
  *out_stats = TtaStats();
  const std::vector<TtaPass> plan = PlanTtaPasses(width, height, options);
  MOGSERVE_ASSIGN_OR_RETURN(std::vector<Run> runs,
                            PlanRuns(plan, width, height, multiple, out_stats));

  std::vector<Detection> pooled;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].done) continue;
    MOGSERVE_RETURN_IF_ERROR(
        RunBatch(engine, decoder, picture, width, options, i, &runs, &pooled, out_stats));
  }
  out_stats->pooled = static_cast<int>(pooled.size());

  // Voting stops at max_faces only when no face can be dropped after it.
  std::vector<Detection> faces = BoxVote(std::move(pooled), options.vote_iou,
                                         options.min_face_size > 0 ? 0 : options.max_faces);
  // The original clips when it writes its results, to inclusive pixels [0, W-1] x [0, H-1].
  const float max_x = static_cast<float>(width - 1), max_y = static_cast<float>(height - 1);
  for (Detection& face : faces) {
    face.x1 = std::clamp(face.x1, 0.0f, max_x);
    face.y1 = std::clamp(face.y1, 0.0f, max_y);
    face.x2 = std::clamp(face.x2, 0.0f, max_x);
    face.y2 = std::clamp(face.y2, 0.0f, max_y);
  }
  return KeepFaces(std::move(faces),
                   {.max_faces = options.max_faces, .min_face_size = options.min_face_size});
}

TtaOptions TtaOptions::Named(std::string_view preset) {
  if (preset == "flip") return FlipOnly();
  return Paper(preset == "hard");
}

SourceResult DetectSourceWithTta(engine::Engine& engine, const model::OutputDecoder& decoder,
                                 const ImageSource& source,
                                 const image::DecodeOptions& decode_options,
                                 const TtaOptions& options, float score_threshold,
                                 const FaceStage* face_stage) {
  SourceResult r;
  r.id = source.id;
  const auto start = SteadyClock::now();
  auto bytes = ReadFileBytes(source.path);
  auto decoded = bytes.ok() ? image::Decode(*bytes, decode_options)
                            : StatusOr<image::DecodedImage>(bytes.status());
  if (!decoded.ok()) {
    r.status = decoded.status();
    return r;
  }
  r.result.width = decoded->width;
  r.result.height = decoded->height;
  r.result.timing.decode_ms = MillisecondsSince(start);
  const auto run_start = SteadyClock::now();
  auto faces =
      DetectWithTta(engine, decoder, decoded->image, decoded->width, decoded->height, options);
  r.result.timing.inference_ms = MillisecondsSince(run_start);
  r.result.timing.batch_size = 1;
  if (!faces.ok()) {
    r.status = faces.status();
    return r;
  }
  for (const Detection& d : *faces) {
    if (d.score > score_threshold) r.result.faces.push_back(d);
  }
  if (face_stage != nullptr && !r.result.faces.empty()) {
    // The stage reads the faces from the picture itself: a canvas that is the whole picture.
    const auto post_start = SteadyClock::now();
    const image::Image& picture = decoded->image;
    const image::Letterbox whole =
        image::PlaceLetterbox(decoded->width, decoded->height, picture.width, picture.height,
                              picture.width, picture.height);
    r.status = face_stage->Apply(picture.data, whole, r.result.faces);
    r.result.timing.postprocess_ms = MillisecondsSince(post_start);
  }
  return r;
}

}  // namespace mogserve::pipeline
