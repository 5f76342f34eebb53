// libFuzzer target over the path an untrusted HTTP request takes before it reaches the model:
// POST /v1/detect parsing (content type, multipart, JSON, base64, options), then decoding each
// image (JPEG / PNG / WebP, EXIF) and placing it into a canvas. Built with clang under ASan and
// UBSan by scripts/test.sh (MOGSERVE_FUZZ=ON), seeded from tests/fuzz/make_seed_corpus.cpp.
//
// Input layout: byte 0 picks the content type, byte 1 the query options; the rest is the body.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "image/decode.h"
#include "pipeline/shape_buckets.h"
#include "server/detect_request.h"

namespace {

constexpr const char* kContentTypes[] = {"image/jpeg",
                                         "image/png",
                                         "image/webp",
                                         "application/octet-stream",
                                         "multipart/form-data; boundary=fuzzb",
                                         "application/json",
                                         "text/plain",
                                         ""};

using Query = std::multimap<std::string, std::string>;
const Query kQueries[] = {
    {},
    {{"score_threshold", "0.3"}, {"max_faces", "5"}},
    {{"priority", "stream"}, {"timeout_ms", "100"}, {"format", "modelscope"}},
    {{"score_threshold", "2"}},
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const char* type = kContentTypes[data[0] % std::size(kContentTypes)];
  const Query& query = kQueries[data[1] % std::size(kQueries)];
  const std::string_view body(reinterpret_cast<const char*>(data + 2), size - 2);
  mogserve::server::RequestLimits limits;
  limits.max_images = 4;
  // Multipart bodies reach the parser split by the HTTP library: here, fields separated by
  // "\n--\n", each "name\n" followed by its data.
  std::vector<mogserve::server::FormPart> parts;
  std::string_view rest = body;
  if (std::string_view(type).rfind("multipart/", 0) == 0) {
    while (!rest.empty()) {
      const size_t end = rest.find("\n--\n");
      std::string_view field = rest.substr(0, end);
      rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 4);
      const size_t eol = field.find('\n');
      if (eol == std::string_view::npos) continue;
      parts.push_back({std::string(field.substr(0, eol)), "", field.substr(eol + 1)});
    }
  }
  const auto parsed = mogserve::server::ParseDetectRequest(type, body, parts, query, limits);
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
