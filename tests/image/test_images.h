// Builders of test images and encoded files for the image-layer tests: patterns, hand-assembled
// PNG chunks, JPEG/WebP through the libraries directly, EXIF blocks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "image/image.h"

namespace mogserve::image::testutil {

struct Color {
  uint8_t r, g, b;
};
inline constexpr Color kRed{255, 0, 0};
inline constexpr Color kGreen{0, 255, 0};
inline constexpr Color kBlue{0, 0, 255};
inline constexpr Color kWhite{255, 255, 255};

// Four solid quadrants: red top-left, green top-right, blue bottom-left, white bottom-right.
Image MakeQuadrants(int width, int height);
// A smooth pattern that JPEG keeps well, and that differs in every pixel for lossless checks.
Image MakeGradient(int width, int height);
Image MakeSolid(int width, int height, Color color);

// True when every channel of pixel (x, y) is within `tolerance` of `color`.
bool PixelNear(const Image& img, int x, int y, Color color, int tolerance);
// Largest absolute channel difference; -1 when the sizes differ.
int MaxAbsDiff(const Image& a, const Image& b);

// JPEG through TurboJPEG: `pixels` in `pixel_format` (TJPF_*), TJSAMP_* subsampling, TJFLAG_*.
std::vector<uint8_t> TjEncode(const uint8_t* pixels, int width, int height, int pixel_format,
                              int subsamp, int quality, int flags);
// Inserts a segment (marker 0xFFE1 etc.) right after the SOI marker of a JPEG.
std::vector<uint8_t> InsertJpegSegment(const std::vector<uint8_t>& jpeg, uint8_t marker,
                                       const std::vector<uint8_t>& payload);
// Overwrites the size in the first SOF0/SOF2 segment.
void PatchJpegSize(std::vector<uint8_t>& jpeg, int width, int height);

// A TIFF block with one IFD0 entry, the orientation tag (type SHORT), in either byte order;
// `exif_header` prefixes "Exif\0\0" as in a JPEG APP1 payload.
std::vector<uint8_t> MakeExifTiff(int orientation, bool big_endian, bool exif_header);

// A PNG assembled chunk by chunk. `rows` holds the unfiltered scanlines (each a filter-type-0
// byte is added); `before_idat` are extra chunks (PLTE, tRNS, eXIf) as {type, data}.
struct PngChunk {
  std::string type;
  std::vector<uint8_t> data;
};
std::vector<uint8_t> BuildPng(int width, int height, int bit_depth, int color_type,
                              const std::vector<std::vector<uint8_t>>& rows,
                              const std::vector<PngChunk>& before_idat = {});
// Just a signature, an IHDR and an (empty-stream) IDAT + IEND: for header-only tests.
std::vector<uint8_t> BuildPngHeaderOnly(uint32_t width, uint32_t height);

std::vector<uint8_t> WebpLossless(const Image& img);
std::vector<uint8_t> WebpLossy(const Image& img, float quality);
std::vector<uint8_t> WebpLosslessRgba(const std::vector<uint8_t>& rgba, int width, int height);
// Adds an EXIF chunk (turning the file into an extended VP8X one) with libwebpmux.
std::vector<uint8_t> WebpWithExif(const std::vector<uint8_t>& webp,
                                  const std::vector<uint8_t>& exif);

}  // namespace mogserve::image::testutil
