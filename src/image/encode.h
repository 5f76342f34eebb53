// Encoding RGB images to JPEG and PNG (for annotated outputs and for tests).
#pragma once

#include <cstdint>
#include <vector>

#include "image/image.h"
#include "mogserve/status.h"

namespace mogserve::image {

StatusOr<std::vector<uint8_t>> EncodeJpeg(const Image& img, int quality = 90);
StatusOr<std::vector<uint8_t>> EncodePng(const Image& img);

}  // namespace mogserve::image
