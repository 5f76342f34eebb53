#include "server/detect_request.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>

namespace mogserve::server {
namespace {

constexpr const char* kAllowedOptions = "score_threshold, max_faces, priority, timeout_ms, format";
constexpr const char* kAcceptedTypes =
    "image/jpeg, image/png, image/webp, application/octet-stream, multipart/form-data (fields "
    "'image'), application/json ({\"image\": \"<base64>\"})";

HttpError Error(int status, std::string code, std::string message) {
  return HttpError{status, std::move(code), std::move(message)};
}

HttpError BadParameter(std::string_view name, std::string_view value, std::string_view allowed) {
  return Error(
      422, "invalid_parameter",
      std::string(name) + ": '" + std::string(value) + "' is not allowed; " + std::string(allowed));
}

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

template <typename T>
std::optional<T> ParseNumber(std::string_view text) {
  text = Trim(text);
  T value{};
  if constexpr (std::is_floating_point_v<T>) {
    // from_chars for floats is in libstdc++ 11+, but strtof is locale-free enough for "0.5".
    std::string s(text);
    char* end = nullptr;
    value = std::strtof(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(value)) return std::nullopt;
    return value;
  } else {
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
    return value;
  }
}

// Applies one option; an error names it and says what is allowed.
std::optional<HttpError> ApplyOption(std::string_view name, std::string_view value,
                                     DetectParams& p) {
  if (name == "score_threshold") {
    auto v = ParseNumber<float>(value);
    if (!v || *v < 0.0f || *v > 1.0f) return BadParameter(name, value, "a number from 0 to 1");
    p.score_threshold = *v;
  } else if (name == "max_faces") {
    auto v = ParseNumber<int>(value);
    if (!v || *v < 1 || *v > 10000) return BadParameter(name, value, "an integer from 1 to 10000");
    p.max_faces = *v;
  } else if (name == "priority") {
    auto v = scheduler::ParsePriority(value);
    if (!v) return BadParameter(name, value, "one of interactive, api, bulk, stream");
    p.priority = *v;
  } else if (name == "timeout_ms") {
    auto v = ParseNumber<int64_t>(value);
    if (!v || *v < 1 || *v > 3'600'000) {
      return BadParameter(name, value, "an integer number of milliseconds from 1 to 3600000");
    }
    p.timeout_ms = *v;
  } else if (name == "format") {
    if (value != "json" && value != "modelscope") {
      return BadParameter(name, value, "json (default) or modelscope");
    }
    p.modelscope_format = value == "modelscope";
  } else {
    return Error(422, "invalid_parameter",
                 "unknown parameter '" + std::string(name) + "'; allowed: " + kAllowedOptions);
  }
  return std::nullopt;
}

std::optional<HttpError> AddImage(std::string name, std::string bytes, const RequestLimits& limits,
                                  DetectRequest& r) {
  if (static_cast<int>(r.images.size()) >= limits.max_images) {
    return Error(413, "too_many_images",
                 "more than " + std::to_string(limits.max_images) + " images in one request");
  }
  if (bytes.empty()) return Error(400, "invalid_image", name + ": the image is empty");
  r.images.push_back({std::move(name), std::move(bytes)});
  return std::nullopt;
}

std::optional<HttpError> ParseFormParts(const std::vector<FormPart>& parts,
                                        const RequestLimits& limits, DetectRequest& r) {
  for (const FormPart& part : parts) {
    if (part.name == "image" || part.name == "images" || part.name == "image[]") {
      std::string name = part.filename.empty() ? "image" : part.filename;
      if (auto e = AddImage(std::move(name), std::string(part.data), limits, r)) return e;
    } else if (auto e = ApplyOption(part.name, part.data, r.params)) {
      return e;
    }
  }
  r.many = r.images.size() > 1;
  return std::nullopt;
}

std::optional<HttpError> ParseJsonBody(std::string_view body, const RequestLimits& limits,
                                       DetectRequest& r) {
  const nlohmann::json doc = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Error(400, "bad_request", "the body is not valid JSON");
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

std::optional<std::string> DecodeBase64(std::string_view text) {
  if (text.rfind("data:", 0) == 0) {
    const size_t comma = text.find(',');
    if (comma == std::string_view::npos ||
        text.substr(0, comma).find(";base64") == std::string_view::npos) {
      return std::nullopt;
    }
    text.remove_prefix(comma + 1);
  }
  std::string out;
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
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  if (bits >= 6) return std::nullopt;  // a single leftover character cannot encode a byte
  return out;
}

ParsedDetectRequest ParseDetectRequest(std::string_view content_type, std::string_view body,
                                       const std::vector<FormPart>& parts,
                                       const std::multimap<std::string, std::string>& query,
                                       const RequestLimits& limits) {
  ParsedDetectRequest out;
  DetectRequest& r = out.request;
  for (const auto& [name, value] : query) {
    if (auto e = ApplyOption(name, value, r.params)) {
      out.error = std::move(e);
      return out;
    }
  }
  if (static_cast<int64_t>(body.size()) > limits.max_body_bytes) {
    out.error = Error(413, "payload_too_large",
                      "the body has " + std::to_string(body.size()) + " bytes; at most " +
                          std::to_string(limits.max_body_bytes) + " are accepted");
    return out;
  }
  const std::string media = Lower(Trim(content_type.substr(0, content_type.find(';'))));
  std::optional<HttpError> error;
  if (media == "image/jpeg" || media == "image/png" || media == "image/webp" ||
      media == "application/octet-stream" || media.empty()) {
    error = AddImage("image", std::string(body), limits, r);
  } else if (media == "multipart/form-data") {
    error = ParseFormParts(parts, limits, r);
  } else if (media == "application/json") {
    error = ParseJsonBody(body, limits, r);
  } else {
    std::string message = "content type '" + media + "' is not accepted; send " + kAcceptedTypes;
    if (media == "application/x-www-form-urlencoded") {
      message +=
          " (curl --data-binary sends form-urlencoded unless given -H 'Content-Type: "
          "image/jpeg')";
    }
    error = Error(415, "unsupported_media_type", std::move(message));
  }
  if (!error && r.images.empty()) {
    error =
        Error(400, "no_image", "the request carries no image; send " + std::string(kAcceptedTypes));
  }
  out.error = std::move(error);
  return out;
}

}  // namespace mogserve::server
