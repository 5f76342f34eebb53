// `mogserve serve --stream ID=URL` and /v1/streams end to end: the real server and SSD, streams
// from the test clip and from loopback sockets, added, listed, failing and deleted over HTTP.
#include <gtest/gtest.h>

#include <thread>

#include "clips.h"
#include "loopback.h"
#include "serve_support.h"

namespace mogserve::e2e {
namespace {

using std::chrono::milliseconds;
using video::testing::ClipPath;

// Polls GET /v1/streams/{id} until `done` holds for its JSON (or 60 s pass); returns the last.
nlohmann::json WaitForStream(httplib::Client& client, const std::string& id,
                             const std::function<bool(const nlohmann::json&)>& done) {
  nlohmann::json last;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < give_up) {
    auto res = client.Get("/v1/streams/" + id);
    if (res && res->status == 200) {
      last = nlohmann::json::parse(res->body);
      if (done(last)) return last;
    }
    std::this_thread::sleep_for(milliseconds(50));
  }
  ADD_FAILURE() << "stream " << id << " never got there: " << last.dump();
  return last;
}

httplib::Result Post(httplib::Client& client, const nlohmann::json& body) {
  return client.Post("/v1/streams", body.dump(), "application/json");
}

TEST(ServeStreams, AddListFailAndDeleteOverHttp) {
  video::testing::SilentListener silent;
  ServeProcess server;
  ASSERT_TRUE(server.Start({"--stream", "cam=" + ClipPath("clip.mp4"), "--stream-open-timeout",
                            "60", "--stream-io-timeout", "60"}));
  ASSERT_TRUE(server.WaitReady()) << server.Log();
  auto client = server.NewClient();
  // Taken after the server's own port (--port 0), which it therefore cannot be: a stream sent
  // to the server itself would wait for an RTSP answer until its open timeout.
  const int closed = video::testing::ClosedTcpPort();

  // --stream's stream: a file plays at its own rate, like a camera, through the SSD.
  const nlohmann::json cam = WaitForStream(
      *client, "cam", [](const nlohmann::json& s) { return s["frames"]["detected"] > 0; });
  EXPECT_EQ(cam["url"], ClipPath("clip.mp4"));
  EXPECT_EQ(cam["state"], "running");
  const int frame = cam["last"]["frame"];
  const int faces = cam["last"]["faces"];  // as detect-video finds on that frame of the clip
  if (frame < 100) {
    EXPECT_EQ(faces, 4) << frame;
  } else if (frame < 200) {
    EXPECT_TRUE(faces == 4 || faces == 5) << frame << ": " << faces;
  } else {
    EXPECT_EQ(faces, 0) << frame;
  }

  // Added at run time: answered before the source is contacted.
  auto added =
      Post(*client, {{"id", "quiet"}, {"url", "tcp://127.0.0.1:" + std::to_string(silent.port())}});
  ASSERT_TRUE(added);
  EXPECT_EQ(added->status, 201) << added->body;
  EXPECT_EQ(nlohmann::json::parse(added->body)["state"], "connecting");
  auto again = Post(*client, {{"id", "quiet"}, {"url", ClipPath("clip.mp4")}});
  EXPECT_EQ(again->status, 409);
  EXPECT_NE(again->body.find("stream_exists"), std::string::npos);
  auto scheme = Post(*client, {{"id", "g"}, {"url", "gopher://u:pw@host/x"}});
  EXPECT_EQ(scheme->status, 400);
  EXPECT_NE(scheme->body.find("unsupported_url"), std::string::npos);
  EXPECT_EQ(scheme->body.find("pw"), std::string::npos);
  EXPECT_EQ(Post(*client, {{"id", "bad id!"}, {"url", "x.mp4"}})->status, 422);
  // Not JSON: 400, as /v1/detect.
  EXPECT_EQ(client->Post("/v1/streams", "not json", "application/json")->status, 400);

  // Failures end in `failed` with the reader's code and message, credentials removed.
  ASSERT_EQ(Post(*client, {{"id", "old"}, {"url", ClipPath("clip_mpeg4.mp4")}})->status, 201);
  const std::string camera = "rtsp://admin:s3cret@127.0.0.1:" + std::to_string(closed) + "/live";
  auto cred = Post(*client, {{"id", "cred"}, {"url", camera}});
  ASSERT_EQ(cred->status, 201);
  EXPECT_EQ(cred->body.find("s3cret"), std::string::npos) << cred->body;
  auto failed = [](const nlohmann::json& s) { return s["state"] == "failed"; };
  EXPECT_EQ(WaitForStream(*client, "old", failed)["error"]["code"], "unsupported_codec");
  const nlohmann::json unreachable = WaitForStream(*client, "cred", failed);
  EXPECT_EQ(unreachable["error"]["code"], "unreachable");
  EXPECT_EQ(unreachable["url"], "rtsp://***@127.0.0.1:" + std::to_string(closed) + "/live");

  auto list = client->Get("/v1/streams");
  ASSERT_EQ(list->status, 200);
  EXPECT_EQ(list->body.find("s3cret"), std::string::npos);
  std::vector<std::string> ids;
  const nlohmann::json listed = nlohmann::json::parse(list->body);
  for (const auto& s : listed["streams"]) ids.push_back(s["id"]);
  EXPECT_EQ(ids, (std::vector<std::string>{"cam", "cred", "old", "quiet"}));

  // DELETE interrupts the stream blocked on its silent source at once.
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(client->Delete("/v1/streams/quiet")->status, 204);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  EXPECT_EQ(client->Get("/v1/streams/quiet")->status, 404);
  EXPECT_EQ(client->Delete("/v1/streams/quiet")->status, 404);
  auto put = client->Put("/v1/streams", "{}", "application/json");
  EXPECT_EQ(put->status, 405);
  EXPECT_EQ(put->get_header_value("Allow"), "GET, HEAD, POST");

  const ProcessResult stopped = server.Stop();
  EXPECT_EQ(stopped.exit_code, 0) << stopped.Describe();
}

TEST(ServeStreams, AMalformedStreamFlagIsAUsageError) {
  const ProcessResult r = RunMogserve(
      {"serve", "--model-dir", TestModelDir(), "--port", "0", "--stream", "no-equals-sign"});
  EXPECT_EQ(r.exit_code, 2) << r.Describe();
  EXPECT_NE(r.err.find("--stream no-equals-sign: expected ID=URL"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace mogserve::e2e
