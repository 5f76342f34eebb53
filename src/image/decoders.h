// Private to the image layer: the per-format decoders that Decode() dispatches to, and the
// helpers they share. Not part of the layer's API.
#pragma once

#include <cstdint>
#include <span>

#include "image/decode.h"
#include "image/image.h"
#include "mogserve/status.h"

namespace mogserve::image::internal {

// What a format decoder returns: pixels as stored in the file (not yet oriented), possibly
// reduced by DCT scaling, plus the full stored size and the EXIF orientation it found.
struct RawDecode {
  Image image;
  int stored_width = 0;  // full-resolution size before orientation
  int stored_height = 0;
  int exif_orientation = 1;
};

StatusOr<RawDecode> DecodeJpeg(std::span<const uint8_t> bytes, const DecodeOptions& options);
StatusOr<RawDecode> DecodePng(std::span<const uint8_t> bytes, const DecodeOptions& options);
StatusOr<RawDecode> DecodeWebp(std::span<const uint8_t> bytes, const DecodeOptions& options);

// kInvalidData for a zero-sized header, kResourceExhausted for more than max_pixels pixels.
// Called with the header's size before any pixel buffer is allocated.
Status CheckImageSize(const char* format_name, int64_t width, int64_t height, int64_t max_pixels);

// Flattens straight (non-premultiplied) RGBA onto a white background into `dst` (RGB, same size).
void CompositeRgbaOverWhite(std::span<const uint8_t> rgba, Image& dst);

}  // namespace mogserve::image::internal
