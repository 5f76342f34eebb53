#include "pipeline/prepared_canvas.h"

#include "common/clock.h"
#include "common/file_util.h"

namespace mogserve::pipeline {

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
  image::RenderLetterboxInto(pixels, out.letterbox, out.canvas.data());
  out.preprocess_ms = MillisecondsSince(resize_start);
  return out;
}

}  // namespace mogserve::pipeline
