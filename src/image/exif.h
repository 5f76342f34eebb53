// EXIF orientation: reading the tag from a JPEG APP1 segment (or a raw TIFF/EXIF block, as found
// in WebP and PNG eXIf chunks) and applying it to pixels.
#pragma once

#include <cstdint>
#include <span>

#include "image/image.h"

namespace mogserve::image {

// Orientation (1..8) from the TIFF structure that follows the "Exif\0\0" header (the header
// itself is optional). Returns 1 when absent or malformed: a bad EXIF block never fails a decode.
int ParseExifOrientation(std::span<const uint8_t> tiff);

// Orientation from a JPEG stream: scans the markers before the first SOS for an APP1 Exif block.
int JpegExifOrientation(std::span<const uint8_t> jpeg);

// Returns the image turned upright for orientation 1..8 (values outside the range are treated
// as 1). Orientations 5..8 swap width and height.
Image ApplyOrientation(Image src, int orientation);

}  // namespace mogserve::image
