#include "image/encode.h"

#include <png.h>
#include <turbojpeg.h>
#include <webp/encode.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
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

StatusOr<std::vector<uint8_t>> EncodeWebp(const Image& img, int quality) {
  MOGSERVE_RETURN_IF_ERROR(CheckEncodable(img));
  if (img.width > WEBP_MAX_DIMENSION || img.height > WEBP_MAX_DIMENSION) {
    return InvalidArgument("WebP holds at most " + std::to_string(WEBP_MAX_DIMENSION) +
                           " px a side; the picture is " + std::to_string(img.width) + "x" +
                           std::to_string(img.height));
  }
  uint8_t* raw = nullptr;
  const size_t size = WebPEncodeRGB(img.data.data(), img.width, img.height, img.width * 3,
                                    static_cast<float>(std::clamp(quality, 1, 100)), &raw);
  std::unique_ptr<uint8_t, void (*)(void*)> buffer(raw, WebPFree);
  if (size == 0) return Internal("WebP encoding failed");
  return std::vector<uint8_t>(buffer.get(), buffer.get() + size);
}

StatusOr<std::vector<uint8_t>> Encode(const Image& img, ImageFormat format, int quality) {
  switch (format) {
    case ImageFormat::kJpeg:
      return EncodeJpeg(img, quality);
    case ImageFormat::kPng:
      return EncodePng(img);
    case ImageFormat::kWebp:
      return EncodeWebp(img, quality);
    case ImageFormat::kUnknown:
      break;
  }
  return InvalidArgument("no image format to encode in");
}

ImageFormat FormatOfExtension(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (ext == ".jpg" || ext == ".jpeg" || ext == ".jpe") return ImageFormat::kJpeg;
  if (ext == ".png") return ImageFormat::kPng;
  if (ext == ".webp") return ImageFormat::kWebp;
  return ImageFormat::kUnknown;
}

}  // namespace mogserve::image
