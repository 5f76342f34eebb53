#include "image/exif.h"

#include <cstddef>
#include <cstring>
#include <optional>

#include "common/byte_order.h"

namespace mogserve::image {
namespace {

constexpr uint16_t kOrientationTag = 0x0112;
constexpr uint16_t kTypeShort = 3;
constexpr size_t kIfdEntryBytes = 12;

// Reads TIFF integers in the block's byte order; every read is bounds-checked by the caller
// through Has().
class TiffReader {
 public:
  TiffReader(std::span<const uint8_t> data, bool big_endian)
      : data_(data), big_endian_(big_endian) {}

  bool Has(size_t offset, size_t count) const {
    return offset <= data_.size() && count <= data_.size() - offset;
  }
  uint16_t U16(size_t offset) const {
    return LoadInOrder<uint16_t>(data_.data() + offset, big_endian_);
  }
  uint32_t U32(size_t offset) const {
    return LoadInOrder<uint32_t>(data_.data() + offset, big_endian_);
  }

 private:
  std::span<const uint8_t> data_;
  bool big_endian_;
};

// Source coordinates of destination pixel (x, y) are (x0 + x * xx + y * xy, y0 + x * yx + y * yy).
struct OrientationMap {
  int x0, xx, xy;
  int y0, yx, yy;
};

OrientationMap MapFor(int orientation, int w, int h) {
  switch (orientation) {
    case 2:
      return {w - 1, -1, 0, 0, 0, 1};  // mirror horizontal
    case 3:
      return {w - 1, -1, 0, h - 1, 0, -1};  // rotate 180
    case 4:
      return {0, 1, 0, h - 1, 0, -1};  // mirror vertical
    case 5:
      return {0, 0, 1, 0, 1, 0};  // transpose
    case 6:
      return {0, 0, 1, h - 1, -1, 0};  // rotate 90 clockwise
    case 7:
      return {w - 1, 0, -1, h - 1, -1, 0};  // transverse
    case 8:
      return {w - 1, 0, -1, 0, 1, 0};  // rotate 90 counter-clockwise
    default:
      return {0, 1, 0, 0, 0, 1};
  }
}

}  // namespace

int ParseExifOrientation(std::span<const uint8_t> tiff) {
  if (tiff.size() >= 6 && std::memcmp(tiff.data(), "Exif\0\0", 6) == 0) tiff = tiff.subspan(6);
  if (tiff.size() < 8) return 1;
  const std::optional<bool> big_endian = BigEndianMark(tiff.data(), "II", "MM");
  if (!big_endian) return 1;
  const TiffReader reader(tiff, *big_endian);
  if (reader.U16(2) != 42) return 1;
  const size_t ifd = reader.U32(4);
  if (!reader.Has(ifd, 2)) return 1;
  const size_t entries = reader.U16(ifd);
  for (size_t i = 0; i < entries; ++i) {
    const size_t entry = ifd + 2 + i * kIfdEntryBytes;
    if (!reader.Has(entry, kIfdEntryBytes)) return 1;
    if (reader.U16(entry) != kOrientationTag) continue;
    if (reader.U16(entry + 2) != kTypeShort || reader.U32(entry + 4) < 1) return 1;
    const int value = reader.U16(entry + 8);  // a single SHORT sits left-justified in the field
    return value >= 1 && value <= 8 ? value : 1;
  }
  return 1;
}

int JpegExifOrientation(std::span<const uint8_t> jpeg) {
  if (jpeg.size() < 4 || jpeg[0] != 0xFF || jpeg[1] != 0xD8) return 1;
  size_t pos = 2;
  while (pos + 2 <= jpeg.size()) {
    if (jpeg[pos] != 0xFF) return 1;  // lost sync: not a marker where one must be
    const uint8_t marker = jpeg[pos + 1];
    if (marker == 0xFF) {  // fill byte before a marker
      ++pos;
      continue;
    }
    pos += 2;
    if (marker == 0xDA || marker == 0xD9) return 1;  // SOS / EOI: no metadata after this
    if ((marker >= 0xD0 && marker <= 0xD7) || marker == 0x01) continue;  // no length field
    if (pos + 2 > jpeg.size()) return 1;
    const size_t length = (size_t{jpeg[pos]} << 8) | jpeg[pos + 1];
    if (length < 2 || length > jpeg.size() - pos) return 1;
    const std::span<const uint8_t> payload = jpeg.subspan(pos + 2, length - 2);
    // APP1 also carries XMP ("http://ns.adobe.com/..."); only the Exif one has the tag.
    if (marker == 0xE1 && payload.size() >= 6 && std::memcmp(payload.data(), "Exif\0\0", 6) == 0) {
      return ParseExifOrientation(payload);
    }
    pos += length;
  }
  return 1;
}

Image ApplyOrientation(Image src, int orientation) {
  if (orientation < 2 || orientation > 8 || src.empty()) return src;
  const bool swaps = orientation >= 5;
  Image dst(swaps ? src.height : src.width, swaps ? src.width : src.height);
  const OrientationMap m = MapFor(orientation, src.width, src.height);
  // Offsets stay integers (not pointers) so that the step past the last pixel is harmless.
  const ptrdiff_t step = (static_cast<ptrdiff_t>(m.yx) * src.width + m.xx) * 3;  // per dst column
  for (int y = 0; y < dst.height; ++y) {
    const ptrdiff_t sx = m.x0 + static_cast<ptrdiff_t>(y) * m.xy;
    const ptrdiff_t sy = m.y0 + static_cast<ptrdiff_t>(y) * m.yy;
    ptrdiff_t s = (sy * src.width + sx) * 3;
    uint8_t* d = dst.pixel(0, y);
    for (int x = 0; x < dst.width; ++x, d += 3, s += step) {
      d[0] = src.data[s];
      d[1] = src.data[s + 1];
      d[2] = src.data[s + 2];
    }
  }
  return dst;
}

}  // namespace mogserve::image
