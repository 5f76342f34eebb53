#include "image/encode.h"

#include <png.h>
#include <turbojpeg.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

namespace mogserve::image {
namespace {

Status CheckEncodable(const Image& img) {
  if (img.empty()) return InvalidArgument("cannot encode an empty image");
  if (img.data.size() != static_cast<size_t>(img.width) * img.height * 3) {
    return InvalidArgument("image buffer size does not match its width and height");
  }
  return Status::Ok();
}

struct TjHandleDeleter {
  void operator()(void* handle) const { tjDestroy(handle); }
};
struct TjBufferDeleter {
  void operator()(unsigned char* buffer) const { tjFree(buffer); }
};

}  // namespace

StatusOr<std::vector<uint8_t>> EncodeJpeg(const Image& img, int quality) {
  MOGSERVE_RETURN_IF_ERROR(CheckEncodable(img));
  std::unique_ptr<void, TjHandleDeleter> handle(tjInitCompress());
  if (!handle) return Internal(std::string("tjInitCompress failed: ") + tjGetErrorStr2(nullptr));
  unsigned char* raw_buffer = nullptr;
  unsigned long size = 0;
  const int rc = tjCompress2(handle.get(), img.data.data(), img.width, 0, img.height, TJPF_RGB,
                             &raw_buffer, &size, TJSAMP_420, std::clamp(quality, 1, 100), 0);
  std::unique_ptr<unsigned char, TjBufferDeleter> buffer(raw_buffer);
  if (rc != 0) {
    return Internal(std::string("JPEG encoding failed: ") + tjGetErrorStr2(handle.get()));
  }
  return std::vector<uint8_t>(buffer.get(), buffer.get() + size);
}

StatusOr<std::vector<uint8_t>> EncodePng(const Image& img) {
  MOGSERVE_RETURN_IF_ERROR(CheckEncodable(img));
  png_image png;
  std::memset(&png, 0, sizeof(png));
  png.version = PNG_IMAGE_VERSION;
  png.width = static_cast<png_uint_32>(img.width);
  png.height = static_cast<png_uint_32>(img.height);
  png.format = PNG_FORMAT_RGB;
  // First call measures, second writes: libpng's documented way to size the buffer.
  png_alloc_size_t size = 0;
  if (!png_image_write_to_memory(&png, nullptr, &size, 0, img.data.data(), 0, nullptr)) {
    return Internal(std::string("PNG encoding failed: ") + png.message);
  }
  std::vector<uint8_t> out(size);
  if (!png_image_write_to_memory(&png, out.data(), &size, 0, img.data.data(), 0, nullptr)) {
    return Internal(std::string("PNG encoding failed: ") + png.message);
  }
  out.resize(size);
  return out;
}

}  // namespace mogserve::image
