#include "server/detect_request.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "common/text.h"
#include "options/option_table.h"
#include "server/multipart_form.h"

namespace mogserve::server {
namespace {

constexpr const char* kAcceptedTypes =
    "image/jpeg, image/png, image/webp, application/octet-stream, multipart/form-data (fields "
    "'image'), application/json ({\"image\": \"<base64>\"})";

HttpError Error(int status, std::string code, std::string message) {
  return HttpError{status, std::move(code), std::move(message)};
}

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// "image/jpeg" from "Image/JPEG; charset=binary".
std::string MediaType(std::string_view content_type) {
  return Lower(Trim(content_type.substr(0, content_type.find(';'))));
}

// Bodies that are the image itself (octet-stream and none: the decoder sniffs the format).
bool IsRawImageType(const std::string& media) {
  return media == "image/jpeg" || media == "image/png" || media == "image/webp" ||
         media == "application/octet-stream" || media.empty();
}

// Applies one option; an error names it and says what is allowed.
std::optional<HttpError> ApplyOption(std::string_view name, std::string_view value,
                                     DetectParams& p, unsigned surface = opt::kHttp) {
  std::string error = opt::ApplyRequestOption(name, value, &p, surface);
  if (error.empty()) return std::nullopt;
  return Error(422, "invalid_parameter", std::move(error));
}

std::optional<HttpError> AddImage(std::string name, std::vector<uint8_t> bytes,
                                  const RequestLimits& limits, DetectRequest& r) {
  if (static_cast<int>(r.images.size()) >= limits.max_images) {
    return Error(413, "too_many_images",
                 "more than " + std::to_string(limits.max_images) + " images in one request");
  }
  if (bytes.empty()) return Error(400, "invalid_image", name + ": the image is empty");
  r.images.push_back({std::move(name), std::move(bytes)});
  return std::nullopt;
}

std::optional<HttpError> ParseFormParts(std::string_view content_type, std::string_view body,
                                        const RequestLimits& limits, DetectRequest& r) {
  std::vector<FormPart> parts;
  if (auto e = ParseMultipartForm(content_type, body, limits.max_form_parts, &parts)) return e;
  for (const FormPart& part : parts) {
    if (part.name == "image" || part.name == "images" || part.name == "image[]") {
      std::string name = part.filename.empty() ? "image" : part.filename;
      if (auto e = AddImage(std::move(name), ImageBytes(part.data), limits, r)) return e;
    } else if (auto e = ApplyOption(part.name, part.data, r.params)) {
      return e;
    }
  }
  r.many = r.images.size() > 1;
  return std::nullopt;
}

// Builds the DOM like nlohmann's own parser, but stops at max_depth: a body nested deeper is
// refused while it is read, so no later step (serialising a value back, destroying it) can
// recurse deeply on client data.
class DepthLimitedSax : public nlohmann::json_sax<nlohmann::json> {
 public:
  DepthLimitedSax(nlohmann::json* root, int max_depth)
      : dom_(*root, false), max_depth_(max_depth) {}
  bool too_deep() const { return too_deep_; }

  bool null() override { return dom_.null(); }
  bool boolean(bool v) override { return dom_.boolean(v); }
  bool number_integer(number_integer_t v) override { return dom_.number_integer(v); }
  bool number_unsigned(number_unsigned_t v) override { return dom_.number_unsigned(v); }
  bool number_float(number_float_t v, const string_t& s) override {
    return dom_.number_float(v, s);
  }
  bool string(string_t& v) override { return dom_.string(v); }
  bool binary(binary_t& v) override { return dom_.binary(v); }
  bool start_object(std::size_t n) override { return Enter() && dom_.start_object(n); }
  bool key(string_t& v) override { return dom_.key(v); }
  bool end_object() override { return --depth_, dom_.end_object(); }
  bool start_array(std::size_t n) override { return Enter() && dom_.start_array(n); }
  bool end_array() override { return --depth_, dom_.end_array(); }
  bool parse_error(std::size_t at, const std::string& token,
                   const nlohmann::detail::exception& e) override {
    return dom_.parse_error(at, token, e);
  }

