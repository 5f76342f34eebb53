// Decode + pre-process for the pipeline: from an image input (encoded bytes, a file, or pixels
// already decoded) to a canvas of its shape bucket, in a buffer from the CanvasPool.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "image/decode.h"
#include "image/image.h"
#include "image/resize.h"
#include "mogserve/status.h"
#include "pipeline/canvas_pool.h"
#include "pipeline/shape_buckets.h"

namespace mogserve::pipeline {

// One picture to detect in: exactly one of the three is used, first non-empty wins in this
// order: `decoded` (pixels, already oriented), `bytes` (JPEG/PNG/WebP), `path` (read in the
// pre-processing pool, so file I/O overlaps inference too).
struct ImageInput {
  image::Image decoded;
  std::vector<uint8_t> bytes;
  std::string path;

  // Bytes this input holds in memory before it is decoded.
  int64_t held_bytes() const {
    return static_cast<int64_t>(decoded.data.size() + bytes.size() + path.size());
  }
};

struct PreparedCanvas {
  int bucket = 0;
  image::Letterbox letterbox;   // canvas pixels -> original pixels
  std::vector<uint8_t> canvas;  // the bucket's width x height x 3, from the pool
  int width = 0;                // original picture size after EXIF orientation
  int height = 0;
  double decode_ms = 0;      // reading + decoding (0 for decoded input)
  double preprocess_ms = 0;  // resize + letterbox
};

// Reads/decodes `input` (letting JPEG decode at a reduced DCT scale when the bucket needs no
// more) and letterboxes it into its bucket's canvas. Errors are the reader's or decoder's
// (kInvalidData, kUnsupported, kResourceExhausted, kNotFound). Thread-safe.
StatusOr<PreparedCanvas> PrepareCanvas(ImageInput input, const ShapeBuckets& buckets,
                                       const image::DecodeOptions& decode, CanvasPool& pool);

}  // namespace mogserve::pipeline
