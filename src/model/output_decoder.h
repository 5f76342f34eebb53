// What turns one image's rows of a model's output stage into faces: the model's post-processing
// (anchors, box decoding, thresholds, NMS, the map back to the original picture). It is not the
// engine's: an engine runs the network on a device and hands back raw rows; the pipeline's
// post-processing threads give them to the decoder of the model the engines run. FaceModel
// implements it; pipeline tests and the simulated benchmarks script their own. Header-only and
// torch-free, so the pipeline (which links no model code) can call it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "image/resize.h"
#include "mogserve/result.h"

namespace mogserve::model {

// One image's rows of the output stage, for a canvas_width x canvas_height input, and where its
// picture lies in that canvas.
struct OutputRows {
  std::span<const float> scores;  // [anchors]
  std::span<const float> boxes;   // [anchors, 4]
  int canvas_width = 0;
  int canvas_height = 0;
  image::Letterbox letterbox;
  // The network's raw outputs for this image (Network::raw_outputs(), each [H, W, C] of the
  // canvas's plan, side by side); empty when it has none.
  std::span<const float> raw;
  std::span<const int64_t> raw_offsets;  // where each raw output starts in `raw`, + the end
};

class OutputDecoder {
 public:
  virtual ~OutputDecoder() = default;

  // The model's post-processing defaults (SSD: 0.5 / NMS 0.5 / 100 faces; MogFace: ModelScope's
  // 0.82 / top-k 5000 / NMS 0.4 with +1 areas / 750 faces).
  virtual DetectOptions default_detect_options() const = 0;

  // One image's faces: decoded, thresholded, NMS-filtered, mapped through rows.letterbox into
  // original-picture pixels, clipped to the picture, then the faces it keeps (min_face_size,
  // max_faces; common/detection.h). Thread-safe: it runs in the post-processing pool.
  virtual std::vector<Detection> Postprocess(const OutputRows& rows,
                                             const DetectOptions& options) const = 0;
};

}  // namespace mogserve::model