 private:
  bool Enter() {
    if (++depth_ <= max_depth_) return true;
    too_deep_ = true;
    return false;
  }
  nlohmann::detail::json_sax_dom_parser<nlohmann::json> dom_;
  const int max_depth_;
  int depth_ = 0;
  bool too_deep_ = false;
};

std::optional<HttpError> ParseJsonBody(std::string_view body, const RequestLimits& limits,
                                       DetectRequest& r) {
  nlohmann::json doc;
  if (auto e = ParseJsonLimited(body, limits.max_json_depth, &doc)) {
    if (e->code == "json_too_deep") e->message += "; send {\"image\": \"<base64>\"}";
    return e;
  }
  if (!doc.is_object()) return Error(400, "bad_request", "the JSON body must be an object");
  auto add_base64 = [&](const nlohmann::json& value, const std::string& field) {
    if (!value.is_string()) {
      return std::optional<HttpError>(
          Error(400, "bad_request", field + " must be a base64 string"));
    }
    auto bytes = DecodeBase64(value.get_ref<const std::string&>());
    if (!bytes) {
      return std::optional<HttpError>(Error(400, "invalid_image", field + " is not valid base64"));
    }
    return AddImage(field, std::move(*bytes), limits, r);
  };
  for (const auto& [key, value] : doc.items()) {
    if (key == "image") {
      if (auto e = add_base64(value, "image")) return e;
    } else if (key == "images") {
      if (!value.is_array()) return Error(400, "bad_request", "images must be an array");
      for (size_t i = 0; i < value.size(); ++i) {
        if (auto e = add_base64(value[i], "images[" + std::to_string(i) + "]")) return e;
      }
      r.many = true;
    } else {
      const std::string text = value.is_string() ? value.get<std::string>() : value.dump();
      if (auto e = ApplyOption(key, text, r.params)) return e;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<HttpError> ParseJsonLimited(std::string_view body, int max_depth,
                                          nlohmann::json* doc) {
  DepthLimitedSax sax(doc, max_depth);
  const bool parsed = nlohmann::json::sax_parse(body, &sax);
  if (sax.too_deep()) {
    return Error(400, "json_too_deep",
                 "the JSON body nests deeper than " + std::to_string(max_depth) +
                     " levels (the limit, max_json_depth)");
  }
  if (!parsed) return Error(400, "bad_request", "the body is not valid JSON");
  return std::nullopt;
}

std::optional<std::vector<uint8_t>> DecodeBase64(std::string_view text) {
  if (text.rfind("data:", 0) == 0) {
    const size_t comma = text.find(',');
    if (comma == std::string_view::npos ||
        text.substr(0, comma).find(";base64") == std::string_view::npos) {
      return std::nullopt;
    }
    text.remove_prefix(comma + 1);
  }
  std::vector<uint8_t> out;
  out.reserve(text.size() / 4 * 3);
  uint32_t acc = 0;
  int bits = 0;
  bool padding = false;
  for (char c : text) {
    int v;
    if (c >= 'A' && c <= 'Z') {
      v = c - 'A';
    } else if (c >= 'a' && c <= 'z') {
      v = c - 'a' + 26;
    } else if (c >= '0' && c <= '9') {
      v = c - '0' + 52;
    } else if (c == '+' || c == '-') {
      v = 62;  // '-' : the URL-safe alphabet
    } else if (c == '/' || c == '_') {
      v = 63;
    } else if (c == '=') {
      padding = true;
      continue;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      continue;
    } else {
      return std::nullopt;
    }
    if (padding) return std::nullopt;  // data after '='
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<uint8_t>((acc >> bits) & 0xFF));
    }
  }
  if (bits >= 6) return std::nullopt;  // a single leftover character cannot encode a byte
  return out;
}

std::optional<HttpError> CheckDetectContentType(std::string_view content_type) {
  const std::string media = MediaType(content_type);
  if (IsRawImageType(media) || media == "multipart/form-data" || media == "application/json") {
    return std::nullopt;
  }
  std::string message = "content type '" + media + "' is not accepted; send " + kAcceptedTypes;
  if (media == "application/x-www-form-urlencoded") {
    message +=
        ". curl --data-binary sends form-urlencoded unless told otherwise: add -H "
        "'Content-Type: image/jpeg' (or image/png, image/webp)";
  }
  return Error(415, "unsupported_media_type", std::move(message));
}

std::optional<HttpError> CheckCropSize(const DetectParams& params) {
  if (!params.crop_size) return std::nullopt;
  if (params.modelscope_format()) {
    return Error(422, "invalid_parameter",
                 "crop_size: not with format=modelscope, whose answer has no place for crops");
  }
  return std::nullopt;  // the size: the option table's rule
}

std::string EncodeBase64(std::span<const uint8_t> bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t v = uint32_t{bytes[i]} << 16 | uint32_t{bytes[i + 1]} << 8 | bytes[i + 2];
    for (int shift = 18; shift >= 0; shift -= 6) out += kAlphabet[(v >> shift) & 63];
  }
  if (const size_t rest = bytes.size() - i; rest > 0) {
    const uint32_t v = uint32_t{bytes[i]} << 16 | (rest == 2 ? uint32_t{bytes[i + 1]} << 8 : 0);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += rest == 2 ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::optional<HttpError> ParseDetectOptions(const std::multimap<std::string, std::string>& query,
                                            DetectParams* params, unsigned surface) {
  for (const auto& [name, value] : query) {
    if (auto e = ApplyOption(name, value, *params, surface)) return e;
  }
  return std::nullopt;
}

ParsedDetectRequest ParseDetectRequest(std::string_view content_type, std::string body,
                                       const std::multimap<std::string, std::string>& query,
                                       const RequestLimits& limits) {
  ParsedDetectRequest out;
  DetectRequest& r = out.request;
  if ((out.error = ParseDetectOptions(query, &r.params, opt::kHttp))) return out;
  const std::string media = MediaType(content_type);
  std::optional<HttpError> error = CheckDetectContentType(content_type);
  if (!error) {
    if (IsRawImageType(media)) {
      std::vector<uint8_t> bytes = ImageBytes(body);
      std::string().swap(body);  // the picture is in `bytes` now: hold it once
      error = AddImage("image", std::move(bytes), limits, r);
    } else if (media == "multipart/form-data") {
      error = ParseFormParts(content_type, body, limits, r);
    } else {
      error = ParseJsonBody(body, limits, r);
    }
  }
  if (!error) error = CheckCropSize(r.params);  // from the query, a form field or a JSON member
  if (!error && r.images.empty()) {
    error =
        Error(400, "no_image", "the request carries no image; send " + std::string(kAcceptedTypes));
  }
  out.error = std::move(error);
  return out;
}

}  // namespace mogserve::server
