// Decode + pre-process: from encoded bytes to a letterboxed canvas the engine can batch.
#pragma once

#include <cstdint>
#include <span>

#include "image/decode.h"
#include "image/resize.h"
#include "mogserve/result.h"
#include "pipeline/shape_buckets.h"

namespace mogserve::pipeline {

struct PreparedImage {
  image::Image canvas;         // the bucket's shape, RGB, picture at the top-left
  int bucket = 0;              // index into the ShapeBuckets it was placed with
  image::Letterbox letterbox;  // canvas pixels → original pixels
  int width = 0;               // original picture size after EXIF orientation
  int height = 0;
  DetectTiming timing;  // decode_ms and preprocess_ms filled in
};

// Decodes `bytes` (letting JPEG decode at a reduced DCT scale when the canvas needs no more) and
// places the picture into its bucket's canvas. Thread-safe.
StatusOr<PreparedImage> PrepareImage(std::span<const uint8_t> bytes, const ShapeBuckets& buckets,
                                     const image::DecodeOptions& decode_options);

}  // namespace mogserve::pipeline
