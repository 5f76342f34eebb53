// Encoding RGB images to JPEG, PNG and WebP (annotated outputs, anonymized pictures, tests).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "image/decode.h"
#include "image/image.h"
#include "mogserve/status.h"

namespace mogserve::image {

StatusOr<std::vector<uint8_t>> EncodeJpeg(const Image& img, int quality = 90);
StatusOr<std::vector<uint8_t>> EncodePng(const Image& img);
// Lossy WebP at `quality` (1-100), libwebp's own default method.
StatusOr<std::vector<uint8_t>> EncodeWebp(const Image& img, int quality = 90);

// `img` in `format` (JPEG and WebP at `quality`); InvalidArgument for kUnknown.
StatusOr<std::vector<uint8_t>> Encode(const Image& img, ImageFormat format, int quality = 90);

// The format a file name's extension asks for (.jpg .jpeg .jpe .png .webp, any case);
// kUnknown for any other.
ImageFormat FormatOfExtension(const std::string& path);

}  // namespace mogserve::image
