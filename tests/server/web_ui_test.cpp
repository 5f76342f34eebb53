#include "server/web_ui.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <string>
#include <thread>

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

TEST(WebUiTest, ServesWithCachingHeadersAndRevalidates) {
  httplib::Server server;
  InstallWebUi(server);
  const int port = server.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  // The socket listens from bind on; requests wait for the accept loop.
  std::thread thread([&] { server.listen_after_bind(); });

  httplib::Client client("127.0.0.1", port);
  auto page = client.Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_EQ(page->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_EQ(page->get_header_value("Cache-Control"), "no-cache");
  EXPECT_NE(page->get_header_value("Content-Security-Policy").find("default-src 'self'"),
            std::string::npos);
  EXPECT_NE(page->body.find("<!doctype html>"), std::string::npos);
  const std::string etag = page->get_header_value("ETag");
  ASSERT_FALSE(etag.empty());

  auto again = client.Get("/", {{"If-None-Match", etag}});
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 304);
  EXPECT_TRUE(again->body.empty());

  auto script = client.Get("/ui/js/main.js");
  ASSERT_TRUE(script);
  EXPECT_EQ(script->status, 200);
  EXPECT_EQ(script->get_header_value("Content-Type"), "text/javascript; charset=utf-8");
  EXPECT_EQ(script->get_header_value("X-Content-Type-Options"), "nosniff");
  EXPECT_EQ(script->body.size(), FindWebAsset("/ui/js/main.js")->size_bytes);

  auto missing = client.Get("/ui/nope.js");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);

  server.stop();
  thread.join();
}

}  // namespace
}  // namespace mogserve::server
