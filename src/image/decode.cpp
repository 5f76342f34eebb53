#include "image/decode.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <new>
#include <string_view>

#include "common/enum_names.h"
#include "image/decoders.h"
#include "image/exif.h"

namespace mogserve::image {
namespace {

bool StartsWith(std::span<const uint8_t> bytes, size_t offset, std::string_view magic) {
  if (bytes.size() < offset + magic.size()) return false;
  return std::memcmp(bytes.data() + offset, magic.data(), magic.size()) == 0;
}

// Brands of an ISO-BMFF "ftyp" box (offset 8) that mark HEIF and AVIF files.
const char* SniffIsoBmff(std::span<const uint8_t> bytes) {
  if (!StartsWith(bytes, 4, "ftyp")) return nullptr;
  static constexpr std::string_view kAvif[] = {"avif", "avis"};
  static constexpr std::string_view kHeif[] = {"heic", "heix", "hevc", "hevx",
                                               "heim", "heis", "mif1", "msf1"};
  for (std::string_view brand : kAvif) {
    if (StartsWith(bytes, 8, brand)) return "AVIF";
  }
  for (std::string_view brand : kHeif) {
    if (StartsWith(bytes, 8, brand)) return "HEIC/HEIF";
  }
  return nullptr;
}

// Formats we recognise but do not decode, so that the error can name them instead of saying
// "unrecognised": users with a GIF want to be told it is a GIF.
const char* SniffUnsupported(std::span<const uint8_t> bytes) {
  if (StartsWith(bytes, 0, "GIF87a") || StartsWith(bytes, 0, "GIF89a")) return "GIF";
  if (StartsWith(bytes, 0, "BM") && bytes.size() >= 14) return "BMP";
  if (StartsWith(bytes, 0, std::string_view("II*\0", 4)) ||
      StartsWith(bytes, 0, std::string_view("MM\0*", 4))) {
    return "TIFF";
  }
  if (const char* iso = SniffIsoBmff(bytes)) return iso;
  if (StartsWith(bytes, 0, "\xFF\x0A") ||
      StartsWith(bytes, 0, std::string_view("\0\0\0\x0CJXL \r\n\x87\n", 12))) {
    return "JPEG XL";
  }
  if (StartsWith(bytes, 0, std::string_view("\0\0\0\x0CjP  \r\n\x87\n", 12))) return "JPEG 2000";
  if (StartsWith(bytes, 0, "8BPS")) return "PSD";
  if (StartsWith(bytes, 0, "qoif")) return "QOI";
  return nullptr;
}

}  // namespace

constexpr EnumName<ImageFormat> kImageFormatNames[] = {
    {ImageFormat::kJpeg, "JPEG"}, {ImageFormat::kPng, "PNG"}, {ImageFormat::kWebp, "WebP"}};

const char* ImageFormatName(ImageFormat format) {
  return NameOf(kImageFormatNames, format, "unknown");
}

ImageFormat DetectFormat(std::span<const uint8_t> bytes) {
  if (StartsWith(bytes, 0, "\xFF\xD8\xFF")) return ImageFormat::kJpeg;
  if (StartsWith(bytes, 0, "\x89PNG\r\n\x1A\n")) return ImageFormat::kPng;
  if (StartsWith(bytes, 0, "RIFF") && StartsWith(bytes, 8, "WEBP")) return ImageFormat::kWebp;
  return ImageFormat::kUnknown;
}

namespace {

StatusOr<DecodedImage> DecodeUnguarded(std::span<const uint8_t> bytes,
                                       const DecodeOptions& options) {
  if (bytes.empty()) return InvalidData("empty input (0 bytes)");
  const ImageFormat format = DetectFormat(bytes);
  StatusOr<internal::RawDecode> raw = Status(StatusCode::kInternal, "no decoder ran");
  switch (format) {
    case ImageFormat::kJpeg:
      raw = internal::DecodeJpeg(bytes, options);
      break;
    case ImageFormat::kPng:
      raw = internal::DecodePng(bytes, options);
      break;
    case ImageFormat::kWebp:
      raw = internal::DecodeWebp(bytes, options);
      break;
    case ImageFormat::kUnknown: {
      if (const char* name = SniffUnsupported(bytes)) {
        return Unsupported(std::string(name) +
                           " images are not supported; supported: JPEG, PNG, WebP");
      }
      return Unsupported("unrecognised image format; supported: JPEG, PNG, WebP");
    }
  }
  if (!raw.ok()) return raw.status();
  // A decoder that reports success must have produced pixels; this guards the "never an empty
  // image with OK" contract against a library surprise.
  if (raw->image.empty() || raw->stored_width <= 0 || raw->stored_height <= 0) {
    return Internal(std::string(ImageFormatName(format)) + " decoder returned no pixels");
  }
  DecodedImage out;
  out.format = format;
  out.exif_orientation = raw->exif_orientation;
  const bool swaps = raw->exif_orientation >= 5 && raw->exif_orientation <= 8;
  out.width = swaps ? raw->stored_height : raw->stored_width;
  out.height = swaps ? raw->stored_width : raw->stored_height;
  out.image = ApplyOrientation(std::move(raw->image), raw->exif_orientation);
  return out;
}

}  // namespace

StatusOr<DecodedImage> Decode(std::span<const uint8_t> bytes, const DecodeOptions& options) {
  // Pixel buffers are bounded by max_pixels, but that bound is the caller's choice; running out of
  // memory must still come back as a Status, never as an exception through the API.
  try {
    return DecodeUnguarded(bytes, options);
  } catch (const std::bad_alloc&) {
    return ResourceExhausted("out of memory while decoding the image");
  }
}

namespace internal {

Status CheckImageSize(const char* format_name, int64_t width, int64_t height, int64_t max_pixels) {
  if (width <= 0 || height <= 0) {
    return InvalidData(std::string(format_name) + " header has a zero size (" +
                       std::to_string(width) + "x" + std::to_string(height) + ")");
  }
  const int64_t pixels = width * height;  // both < 2^31, so no overflow in 64 bits
  if (pixels > max_pixels) {
    return ResourceExhausted("image is " + std::to_string(width) + "x" + std::to_string(height) +
                             " = " + std::to_string(pixels) + " pixels, limit is " +
                             std::to_string(max_pixels));
  }
  return Status::Ok();
}

void CompositeRgbaOverWhite(std::span<const uint8_t> rgba, Image& dst) {
  const size_t pixels = static_cast<size_t>(dst.width) * dst.height;
  uint8_t* out = dst.data.data();
  for (size_t i = 0; i < pixels && (i + 1) * 4 <= rgba.size(); ++i) {
    const uint8_t* p = rgba.data() + i * 4;
    const uint32_t alpha = p[3];
    for (int c = 0; c < 3; ++c) {
      // c * a + 255 * (1 - a), rounded, in integers.
      out[i * 3 + c] = static_cast<uint8_t>((p[c] * alpha + 255 * (255 - alpha) + 127) / 255);
    }
  }
}

}  // namespace internal
}  // namespace mogserve::image
