// WebP decoding through libwebp's advanced decoding API (it reports a status code, unlike the
// WebPDecodeRGB* shortcuts, so errors can say what went wrong).
#include <webp/decode.h>

#include <cstring>
#include <string>
#include <vector>

#include "image/decoders.h"
#include "image/exif.h"

namespace mogserve::image::internal {
namespace {

const char* Vp8StatusName(VP8StatusCode code) {
  switch (code) {
    case VP8_STATUS_OK:
      return "ok";
    case VP8_STATUS_OUT_OF_MEMORY:
      return "out of memory";
    case VP8_STATUS_INVALID_PARAM:
      return "invalid parameter";
    case VP8_STATUS_BITSTREAM_ERROR:
      return "bitstream error";
    case VP8_STATUS_UNSUPPORTED_FEATURE:
      return "unsupported feature";
    case VP8_STATUS_SUSPENDED:
      return "suspended";
    case VP8_STATUS_USER_ABORT:
      return "user abort";
    case VP8_STATUS_NOT_ENOUGH_DATA:
      return "not enough data (truncated)";
  }
  return "unknown error";
}

uint32_t ReadLittleEndian32(const uint8_t* p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}

// EXIF orientation from the RIFF "EXIF" chunk of an extended (VP8X) file. libwebp's decoder
// ignores metadata, and the chunk layout is simple enough to walk here without libwebpdemux.
int WebpExifOrientation(std::span<const uint8_t> bytes) {
  size_t pos = 12;  // after "RIFF" <size> "WEBP"
  while (pos + 8 <= bytes.size()) {
    const uint32_t length = ReadLittleEndian32(bytes.data() + pos + 4);
    if (length > bytes.size() - pos - 8) break;
    if (std::memcmp(bytes.data() + pos, "EXIF", 4) == 0) {
      return ParseExifOrientation(bytes.subspan(pos + 8, length));
    }
    pos += 8 + static_cast<size_t>(length) + (length & 1);  // chunks are padded to even sizes
  }
  return 1;
}

Status DecodeInto(std::span<const uint8_t> bytes, WEBP_CSP_MODE mode, uint8_t* dst, size_t size,
                  int stride, WebPDecoderConfig& config) {
  config.output.colorspace = mode;
  config.output.is_external_memory = 1;
  config.output.u.RGBA.rgba = dst;
  config.output.u.RGBA.stride = stride;
  config.output.u.RGBA.size = size;
  const VP8StatusCode code = WebPDecode(bytes.data(), bytes.size(), &config);
  WebPFreeDecBuffer(&config.output);  // a no-op for external memory, but the API asks for it
  if (code != VP8_STATUS_OK) {
    return InvalidData(std::string("WebP decoding failed: ") + Vp8StatusName(code));
  }
  return Status::Ok();
}

}  // namespace

StatusOr<RawDecode> DecodeWebp(std::span<const uint8_t> bytes, const DecodeOptions& options) {
  WebPDecoderConfig config;
  if (!WebPInitDecoderConfig(&config)) return Internal("libwebp version mismatch");
  const VP8StatusCode code = WebPGetFeatures(bytes.data(), bytes.size(), &config.input);
  if (code != VP8_STATUS_OK) {
    return InvalidData(std::string("WebP header is invalid: ") + Vp8StatusName(code));
  }
  const WebPBitstreamFeatures& features = config.input;
  if (features.has_animation) return Unsupported("animated WebP images are not supported");
  MOGSERVE_RETURN_IF_ERROR(
      CheckImageSize("WebP", features.width, features.height, options.max_pixels));

  RawDecode out;
  out.stored_width = features.width;
  out.stored_height = features.height;
  out.exif_orientation = WebpExifOrientation(bytes);
  Image image(features.width, features.height);
  const size_t pixels = static_cast<size_t>(image.width) * image.height;
  if (features.has_alpha) {
    // Composited over white, like PNG (see png_decoder.cpp for why).
    std::vector<uint8_t> rgba(pixels * 4);
    MOGSERVE_RETURN_IF_ERROR(
        DecodeInto(bytes, MODE_RGBA, rgba.data(), rgba.size(), image.width * 4, config));
    CompositeRgbaOverWhite(rgba, image);
  } else {
    MOGSERVE_RETURN_IF_ERROR(
        DecodeInto(bytes, MODE_RGB, image.data.data(), image.data.size(), image.width * 3, config));
  }
  out.image = std::move(image);
  return out;
}

}  // namespace mogserve::image::internal
