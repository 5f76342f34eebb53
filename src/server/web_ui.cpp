#include "server/web_ui.h"

#include <array>
#include <string>
#include <utility>

namespace mogserve::server {
namespace {

constexpr std::string_view kIndexPath = "/ui/index.html";

// Only this origin: the UI bundles everything it needs. `style-src 'unsafe-inline'` because the
// chart library positions its elements with inline styles; scripts stay strictly 'self'.
constexpr const char* kPagePolicy =
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' blob: data:; connect-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'";

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// True when an If-None-Match header names `etag` (a list, or "*").
bool EtagMatches(std::string_view if_none_match, const std::string& etag) {
  if (if_none_match.empty()) return false;
  if (if_none_match == "*") return true;
  return if_none_match.find(etag) != std::string::npos;
}

http::HttpResponse Serve(const EmbeddedAsset& asset, const http::HttpRequest& req) {
  http::HttpResponse res;
  // Appended piecewise: `"\"" + std::string(...)` trips GCC 12's false -Wrestrict warning.
  std::string etag = "\"";
  etag.append(asset.sha256, 32);  // 128 bits of the SHA-256 are plenty for an ETag
  etag += '"';
  res.SetHeader("ETag", etag);
  // no-cache = store, but revalidate: asset names carry no version, and a 304 costs little.
  res.SetHeader("Cache-Control", "no-cache");
  res.SetHeader("X-Content-Type-Options", "nosniff");
  res.SetHeader("Referrer-Policy", "no-referrer");
  if (EndsWith(asset.path, ".html")) res.SetHeader("Content-Security-Policy", kPagePolicy);
  if (EtagMatches(req.Header("If-None-Match"), etag)) {
    res.status = 304;
    return res;
  }
  res.content_type = WebContentType(asset.path);
  res.body.assign(reinterpret_cast<const char*>(asset.data), asset.size_bytes);
  return res;
}

}  // namespace

const EmbeddedAsset* FindWebAsset(std::string_view path) {
  if (path == "/" || path == "/ui" || path == "/ui/") path = kIndexPath;
  for (const EmbeddedAsset& asset : EmbeddedWebAssets()) {
    if (asset.path == path) return &asset;
  }
  return nullptr;
}

std::string_view WebContentType(std::string_view path) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 10> kTypes = {{
      {".html", "text/html; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".mjs", "text/javascript; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".svg", "image/svg+xml"},
      {".png", "image/png"},
      {".ico", "image/x-icon"},
      {".json", "application/json"},
      {".txt", "text/plain; charset=utf-8"},
      {".webmanifest", "application/manifest+json"},
  }};
  for (const auto& [ext, type] : kTypes) {
    if (EndsWith(path, ext)) return type;
  }
  return "application/octet-stream";
}

http::HttpResponse WebAssetResponse(const http::HttpRequest& request) {
  const EmbeddedAsset* asset = FindWebAsset(request.path);
  if (asset == nullptr) return http::JsonError(404, "not_found", "no such file: " + request.path);
  return Serve(*asset, request);
}

}  // namespace mogserve::server
