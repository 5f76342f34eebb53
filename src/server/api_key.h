// The API key check shared by the HTTP API (the Authorization header) and the gRPC API (the
// `authorization` metadata): "Bearer <key>", the scheme in any case (RFC 9110 §11.1), the key
// compared in time independent of where it differs.
#pragma once

#include <string_view>

namespace mogserve::server {

// True when `authorization` is "Bearer <key>" (spaces around the key ignored) and the key is
// `key`.
bool BearerKeyMatches(std::string_view authorization, std::string_view key);

}  // namespace mogserve::server
