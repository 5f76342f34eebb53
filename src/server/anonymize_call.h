// POST /v1/anonymize: the pictures of a detect request sent back with their faces hidden
// (image/anonymize.h). The request is /v1/detect's (body, options, limits, errors) plus three
// query parameters of its own: method (blur, pixelate, fill), shape (ellipse, box) and box_scale
// (1 to 3).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "image/anonymize.h"
#include "pipeline/pipeline_observer.h"
#include "server/detect_request.h"
#include "server/http/http_message.h"
#include "server/http_error.h"

namespace mogserve::server {

// Takes anonymize's own parameters out of `query` (what is left is the detect options); 422
// naming the parameter and what is allowed.
std::variant<image::AnonymizeOptions, HttpError> TakeAnonymizeOptions(
    std::multimap<std::string, std::string>& query);

// The answer: one picture → the picture in its own format (Content-Type image/jpeg, image/png or
// image/webp; X-Faces-Covered: the count), or its error as /v1/detect would give it; several →
// multipart/mixed, one part per picture in order (its name in Content-Disposition, an error as a
// JSON part with X-Status). `pictures`: the request's encoded pictures, in order.
http::HttpResponse AnonymizeResponse(const DetectRequest& request,
                                     const std::vector<pipeline::RequestResult>& results,
                                     const std::vector<std::vector<uint8_t>>& pictures,
                                     const image::AnonymizeOptions& options);

}  // namespace mogserve::server
