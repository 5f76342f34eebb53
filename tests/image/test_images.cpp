#include "test_images.h"

#include <turbojpeg.h>
#include <webp/encode.h>
#include <webp/mux.h>
#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace mogserve::image::testutil {
namespace {

void PutBigEndian32(std::vector<uint8_t>& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(v >> shift));
}

void AppendPngChunk(std::vector<uint8_t>& out, const std::string& type,
                    const std::vector<uint8_t>& data) {
  PutBigEndian32(out, static_cast<uint32_t>(data.size()));
  const size_t type_pos = out.size();
  out.insert(out.end(), type.begin(), type.end());
  out.insert(out.end(), data.begin(), data.end());
  const uLong crc = crc32(0, out.data() + type_pos, static_cast<uInt>(4 + data.size()));
  PutBigEndian32(out, static_cast<uint32_t>(crc));
}

std::vector<uint8_t> Ihdr(uint32_t width, uint32_t height, int bit_depth, int color_type) {
  std::vector<uint8_t> ihdr;
  PutBigEndian32(ihdr, width);
  PutBigEndian32(ihdr, height);
  ihdr.push_back(static_cast<uint8_t>(bit_depth));
  ihdr.push_back(static_cast<uint8_t>(color_type));
  ihdr.push_back(0);  // compression
  ihdr.push_back(0);  // filter
  ihdr.push_back(0);  // no interlace
  return ihdr;
}

std::vector<uint8_t> Deflate(const std::vector<uint8_t>& raw) {
  uLongf size = compressBound(static_cast<uLong>(raw.size()));
  std::vector<uint8_t> out(size);
  if (compress2(out.data(), &size, raw.data(), static_cast<uLong>(raw.size()), 9) != Z_OK) {
    throw std::runtime_error("zlib compress2 failed");
  }
  out.resize(size);
  return out;
}

std::vector<uint8_t> CopyAndFreeWebp(uint8_t* data, size_t size) {
  if (data == nullptr || size == 0) throw std::runtime_error("WebP encoding failed");
  std::vector<uint8_t> out(data, data + size);
  WebPFree(data);
  return out;
}

}  // namespace

Image MakeQuadrants(int width, int height) {
  Image img(width, height);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const bool right = x >= width / 2, bottom = y >= height / 2;
      const Color c = bottom ? (right ? kWhite : kBlue) : (right ? kGreen : kRed);
      uint8_t* p = img.pixel(x, y);
      p[0] = c.r;
      p[1] = c.g;
      p[2] = c.b;
    }
  }
  return img;
}

Image MakeGradient(int width, int height) {
  Image img(width, height);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      uint8_t* p = img.pixel(x, y);
      p[0] = static_cast<uint8_t>(x * 255 / std::max(1, width - 1));
      p[1] = static_cast<uint8_t>(y * 255 / std::max(1, height - 1));
      p[2] = static_cast<uint8_t>((x + y) * 127 / std::max(1, width + height - 2) + 64);
    }
  }
  return img;
}

Image MakeSolid(int width, int height, Color color) {
  Image img(width, height);
  for (size_t i = 0; i < img.data.size(); i += 3) {
    img.data[i] = color.r;
    img.data[i + 1] = color.g;
    img.data[i + 2] = color.b;
  }
  return img;
}

bool PixelNear(const Image& img, int x, int y, Color color, int tolerance) {
  if (x < 0 || y < 0 || x >= img.width || y >= img.height) return false;
  const uint8_t* p = img.pixel(x, y);
  return std::abs(p[0] - color.r) <= tolerance && std::abs(p[1] - color.g) <= tolerance &&
         std::abs(p[2] - color.b) <= tolerance;
}

int MaxAbsDiff(const Image& a, const Image& b) {
  if (a.width != b.width || a.height != b.height || a.data.size() != b.data.size()) return -1;
  int worst = 0;
  for (size_t i = 0; i < a.data.size(); ++i)
    worst = std::max(worst, std::abs(a.data[i] - b.data[i]));
  return worst;
}

std::vector<uint8_t> TjEncode(const uint8_t* pixels, int width, int height, int pixel_format,
                              int subsamp, int quality, int flags) {
  tjhandle handle = tjInitCompress();
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  const int rc = tjCompress2(handle, pixels, width, 0, height, pixel_format, &buffer, &size,
                             subsamp, quality, flags);
  std::vector<uint8_t> out;
  if (rc == 0) out.assign(buffer, buffer + size);
  tjFree(buffer);
  tjDestroy(handle);
  if (rc != 0) throw std::runtime_error("tjCompress2 failed");
  return out;
}

std::vector<uint8_t> InsertJpegSegment(const std::vector<uint8_t>& jpeg, uint8_t marker,
                                       const std::vector<uint8_t>& payload) {
  const size_t length = payload.size() + 2;
  // Built with push_back: GCC 12 at -O3 warns falsely about vector::insert of short lists.
  std::vector<uint8_t> out = {jpeg.at(0), jpeg.at(1)};  // SOI
  out.push_back(0xFF);
  out.push_back(marker);
  out.push_back(static_cast<uint8_t>(length >> 8));
  out.push_back(static_cast<uint8_t>(length & 0xFF));
  out.insert(out.end(), payload.begin(), payload.end());
  out.insert(out.end(), jpeg.begin() + 2, jpeg.end());
  return out;
}

