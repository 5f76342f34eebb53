// The API key check shared by the HTTP API (the Authorization header) and the gRPC API (the
// `authorization` metadata): "Bearer <key>", the scheme in any case (RFC 9110 §11.1), the key
// compared in time independent of where it differs.
#pragma once

#include <string>
#include <string_view>

namespace mogserve::server {

// True when `authorization` is "Bearer <key>" (spaces around the key ignored) and the key is
// `key`.
bool BearerKeyMatches(std::string_view authorization, std::string_view key);

// The scheduler's client of a request (fairness, latest_only), the same for HTTP and gRPC: its
// peer address, or one client for every holder of the server's API key.
std::string ClientOf(std::string_view api_key, std::string peer_address);

}  // namespace mogserve::server
