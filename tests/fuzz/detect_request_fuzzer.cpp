// libFuzzer target over the path an untrusted HTTP request takes before it reaches the model:
// the HTTP/1.1 request parser (server/http/request_parser.h: framing, limits, chunked bodies),
// then POST /v1/detect parsing (content type, multipart, JSON, base64, options) and, on the same
// body, the Open Inference Protocol's /infer parsing (server/oip.h: JSON and binary tensors,
// with the Inference-Header-Content-Length header), then decoding each image (JPEG / PNG / WebP, EXIF) and placing it into a canvas. Built with clang under ASan
// and UBSan by scripts/test.sh (MOGSERVE_FUZZ=ON), seeded from tests/fuzz/make_seed_corpus.cpp.
//
// Input layout: byte 0 says where to split the rest (the bytes of one HTTP request, and maybe
// more after it) into two reads, as a socket might deliver them.
#include <boost/beast/http/error.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "image/decode.h"
#include "pipeline/shape_buckets.h"
#include "server/detect_request.h"
#include "server/oip.h"
#include "server/http/request_parser.h"

namespace {

using mogserve::server::http::HttpLimits;
using mogserve::server::http::RequestParser;

// Feeds `bytes` to the parser as Beast's read loop does: what it does not consume stays for
// the next call. False when parsing failed or needs more than `bytes`.
bool Feed(RequestParser& parser, std::string& pending, std::string_view bytes) {
  pending.append(bytes);
  while (!pending.empty() && !parser.is_done()) {
    boost::beast::error_code ec;
    const size_t used = parser.put(boost::asio::buffer(pending.data(), pending.size()), ec);
    pending.erase(0, used);
    if (ec == boost::beast::http::error::need_more) return true;
    if (ec) {
      (void)parser.Refusal(ec, pending);  // the error response must build for any input
      return false;
    }
    if (used == 0) break;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string_view http(reinterpret_cast<const char*>(data + 1), size - 1);
  const size_t split = http.size() * data[0] / 256;
  HttpLimits limits;
  limits.max_header_bytes = 4096;
  limits.max_header_fields = 32;
  limits.max_target_bytes = 1024;
  limits.max_body_bytes = 1 << 20;
  mogserve::server::http::BodyBudget budget(1 << 20);
  RequestParser parser(limits, &budget);
  parser.eager(true);
  std::string pending;
  if (!Feed(parser, pending, http.substr(0, split)) || !Feed(parser, pending, http.substr(split))) {
    return 0;
  }
  if (!parser.is_done()) return 0;
  mogserve::server::http::HttpRequest& request = parser.request();
  mogserve::server::RequestLimits request_limits;
  request_limits.max_images = 4;
  (void)mogserve::server::oip::ParseInferRequest(
      request.Header("Inference-Header-Content-Length"), request.body, request_limits);
  const auto parsed = mogserve::server::ParseDetectRequest(
      request.Header("Content-Type"), std::move(request.body), request.query, request_limits);
  if (parsed.error) return 0;
  static const auto buckets = *mogserve::pipeline::ShapeBuckets::Target(64, 32);
  mogserve::image::DecodeOptions options;
  options.max_pixels = 1 << 22;  // keep each run fast; the limit path itself is exercised too
  for (const auto& image : parsed.request.images) {
    const auto* bytes = reinterpret_cast<const uint8_t*>(image.bytes.data());
    auto decoded = mogserve::image::Decode({bytes, image.bytes.size()}, options);
    if (!decoded.ok()) continue;
    const auto placement = buckets.Place(decoded->width, decoded->height);
    const auto canvas = mogserve::image::RenderLetterbox(decoded->image, placement.letterbox);
    if (canvas.width != buckets.shape(placement.bucket).width) __builtin_trap();
  }
  return 0;
}