void PatchJpegSize(std::vector<uint8_t>& jpeg, int width, int height) {
  for (size_t i = 2; i + 9 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xFF && (jpeg[i + 1] == 0xC0 || jpeg[i + 1] == 0xC2)) {
      jpeg[i + 5] = static_cast<uint8_t>(height >> 8);
      jpeg[i + 6] = static_cast<uint8_t>(height & 0xFF);
      jpeg[i + 7] = static_cast<uint8_t>(width >> 8);
      jpeg[i + 8] = static_cast<uint8_t>(width & 0xFF);
      return;
    }
  }
  throw std::runtime_error("no SOF marker");
}

std::vector<uint8_t> MakeExifTiff(int orientation, bool big_endian, bool exif_header) {
  std::vector<uint8_t> out;
  if (exif_header) out.insert(out.end(), {'E', 'x', 'i', 'f', 0, 0});
  auto put16 = [&](uint16_t v) {
    if (big_endian) {
      out.insert(out.end(), {static_cast<uint8_t>(v >> 8), static_cast<uint8_t>(v & 0xFF)});
    } else {
      out.insert(out.end(), {static_cast<uint8_t>(v & 0xFF), static_cast<uint8_t>(v >> 8)});
    }
  };
  auto put32 = [&](uint32_t v) {
    if (big_endian) {
      put16(static_cast<uint16_t>(v >> 16));
      put16(static_cast<uint16_t>(v & 0xFFFF));
    } else {
      put16(static_cast<uint16_t>(v & 0xFFFF));
      put16(static_cast<uint16_t>(v >> 16));
    }
  };
  out.insert(out.end(), big_endian ? std::initializer_list<uint8_t>{'M', 'M'}
                                   : std::initializer_list<uint8_t>{'I', 'I'});
  put16(42);
  put32(8);       // IFD0 right after the header
  put16(2);       // two entries: a leading unrelated tag, then the orientation
  put16(0x010F);  // Make, ASCII, 4 bytes inline
  put16(2);
  put32(4);
  out.insert(out.end(), {'A', 'C', 'M', 0});
  put16(0x0112);
  put16(3);  // SHORT
  put32(1);
  put16(static_cast<uint16_t>(orientation));
  put16(0);  // padding of the 4-byte value field
  put32(0);  // no next IFD
  return out;
}

std::vector<uint8_t> BuildPng(int width, int height, int bit_depth, int color_type,
                              const std::vector<std::vector<uint8_t>>& rows,
                              const std::vector<PngChunk>& before_idat) {
  std::vector<uint8_t> raw;
  for (const auto& row : rows) {
    raw.push_back(0);  // filter type None
    raw.insert(raw.end(), row.begin(), row.end());
  }
  std::vector<uint8_t> out = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  AppendPngChunk(out, "IHDR", Ihdr(width, height, bit_depth, color_type));
  for (const PngChunk& chunk : before_idat) AppendPngChunk(out, chunk.type, chunk.data);
  AppendPngChunk(out, "IDAT", Deflate(raw));
  AppendPngChunk(out, "IEND", {});
  return out;
}

std::vector<uint8_t> BuildPngHeaderOnly(uint32_t width, uint32_t height) {
  std::vector<uint8_t> out = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  AppendPngChunk(out, "IHDR", Ihdr(width, height, 8, 2));
  AppendPngChunk(out, "IDAT", Deflate({0}));
  AppendPngChunk(out, "IEND", {});
  return out;
}

std::vector<uint8_t> WebpLossless(const Image& img) {
  uint8_t* data = nullptr;
  const size_t size =
      WebPEncodeLosslessRGB(img.data.data(), img.width, img.height, img.width * 3, &data);
  return CopyAndFreeWebp(data, size);
}

std::vector<uint8_t> WebpLossy(const Image& img, float quality) {
  uint8_t* data = nullptr;
  const size_t size =
      WebPEncodeRGB(img.data.data(), img.width, img.height, img.width * 3, quality, &data);
  return CopyAndFreeWebp(data, size);
}

std::vector<uint8_t> WebpLosslessRgba(const std::vector<uint8_t>& rgba, int width, int height) {
  uint8_t* data = nullptr;
  const size_t size = WebPEncodeLosslessRGBA(rgba.data(), width, height, width * 4, &data);
  return CopyAndFreeWebp(data, size);
}

std::vector<uint8_t> WebpWithExif(const std::vector<uint8_t>& webp,
                                  const std::vector<uint8_t>& exif) {
  const WebPData image = {webp.data(), webp.size()};
  WebPMux* mux = WebPMuxCreate(&image, /*copy_data=*/1);
  if (mux == nullptr) throw std::runtime_error("WebPMuxCreate failed");
  const WebPData chunk = {exif.data(), exif.size()};
  WebPData assembled;
  WebPDataInit(&assembled);
  const bool ok = WebPMuxSetChunk(mux, "EXIF", &chunk, 1) == WEBP_MUX_OK &&
                  WebPMuxAssemble(mux, &assembled) == WEBP_MUX_OK;
  WebPMuxDelete(mux);
  if (!ok) throw std::runtime_error("WebPMux failed");
  std::vector<uint8_t> out(assembled.bytes, assembled.bytes + assembled.size);
  WebPDataClear(&assembled);
  return out;
}

}  // namespace mogserve::image::testutil
