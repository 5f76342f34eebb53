#include "server/web_ui.h"

#include <gtest/gtest.h>

#include <string>

namespace mogserve::server {
namespace {

TEST(WebUiTest, EmbedsThePageItsScriptsAndTheChartLibrary) {
  for (const char* path :
       {"/", "/ui/index.html", "/ui/app.css", "/ui/js/main.js", "/ui/js/api.js", "/ui/favicon.svg",
        "/ui/vendor/uPlot.iife.min.js", "/ui/vendor/uPlot.min.css"}) {
    const EmbeddedAsset* asset = FindWebAsset(path);
    ASSERT_NE(asset, nullptr) << path;
    EXPECT_GT(asset->size_bytes, 0u) << path;
    EXPECT_EQ(std::string(asset->sha256).size(), 64u) << path;
  }
  EXPECT_EQ(FindWebAsset("/"), FindWebAsset("/ui/index.html"));
  EXPECT_EQ(FindWebAsset("/ui/nope.js"), nullptr);
  EXPECT_EQ(FindWebAsset("/v1/stats"), nullptr);
}

TEST(WebUiTest, ContentTypes) {
  EXPECT_EQ(WebContentType("/ui/index.html"), "text/html; charset=utf-8");
  EXPECT_EQ(WebContentType("/ui/js/main.js"), "text/javascript; charset=utf-8");
  EXPECT_EQ(WebContentType("/ui/app.css"), "text/css; charset=utf-8");
  EXPECT_EQ(WebContentType("/ui/favicon.svg"), "image/svg+xml");
  EXPECT_EQ(WebContentType("/ui/blob"), "application/octet-stream");
}

// The header a response carries, "" if none.
std::string HeaderOf(const http::HttpResponse& r, std::string_view name) {
  for (const auto& [n, v] : r.headers) {
    if (http::EqualsIgnoreCase(n, name)) return v;
  }
  return "";
}

http::HttpRequest Get(std::string path, http::HeaderList headers = {}) {
  http::HttpRequest r;
  r.method = "GET";
  r.path = std::move(path);
  r.headers = std::move(headers);
  return r;
}

TEST(WebUiTest, ServesWithCachingHeadersAndRevalidates) {
  const http::HttpResponse page = WebAssetResponse(Get("/"));
  EXPECT_EQ(page.status, 200);
  EXPECT_EQ(page.content_type, "text/html; charset=utf-8");
  EXPECT_EQ(HeaderOf(page, "Cache-Control"), "no-cache");
  EXPECT_NE(HeaderOf(page, "Content-Security-Policy").find("default-src 'self'"),
            std::string::npos);
  EXPECT_NE(page.body.find("<!doctype html>"), std::string::npos);
  const std::string etag = HeaderOf(page, "ETag");
  ASSERT_FALSE(etag.empty());

  const http::HttpResponse again = WebAssetResponse(Get("/", {{"if-none-match", etag}}));
  EXPECT_EQ(again.status, 304);
  EXPECT_TRUE(again.body.empty());

  const http::HttpResponse script = WebAssetResponse(Get("/ui/js/main.js"));
  EXPECT_EQ(script.status, 200);
  EXPECT_EQ(script.content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(HeaderOf(script, "X-Content-Type-Options"), "nosniff");
  EXPECT_EQ(script.body.size(), FindWebAsset("/ui/js/main.js")->size_bytes);

  const http::HttpResponse missing = WebAssetResponse(Get("/ui/nope.js"));
  EXPECT_EQ(missing.status, 404);
  EXPECT_NE(missing.body.find("not_found"), std::string::npos);
}

}  // namespace
}  // namespace mogserve::server
