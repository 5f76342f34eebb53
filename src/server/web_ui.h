// The web UI: static files embedded in the binary at build time (cmake/web_ui.cmake turns web/
// and the chart library from node_modules/ into byte arrays) and served by the HTTP server.
//
//   GET /          the UI's page (web/index.html)
//   GET /ui/<path> its scripts, styles and icons; /ui/vendor/ holds third-party code
//
// Every response carries an ETag (the SHA-256 of the bytes) and `Cache-Control: no-cache`, so a
// browser revalidates and gets 304 until the binary changes. The page is sent with a
// Content-Security-Policy that allows nothing but this origin (no CDN, no inline script).
// These routes need no API key: the key guards /v1/*, and the page asks the user for it.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

#include "server/http/http_message.h"

namespace mogserve::server {

struct EmbeddedAsset {
  const char* path;  // URL path, e.g. "/ui/js/main.js"
  const unsigned char* data;
  size_t size_bytes;
  const char* sha256;  // lowercase hex
};

// All embedded files; defined in the generated web_assets.cpp. Static storage, thread-safe.
std::span<const EmbeddedAsset> EmbeddedWebAssets();

// The asset served at `path` ("/" is the page itself), or nullptr.
const EmbeddedAsset* FindWebAsset(std::string_view path);

// The Content-Type for a path, from its extension ("application/octet-stream" if unknown).
std::string_view WebContentType(std::string_view path);

// The answer to GET `request.path` (/ or /ui/...): the asset with its caching and security
// headers, 304 when If-None-Match names its ETag, 404 when there is no such asset.
http::HttpResponse WebAssetResponse(const http::HttpRequest& request);

}  // namespace mogserve::server
