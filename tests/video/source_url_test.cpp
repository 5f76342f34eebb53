#include "video/source_url.h"

#include <gtest/gtest.h>

#include <map>

namespace mogserve::video {
namespace {

TEST(SourceUrl, SchemesAndPaths) {
  EXPECT_EQ(*ParseSourceScheme("clip.mp4"), SourceScheme::kFile);
  EXPECT_EQ(*ParseSourceScheme("/data/a:b/clip.mp4"), SourceScheme::kFile);
  EXPECT_EQ(*ParseSourceScheme("file:///data/clip.mp4"), SourceScheme::kFile);
  EXPECT_EQ(*ParseSourceScheme("RTSP://cam/1"), SourceScheme::kRtsp);
  EXPECT_EQ(*ParseSourceScheme("rtsps://cam/1"), SourceScheme::kRtsp);
  EXPECT_EQ(*ParseSourceScheme("rtmp://h/live/x"), SourceScheme::kRtmp);
  EXPECT_EQ(*ParseSourceScheme("https://h/live.m3u8"), SourceScheme::kHttp);
  EXPECT_EQ(*ParseSourceScheme("udp://127.0.0.1:5000"), SourceScheme::kUdp);
  EXPECT_EQ(*ParseSourceScheme("tcp://127.0.0.1:5002"), SourceScheme::kTcp);
  EXPECT_FALSE(IsLive(SourceScheme::kFile));
  EXPECT_TRUE(IsLive(SourceScheme::kRtsp));
}

TEST(SourceUrl, UnknownSchemeAndEmptySourceAreRefused) {
  auto gopher = ParseSourceScheme("gopher://user:pw@host/x");
  ASSERT_FALSE(gopher.ok());
  EXPECT_EQ(gopher.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(gopher.status().message().find("'gopher://'"), std::string::npos);
  EXPECT_EQ(gopher.status().message().find("pw"), std::string::npos);
  EXPECT_FALSE(ParseSourceScheme("").ok());
}

TEST(SourceUrl, CredentialsAreRedacted) {
  EXPECT_EQ(RedactCredentials("rtsp://admin:s3cret@10.0.0.7:554/stream1"),
            "rtsp://***@10.0.0.7:554/stream1");
  EXPECT_EQ(RedactCredentials("rtmp://user@host/live"), "rtmp://***@host/live");
  // Every URL of a message, and nothing else.
  EXPECT_EQ(RedactCredentials("opening rtsp://a:b@h1/x failed, then http://c:d@h2?q=1 too"),
            "opening rtsp://***@h1/x failed, then http://***@h2?q=1 too");
  // An '@' in the path or query is not user information.
  EXPECT_EQ(RedactCredentials("http://host/users/me@example.org?to=x@y"),
            "http://host/users/me@example.org?to=x@y");
  EXPECT_EQ(RedactCredentials("clip.mp4"), "clip.mp4");
  EXPECT_EQ(RedactCredentials("rtsp://cam:554/x"), "rtsp://cam:554/x");
  // The last '@' of the authority ends the user information ('@' inside a password).
  EXPECT_EQ(RedactCredentials("rtsp://u:p@ss@cam/x"), "rtsp://***@cam/x");
}

std::map<std::string, std::string> Options(SourceScheme scheme, bool listen = false) {
  const SourceTimeouts t{std::chrono::milliseconds(10'000), std::chrono::milliseconds(2'500)};
  std::map<std::string, std::string> m;
  for (const auto& [k, v] : FormatOptions(scheme, t, RtspTransport::kUdp, listen)) m[k] = v;
  return m;
}

TEST(SourceUrl, TimeoutsPerScheme) {
  // Microseconds, under each protocol's own name.
  EXPECT_EQ(Options(SourceScheme::kRtsp).at("timeout"), "2500000");
  EXPECT_EQ(Options(SourceScheme::kRtsp).at("rtsp_transport"), "udp");
  EXPECT_EQ(Options(SourceScheme::kTcp).at("timeout"), "2500000");
  EXPECT_EQ(Options(SourceScheme::kUdp).at("timeout"), "2500000");
  EXPECT_EQ(Options(SourceScheme::kHttp).at("rw_timeout"), "2500000");
  EXPECT_EQ(Options(SourceScheme::kHttp).at("live_start_index"), "-1");
  EXPECT_EQ(Options(SourceScheme::kRtmp).at("rw_timeout"), "2500000");
  // rtmp's `timeout` would make it listen for a publisher instead of connecting.
  EXPECT_EQ(Options(SourceScheme::kRtmp).count("timeout"), 0u);
  EXPECT_EQ(Options(SourceScheme::kHttp).count("timeout"), 0u);
  EXPECT_TRUE(Options(SourceScheme::kFile).empty());
}

TEST(SourceUrl, ListenForAPushingEncoder) {
  EXPECT_EQ(Options(SourceScheme::kRtsp, true).at("rtsp_flags"), "listen");
  EXPECT_EQ(Options(SourceScheme::kRtsp, true).at("timeout"), "2500000");
  EXPECT_EQ(Options(SourceScheme::kTcp, true).at("listen"), "1");
  EXPECT_EQ(Options(SourceScheme::kRtmp, true).at("listen"), "1");
  EXPECT_EQ(Options(SourceScheme::kRtsp).count("rtsp_flags"), 0u);
  EXPECT_EQ(Options(SourceScheme::kTcp).count("listen"), 0u);
  EXPECT_TRUE(ListenAllowed(SourceScheme::kRtsp));
  EXPECT_TRUE(ListenAllowed(SourceScheme::kRtmp));
  EXPECT_TRUE(ListenAllowed(SourceScheme::kTcp));
  EXPECT_FALSE(ListenAllowed(SourceScheme::kHttp));
  EXPECT_FALSE(ListenAllowed(SourceScheme::kUdp));
  EXPECT_FALSE(ListenAllowed(SourceScheme::kFile));
}

}  // namespace
}  // namespace mogserve::video
