// GET /v1/events against the real server: statistics pushed as Server-Sent Events in a chunked
// answer, each event the /v1/stats JSON, counting requests as they are answered.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "serve_support.h"
#include "support/raw_http.h"

namespace mogserve::e2e {
namespace {

using nlohmann::json;
using std::chrono::seconds;

// The next `event: stats` of the stream, as JSON (null when none arrives).
json NextStats(RawConnection& c) {
  std::string text;
  while (text.find("\n\n") == std::string::npos || text.find("event: stats") == std::string::npos) {
    auto chunk = c.ReadChunk(seconds(10));
    if (!chunk || chunk->empty()) return nullptr;
    text += *chunk;
    if (text.find("event: stats") == std::string::npos && text.find("\n\n") != std::string::npos) {
      text.erase(0, text.find("\n\n") + 2);  // another field (retry:) or a comment
    }
  }
  const size_t data = text.find("data: ");
  if (data == std::string::npos) return nullptr;
  return json::parse(text.substr(data + 6, text.find('\n', data) - data - 6));
}

TEST(ServeEventsE2E, StatsArePushedAsServerSentEventsUntilTheServerStops) {
  ServeProcess server;
  ASSERT_TRUE(server.Start({"--plan-batch-sizes", "1", "--api-key", "k"}));
  ASSERT_TRUE(server.WaitReady());
  RawConnection events(server.port());
  ASSERT_TRUE(events.Send(GetRequest("/v1/events?interval_ms=200", "Authorization: Bearer k\r\n")));
  const auto head = events.ReadResponseHead(seconds(10));
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(head->Header("content-type"), "text/event-stream");
  EXPECT_EQ(head->Header("transfer-encoding"), "chunked");
  const json first = NextStats(events);
  ASSERT_TRUE(first.is_object()) << server.Log();
  EXPECT_EQ(first["requests"]["done"], 0);
  // A detection in between shows up in a later event.
  auto client = server.NewClient();
  client->set_bearer_token_auth("k");
  auto res = client->Post("/v1/detect", PhotoBytes("grace_hopper.jpg"), "image/jpeg");
  ASSERT_TRUE(res && res->status == 200);
  json later = NextStats(events);
  for (int i = 0; i < 10 && later.is_object() && later["requests"]["done"] != 1; ++i) {
    later = NextStats(events);
  }
  ASSERT_TRUE(later.is_object());
  EXPECT_EQ(later["requests"]["done"], 1);
  EXPECT_GE(later["http"]["connections_open"].get<int>(), 1);
  // Bad parameters are refused before the stream starts.
  RawConnection bad(server.port());
  ASSERT_TRUE(bad.Send(GetRequest("/v1/events?interval_ms=5", "Authorization: Bearer k\r\n")));
  const auto refused = bad.ReadResponse(seconds(5));
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 422);
  EXPECT_EQ(CheckError(refused->body, "invalid_parameter", {"interval_ms", "100 to 60000"}), "");
  // SIGTERM ends the stream with its last chunk, and the server exits.
  ASSERT_TRUE(server.child().Signal(SIGTERM));
  std::optional<std::string> chunk;
  do {
    chunk = events.ReadChunk(seconds(10));
  } while (chunk && !chunk->empty());
  EXPECT_TRUE(chunk.has_value()) << "the stream did not end with its last chunk";
  const ProcessResult r = server.child().Wait(kServerStopTimeout);
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
}

}  // namespace
}  // namespace mogserve::e2e
