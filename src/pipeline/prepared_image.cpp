#include "pipeline/prepared_image.h"

#include "common/clock.h"

namespace mogserve::pipeline {

StatusOr<PreparedImage> PrepareImage(std::span<const uint8_t> bytes, const ShapeBuckets& buckets,
                                     const image::DecodeOptions& decode_options) {
  PreparedImage out;
  const auto start = SteadyClock::now();
  image::DecodeOptions options = decode_options;
  options.min_long_side_px = buckets.MinDecodeLongSide();
  MOGSERVE_ASSIGN_OR_RETURN(image::DecodedImage decoded, image::Decode(bytes, options));
  out.timing.decode_ms = MillisecondsSince(start);

  const auto resize_start = SteadyClock::now();
  out.width = decoded.width;
  out.height = decoded.height;
  const ShapeBuckets::Placement placement = buckets.Place(decoded.width, decoded.height);
  out.bucket = placement.bucket;
  out.letterbox = placement.letterbox;
  out.canvas = image::RenderLetterbox(decoded.image, out.letterbox);
  out.timing.preprocess_ms = MillisecondsSince(resize_start);
  return out;
}

}  // namespace mogserve::pipeline
