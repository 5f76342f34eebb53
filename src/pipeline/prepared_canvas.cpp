#include "pipeline/prepared_canvas.h"

#include <cstring>

#include "common/clock.h"
#include "common/file_util.h"

namespace mogserve::pipeline {

void RenderInto(const image::Image& src, const image::Letterbox& box, uint8_t* canvas) {
  image::Image resized;
  const image::Image* content = &src;
  if (src.width != box.content_width || src.height != box.content_height) {
    resized = image::ScaleToContent(src, box);
    content = &resized;
  }
  const size_t row_bytes = static_cast<size_t>(box.canvas_width) * 3;
  const size_t content_bytes = static_cast<size_t>(box.content_width) * 3;
  for (int y = 0; y < box.content_height; ++y) {
    std::memcpy(canvas + y * row_bytes, content->pixel(0, y), content_bytes);
  }
  ZeroPadding(box, canvas);
}

void ZeroPadding(const image::Letterbox& box, uint8_t* canvas) {
  const size_t row_bytes = static_cast<size_t>(box.canvas_width) * 3;
  const size_t content_bytes = static_cast<size_t>(box.content_width) * 3;
  if (content_bytes < row_bytes) {
    for (int y = 0; y < box.content_height; ++y) {
      std::memset(canvas + y * row_bytes + content_bytes, 0, row_bytes - content_bytes);
    }
  }
  std::memset(canvas + box.content_height * row_bytes, 0,
              (box.canvas_height - box.content_height) * row_bytes);
}

StatusOr<PreparedCanvas> PrepareCanvas(ImageInput input, const ShapeBuckets& buckets,
                                       const image::DecodeOptions& decode, CanvasPool& pool) {
  PreparedCanvas out;
  const auto start = SteadyClock::now();
  image::Image pixels;
  if (!input.decoded.empty()) {
    pixels = std::move(input.decoded);
    out.width = pixels.width;
    out.height = pixels.height;
  } else {
    if (input.bytes.empty() && !input.path.empty()) {
      MOGSERVE_ASSIGN_OR_RETURN(input.bytes, ReadFileBytes(input.path));
    }
    image::DecodeOptions options = decode;
    options.min_long_side_px = buckets.MinDecodeLongSide();
    MOGSERVE_ASSIGN_OR_RETURN(image::DecodedImage decoded, image::Decode(input.bytes, options));
    out.width = decoded.width;
    out.height = decoded.height;
    pixels = std::move(decoded.image);
    out.decode_ms = MillisecondsSince(start);
  }
  const auto resize_start = SteadyClock::now();
  const ShapeBuckets::Placement placement = buckets.Place(out.width, out.height);
  out.bucket = placement.bucket;
  out.letterbox = placement.letterbox;
  out.canvas = pool.Acquire(int64_t{out.letterbox.canvas_width} * out.letterbox.canvas_height * 3);
  RenderInto(pixels, out.letterbox, out.canvas.data());
  out.preprocess_ms = MillisecondsSince(resize_start);
  return out;
}

}  // namespace mogserve::pipeline
