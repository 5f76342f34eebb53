// Decoding of JPEG, PNG and WebP bytes into RGB, with EXIF orientation applied and limits checked
// from the header before any pixel buffer is allocated.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "image/image.h"
#include "mogserve/status.h"

namespace mogserve::image {

enum class ImageFormat { kUnknown, kJpeg, kPng, kWebp };
const char* ImageFormatName(ImageFormat format);

// Sniffs the format from the first bytes (magic numbers), never from a file name.
ImageFormat DetectFormat(std::span<const uint8_t> bytes);

struct DecodeOptions {
  // Refuse images with more pixels than this (width * height from the header), before allocating.
  int64_t max_pixels = 50'000'000;
  // If > 0, the decoder may return a smaller image (JPEG DCT scaling by 1/2, 1/4, 1/8) as long as
  // its longer side stays >= min_long_side_px. 0 = always decode at full size.
  int min_long_side_px = 0;
};

struct DecodedImage {
  // Pixels after EXIF orientation, possibly reduced by DCT scaling (see DecodeOptions).
  Image image;
  // Size of the full-resolution picture after EXIF orientation: the coordinate system that
  // detections are reported in. image.width / width is the decode scale (1, 1/2, 1/4 or 1/8).
  int width = 0;
  int height = 0;
  ImageFormat format = ImageFormat::kUnknown;
  int exif_orientation = 1;  // 1..8 as found in the file (1 when absent)
};

// Decodes `bytes`. Errors (never crashes, never an empty image):
//   kInvalidData       empty, truncated or corrupt data, zero-sized or 1-pixel-free images
//   kUnsupported       not JPEG/PNG/WebP (message names what was recognised, if anything)
//   kResourceExhausted more than options.max_pixels pixels (checked from the header)
// Thread-safe: no shared state.
StatusOr<DecodedImage> Decode(std::span<const uint8_t> bytes, const DecodeOptions& options = {});

}  // namespace mogserve::image
