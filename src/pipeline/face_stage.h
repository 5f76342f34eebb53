// A second stage over each image's faces, run on the post-processing threads after decoding while
// the image's canvas is still held: the 68-point landmark net (api::LandmarkStage) that gives
// five landmarks to the faces of models without their own. Header-only and torch-free: the
// pipeline calls it as it calls the model's OutputDecoder.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "image/resize.h"
#include "mogserve/result.h"
#include "mogserve/status.h"

namespace mogserve::pipeline {

class FaceStage {
 public:
  virtual ~FaceStage() = default;

  // Adds what the stage computes to `faces` (original-picture pixels), reading the pixels from
  // `canvas` (RGB, letterbox.canvas_width x canvas_height x 3, the picture placed as `letterbox`
  // says). Thread-safe. An error ends the request as failed.
  virtual Status Apply(std::span<const uint8_t> canvas, const image::Letterbox& letterbox,
                       std::vector<Detection>& faces) const = 0;
};

}  // namespace mogserve::pipeline
