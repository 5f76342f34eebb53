#include "pipeline/prepared_image.h"

#include "common/clock.h"

namespace mogserve::pipeline {

StatusOr<PreparedImage> PrepareImage(std::span<const uint8_t> bytes, int canvas_side,
                                     const image::DecodeOptions& decode_options) {
  PreparedImage out;
  const auto start = SteadyClock::now();
  image::DecodeOptions options = decode_options;
  options.min_long_side_px = canvas_side;
  MOGSERVE_ASSIGN_OR_RETURN(image::DecodedImage decoded, image::Decode(bytes, options));
  out.timing.decode_ms = MillisecondsSince(start);

  const auto resize_start = SteadyClock::now();
  out.width = decoded.width;
  out.height = decoded.height;
  out.canvas = image::LetterboxInto(decoded.image, canvas_side, canvas_side, decoded.width,
                                    decoded.height, &out.letterbox);
  out.timing.preprocess_ms = MillisecondsSince(resize_start);
  return out;
}

}  // namespace mogserve::pipeline
