// Decode + pre-process: from encoded bytes to a letterboxed canvas the engine can batch.
#pragma once

#include <cstdint>
#include <span>

#include "image/decode.h"
#include "image/resize.h"
#include "mogserve/detector.h"

namespace mogserve::pipeline {

struct PreparedImage {
  image::Image canvas;         // canvas_side x canvas_side RGB, picture at the top-left
  image::Letterbox letterbox;  // canvas pixels → original pixels
  int width = 0;               // original picture size after EXIF orientation
  int height = 0;
  DetectTiming timing;  // decode_ms and preprocess_ms filled in
};

// Decodes `bytes` (letting JPEG decode at a reduced DCT scale when the picture is at least twice
// the canvas) and letterboxes the picture into a canvas_side square. Thread-safe.
StatusOr<PreparedImage> PrepareImage(std::span<const uint8_t> bytes, int canvas_side,
                                     const image::DecodeOptions& decode_options);

}  // namespace mogserve::pipeline
