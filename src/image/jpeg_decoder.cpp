// JPEG decoding through the TurboJPEG API (libjpeg-turbo 2.1).
#include <turbojpeg.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "image/decoders.h"
#include "image/exif.h"

namespace mogserve::image::internal {
namespace {

struct TjHandleDeleter {
  void operator()(void* handle) const { tjDestroy(handle); }
};
// A handle per call: tjInitDecompress costs microseconds next to a decode, and it keeps Decode()
// free of shared state.
using TjHandle = std::unique_ptr<void, TjHandleDeleter>;

bool ContainsNoCase(std::string haystack, std::string_view needle) {
  for (char& c : haystack) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return haystack.find(needle) != std::string::npos;
}

// The strongest of 1/8, 1/4, 1/2 whose scaled longer side stays >= min_long_side_px; 1/1 when
// none qualifies or scaling is off. Only these factors are used because they are the ones where
// libjpeg-turbo's IDCT scaling is both fast and exact in size (ceil(side * num / denom)).
tjscalingfactor ChooseScale(int width, int height, int min_long_side_px) {
  const tjscalingfactor kFull = {1, 1};
  if (min_long_side_px <= 0) return kFull;
  int count = 0;
  const tjscalingfactor* factors = tjGetScalingFactors(&count);
  if (factors == nullptr) return kFull;
  const int long_side = std::max(width, height);
  tjscalingfactor best = kFull;
  for (int i = 0; i < count; ++i) {
    const tjscalingfactor f = factors[i];
    if (f.num != 1 || (f.denom != 2 && f.denom != 4 && f.denom != 8)) continue;
    if (TJSCALED(long_side, f) < min_long_side_px) continue;
    if (f.denom > best.denom) best = f;
  }
  return best;
}

// libjpeg's convention (and Photoshop's) stores Adobe CMYK inverted: 255 means no ink. This is
// the same conversion libjpeg-turbo's own cmyk.h uses; without a colour profile it is only an
// approximation of what a colour-managed viewer shows, which is fine for detection.
void CmykToRgb(const std::vector<uint8_t>& cmyk, Image& dst) {
  const size_t pixels = static_cast<size_t>(dst.width) * dst.height;
  for (size_t i = 0; i < pixels; ++i) {
    const uint8_t* p = &cmyk[i * 4];
    const uint32_t k = p[3];
    for (int c = 0; c < 3; ++c) {
      dst.data[i * 3 + c] = static_cast<uint8_t>((p[c] * k + 127) / 255);
    }
  }
}

// Runs tjDecompress2 and sorts its outcome: warnings are accepted except a premature end of data,
// which libjpeg-turbo "repairs" by filling the rest of the picture with grey. A file that had no
// end marker and fails is most likely cut short (e.g. inside a table), so the message says so.
Status RunDecompress(void* handle, std::span<const uint8_t> bytes, bool had_end_marker,
                     uint8_t* dst, int width, int height, int pixel_format) {
  const int rc = tjDecompress2(handle, bytes.data(), static_cast<unsigned long>(bytes.size()), dst,
                               width, 0, height, pixel_format, 0);
  if (rc == 0) return Status::Ok();
  const std::string error = tjGetErrorStr2(handle);
  if (tjGetErrorCode(handle) == TJERR_WARNING) {
    if (!ContainsNoCase(error, "premature end")) return Status::Ok();
    return InvalidData("JPEG data is truncated (" + error + ")");
  }
  if (!had_end_marker) return InvalidData("JPEG data is truncated or corrupt (" + error + ")");
  return InvalidData("JPEG decoding failed: " + error);
}

bool HasEndMarker(std::span<const uint8_t> bytes) {
  const size_t n = bytes.size();
  return n >= 2 && bytes[n - 2] == 0xFF && bytes[n - 1] == 0xD9;
}

// A file whose only defect is a missing EOI marker holds the whole picture, yet libjpeg-turbo
// reports it with the same "premature end" warning as a file cut mid-scan. Appending the marker
// (to a copy, only when absent) lets complete pictures through; a truncated scan still warns
// ("premature end of data segment") because the marker arrives before the data is complete.
std::span<const uint8_t> WithEndMarker(std::span<const uint8_t> bytes,
                                       std::vector<uint8_t>& storage) {
  if (HasEndMarker(bytes)) return bytes;
  storage.reserve(bytes.size() + 2);
  storage.assign(bytes.begin(), bytes.end());
  storage.push_back(0xFF);
  storage.push_back(0xD9);
  return storage;
}

}  // namespace

StatusOr<RawDecode> DecodeJpeg(std::span<const uint8_t> bytes, const DecodeOptions& options) {
  TjHandle handle(tjInitDecompress());
  if (!handle) return Internal(std::string("tjInitDecompress failed: ") + tjGetErrorStr2(nullptr));
  int width = 0, height = 0, subsamp = 0, colorspace = 0;
  if (tjDecompressHeader3(handle.get(), bytes.data(), static_cast<unsigned long>(bytes.size()),
                          &width, &height, &subsamp, &colorspace) != 0) {
    return InvalidData(std::string("JPEG header is invalid or truncated: ") +
                       tjGetErrorStr2(handle.get()));
  }
  MOGSERVE_RETURN_IF_ERROR(CheckImageSize("JPEG", width, height, options.max_pixels));

  const tjscalingfactor scale = ChooseScale(width, height, options.min_long_side_px);
  RawDecode out;
  out.stored_width = width;
  out.stored_height = height;
  out.exif_orientation = JpegExifOrientation(bytes);
  const bool had_end_marker = HasEndMarker(bytes);
  std::vector<uint8_t> repaired;
  bytes = WithEndMarker(bytes, repaired);
  Image image(TJSCALED(width, scale), TJSCALED(height, scale));
  if (colorspace == TJCS_CMYK || colorspace == TJCS_YCCK) {
    // libjpeg cannot convert CMYK to RGB itself; decode to CMYK and convert here.
    std::vector<uint8_t> cmyk(static_cast<size_t>(image.width) * image.height * 4);
    MOGSERVE_RETURN_IF_ERROR(RunDecompress(handle.get(), bytes, had_end_marker, cmyk.data(),
                                           image.width, image.height, TJPF_CMYK));
    CmykToRgb(cmyk, image);
  } else {
    MOGSERVE_RETURN_IF_ERROR(RunDecompress(handle.get(), bytes, had_end_marker, image.data.data(),
                                           image.width, image.height, TJPF_RGB));
  }
  out.image = std::move(image);
  return out;
}

}  // namespace mogserve::image::internal
