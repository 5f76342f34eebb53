// MogFace anchors, box decoding and post-processing (spec §5, §7 ModelScope column), torch-free:
// runs in the post-processing pool on the network's plain float outputs.
#pragma once

#include <span>
#include <vector>

#include "image/resize.h"
#include "model/mogface/mogface_variant.h"
#include "mogserve/result.h"

namespace mogserve::model::mogface {

// Anchors (cx, cy, w, h) in network-input pixels for an input_h x input_w input, 4 floats per
// anchor: level-major (P2 first), rows outer, columns inner, one square anchor of side
// 16·2^l·AnchorScale(variant) centred at ((j+0.5)·s, (i+0.5)·s) with s = 4·2^l; grid sizes by
// n → (n+1)/2 per stride-2 step (the real map sizes, odd inputs included).
std::vector<float> MogFaceAnchors(int input_h, int input_w, Variant variant);

struct MogFacePostOptions {
  float score_threshold = 0.82f;  // ModelScope's; keep scores > threshold (applied first)
  int top_k = 5000;               // candidates entering NMS, by descending score
  float nms_iou = 0.4f;           // drop a box whose "+1"-area IoU with a kept one is > this
  int max_faces = 750;
  // The picture's extent in network-input pixels when the input was padded into a larger
  // bucket: anchors centred in the padding are skipped, so the padding cannot crowd real faces
  // out of top-k and max_faces. 0 = the whole input is picture (ModelScope: no padding).
  float content_width = 0;
  float content_height = 0;
};

// One image's faces from conf (S sigmoid scores) and loc (S x 4 deltas): decode (cx + dx·w,
// cy + dy·h, w·e^dw, h·e^dh; inclusive corners x1 = cx − (w−1)/2, x2 = x1 + w − 1), threshold,
// stable top-k, divide the boxes by resize_scale (network input → original pixels), greedy NMS
// with +1 areas, at most max_faces. Boxes are not clipped (callers clip to the picture). Scores
// are NOT divided by resize_scale: ModelScope does that, a bug (spec §7 note 1).
std::vector<Detection> PostprocessMogFace(std::span<const float> conf, std::span<const float> loc,
                                          std::span<const float> anchors, float resize_scale,
                                          const MogFacePostOptions& options);

// ModelScope's post-processing defaults (the struct above) as DetectOptions.
DetectOptions MogFaceDefaultDetectOptions();

// One image's faces in original-picture pixels for a canvas that holds the picture, scaled,
// at its top-left (`letterbox`): anchors centred in the padding are skipped, boxes are divided
// by the content scale BEFORE NMS (NMS with "+1" areas is not scale-invariant; ModelScope runs
// it in original pixels), the y axis gets its exact factor afterwards (x and y scales differ
// only by the rounding of the content size), then boxes are clipped to the picture and those
// left without area dropped. options.top_k <= 0 means every anchor.
std::vector<Detection> MogFaceDetections(std::span<const float> conf, std::span<const float> loc,
                                         std::span<const float> anchors,
                                         const image::Letterbox& letterbox,
                                         const DetectOptions& options);

}  // namespace mogserve::model::mogface
