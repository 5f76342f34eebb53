// PNG decoding through libpng's simplified API (png_image), which does its setjmp/longjmp error
// handling internally, so no C++ object ever lives across a longjmp here.
#include <png.h>

#include <cstring>
#include <string>
#include <vector>

#include "image/decoders.h"
#include "image/exif.h"

namespace mogserve::image::internal {
namespace {

uint32_t ReadBigEndian32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

// EXIF orientation from an eXIf chunk. The simplified API hides png_struct, so png_get_eXIf_1 is
// out of reach; walking the chunk list is simple and bounds-checked. Any malformation just ends
// the walk with orientation 1.
int PngExifOrientation(std::span<const uint8_t> bytes) {
  size_t pos = 8;  // after the signature
  while (pos + 12 <= bytes.size()) {
    const uint32_t length = ReadBigEndian32(bytes.data() + pos);
    const uint8_t* type = bytes.data() + pos + 4;
    if (length > bytes.size() - pos - 12) break;
    if (std::memcmp(type, "eXIf", 4) == 0) {
      return ParseExifOrientation(bytes.subspan(pos + 8, length));
    }
    if (std::memcmp(type, "IEND", 4) == 0) break;
    pos += 12 + static_cast<size_t>(length);
  }
  return 1;
}

// Frees the png_image's internal state on every exit path.
class PngImageGuard {
 public:
  explicit PngImageGuard(png_image* image) : image_(image) {}
  ~PngImageGuard() { png_image_free(image_); }
  PngImageGuard(const PngImageGuard&) = delete;
  PngImageGuard& operator=(const PngImageGuard&) = delete;

 private:
  png_image* image_;
};

}  // namespace

StatusOr<RawDecode> DecodePng(std::span<const uint8_t> bytes, const DecodeOptions& options) {
  png_image png;
  std::memset(&png, 0, sizeof(png));
  png.version = PNG_IMAGE_VERSION;
  PngImageGuard guard(&png);
  if (!png_image_begin_read_from_memory(&png, bytes.data(), bytes.size())) {
    return InvalidData(std::string("PNG header is invalid: ") + png.message);
  }
  MOGSERVE_RETURN_IF_ERROR(CheckImageSize("PNG", png.width, png.height, options.max_pixels));

  // Transparent pixels are composited over white, which is what image viewers and browsers show
  // on their default background; black would turn a transparent logo's background into a dark
  // frame the detector has never seen in the photo the user looked at.
  const bool has_alpha = (png.format & PNG_FORMAT_FLAG_ALPHA) != 0;
  png.format = has_alpha ? PNG_FORMAT_RGBA : PNG_FORMAT_RGB;
  // Without this flag libpng treats 16-bit samples as linear light and gamma-encodes them when
  // reducing to 8 bits; 16-bit PNGs without gAMA are in practice sRGB like 8-bit ones.
  png.flags |= PNG_IMAGE_FLAG_16BIT_sRGB;

  RawDecode out;
  out.stored_width = static_cast<int>(png.width);
  out.stored_height = static_cast<int>(png.height);
  out.exif_orientation = PngExifOrientation(bytes);
  Image image(out.stored_width, out.stored_height);
  std::vector<uint8_t> rgba;
  void* buffer = image.data.data();
  if (has_alpha) {
    rgba.resize(static_cast<size_t>(image.width) * image.height * 4);
    buffer = rgba.data();
  }
  if (!png_image_finish_read(&png, nullptr, buffer, 0, nullptr)) {
    return InvalidData(std::string("PNG data is corrupt or truncated: ") + png.message);
  }
  if (has_alpha) CompositeRgbaOverWhite(rgba, image);
  out.image = std::move(image);
  return out;
}

}  // namespace mogserve::image::internal
