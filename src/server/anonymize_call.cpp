#include "server/anonymize_call.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "image/decode.h"
#include "image/encode.h"
#include "scheduler/outcome.h"
#include "server/detect_call.h"
#include "server/routes.h"

namespace mogserve::server {
namespace {

constexpr int kQuality = 95;  // JPEG and WebP answers: close to the upload

const char* MediaType(image::ImageFormat format) {
  switch (format) {
    case image::ImageFormat::kPng:
      return "image/png";
    case image::ImageFormat::kWebp:
      return "image/webp";
    default:
      return "image/jpeg";
  }
}

// Removes `name` from `query`, returning its last value (nullopt when absent).
std::optional<std::string> Take(std::multimap<std::string, std::string>& query,
                                const std::string& name) {
  std::optional<std::string> value;
  for (auto it = query.find(name); it != query.end() && it->first == name; it = query.erase(it)) {
    value = it->second;
  }
  return value;
}

// A part's file name as a quoted-string: client text, so quotes, backslashes and control
// characters become '_' (nothing can end the header early).
std::string SafeName(const std::string& name) {
  std::string out = name.substr(0, 200);
  for (char& c : out) {
    if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '_';
  }
  return out;
}

HttpError Invalid(const std::string& message) {
  return {422, "invalid_parameter", message};
}

// One picture anonymized: its bytes in its own format, or the error of its detection.
struct Answer {
  int status = 200;
  std::string content_type;
  std::string body;
  size_t faces = 0;
};

Answer AnswerOne(const pipeline::RequestResult& r, const std::vector<uint8_t>& picture,
                 const image::AnonymizeOptions& options) {
  if (r.outcome != scheduler::Outcome::kDone) {
    return {HttpStatusOf(r).first, "application/json", ResultBody(r, false).dump(), 0};
  }
  StatusOr<image::DecodedImage> decoded = image::Decode(picture);
  StatusOr<std::vector<uint8_t>> encoded = decoded.status();
  if (decoded.ok()) {
    image::AnonymizeFaces(decoded->image, r.result.faces, options);
    encoded = image::Encode(decoded->image, decoded->format, kQuality);
  }
  if (!encoded.ok()) {
    const nlohmann::json error = {
        {"error", {{"code", "internal"}, {"message", encoded.status().message()}}}};
    return {500, "application/json", error.dump(), 0};
  }
  return {200, MediaType(decoded->format), std::string(encoded->begin(), encoded->end()),
          r.result.faces.size()};
}

}  // namespace

std::variant<image::AnonymizeOptions, HttpError> TakeAnonymizeOptions(
    std::multimap<std::string, std::string>& query) {
  image::AnonymizeOptions o;
  if (std::optional<std::string> method = Take(query, "method")) {
    auto parsed = image::ParseAnonymizeMethod("method", *method);
    if (!parsed.ok()) return Invalid(parsed.status().message());
    o.method = *parsed;
  }
  if (std::optional<std::string> shape = Take(query, "shape")) {
    auto parsed = image::ParseAnonymizeShape("shape", *shape);
    if (!parsed.ok()) return Invalid(parsed.status().message());
    o.shape = *parsed;
  }
  if (std::optional<std::string> scale = Take(query, "box_scale")) {
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(scale->c_str(), &end);
    if (scale->empty() || *end != '\0' || errno != 0 || !(v >= 1 && v <= 3)) {
      return Invalid("box_scale: '" + scale->substr(0, 32) +
                     "' is not allowed; a number from 1 to 3 (the face's box scaled about its "
                     "centre)");
    }
    o.box_scale = static_cast<float>(v);
  }
  return o;
}

http::HttpResponse AnonymizeResponse(const DetectRequest& request,
                                     const std::vector<pipeline::RequestResult>& results,
                                     const std::vector<std::vector<uint8_t>>& pictures,
                                     const image::AnonymizeOptions& options) {
  if (!request.many) {
    Answer a = AnswerOne(results[0], pictures[0], options);
    http::HttpResponse r;
    r.status = a.status;
    r.content_type = std::move(a.content_type);
    r.body = std::move(a.body);
    if (a.status == 200) r.SetHeader("X-Faces-Covered", std::to_string(a.faces));
    if (a.status == 503) r.SetHeader("Retry-After", "1");
    return r;
  }
  // A boundary no picture holds: checked against every part, lengthened until absent.
  std::vector<Answer> answers;
  for (size_t i = 0; i < results.size(); ++i) {
    answers.push_back(AnswerOne(results[i], pictures[i], options));
  }
  std::string boundary = "mogserve-anonymized";
  for (bool clash = true; clash;) {
    clash = false;
    for (const Answer& a : answers) clash = clash || a.body.find(boundary) != std::string::npos;
    if (clash) boundary += "-x";
  }
  http::HttpResponse r;
  r.content_type = "multipart/mixed; boundary=" + boundary;
  for (size_t i = 0; i < answers.size(); ++i) {
    r.body += "--" + boundary + "\r\nContent-Type: " + answers[i].content_type +
              "\r\nContent-Disposition: attachment; name=\"image\"; filename=\"" +
              SafeName(request.images[i].name) +
              "\"\r\nX-Status: " + std::to_string(answers[i].status) +
              "\r\nX-Faces-Covered: " + std::to_string(answers[i].faces) + "\r\n\r\n" +
              answers[i].body + "\r\n";
  }
  r.body += "--" + boundary + "--\r\n";
  return r;
}

}  // namespace mogserve::server
