// GET /v1/detect/ws against the real server: pictures as WebSocket messages, one answer each.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "image/decode.h"
#include "serve_support.h"
#include "server/detect_request.h"
#include "support/raw_http.h"
#include "support/ws_client.h"

namespace mogserve::e2e {
namespace {

using nlohmann::json;

class ServeWebSocketTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = StartSharedServer({"--api-key", "k", "--plan-batch-sizes", "1,2", "--max-batch-size",
                                 "4", "--max-body-bytes", "2000000"});
  }
  static void TearDownTestSuite() { StopSharedServer(server_); }
  void SetUp() override { ASSERT_NE(server_, nullptr) << "the server did not start"; }
  static std::unique_ptr<ServeProcess> server_;
};
std::unique_ptr<ServeProcess> ServeWebSocketTest::server_;

TEST_F(ServeWebSocketTest, EachPictureMessageGetsItsFacesWithItsSequenceNumber) {
  WsClient ws(server_->port(), "/v1/detect/ws?max_faces=5", "k");
  ASSERT_EQ(ws.handshake_status(), 101);
  const std::vector<std::string> photos = {"grace_hopper.jpg", "sample1.jpg", "astronaut.png"};
  for (const std::string& photo : photos) ASSERT_TRUE(ws.SendBinary(PhotoBytes(photo)));
  // A JSON message with its own options, and a bad picture: answered in turn, socket open.
  ASSERT_TRUE(ws.SendText(
      json({{"image", Base64(PhotoBytes("sample2.jpg"))}, {"score_threshold", 0.3}}).dump()));
  ASSERT_TRUE(ws.SendBinary("not a picture"));
  ASSERT_TRUE(ws.SendText("{\"image\": 5}"));
  std::map<int64_t, json> answers;
  for (int i = 0; i < 6; ++i) {
    json a = ws.Read();
    ASSERT_TRUE(a.contains("seq")) << server_->Log();
    const int64_t seq = a.at("seq").get<int64_t>();
    answers[seq] = std::move(a);
  }
  ASSERT_EQ(answers.size(), 6u);
  for (size_t i = 0; i < photos.size(); ++i) {
    SCOPED_TRACE(photos[i]);
    EXPECT_EQ(CheckFaces(answers[i], photos[i]), "") << answers[i].dump();
  }
  EXPECT_EQ(CheckFaces(answers[3], "sample2.jpg"), "") << answers[3].dump();
  EXPECT_EQ(answers[4].value("status", 0), 415) << answers[4].dump();
  EXPECT_EQ(CheckError(answers[4].dump(), "unsupported_image_format", {}), "");
  EXPECT_EQ(answers[5].value("status", 0), 400) << answers[5].dump();
  EXPECT_EQ(CheckError(answers[5].dump(), "bad_request", {"base64 string"}), "");
}

// crop_size in the socket's URL (every picture) or in one JSON message: each face's aligned
// crop of that size, a base64 JPEG.
TEST_F(ServeWebSocketTest, CropSizeGivesEachFaceItsAlignedCrop) {
  const auto crop_side = [](const json& answer) {
    const json& faces = answer.at("faces");
    if (faces.empty() || !faces[0].contains("crop")) return 0;
    const auto jpeg = server::DecodeBase64(faces[0].at("crop").get<std::string>());
    if (!jpeg) return -1;
    const auto decoded = image::Decode(*jpeg);
    return decoded.ok() && decoded->image.width == decoded->image.height ? decoded->image.width
                                                                          : -1;
  };
  WsClient ws(server_->port(), "/v1/detect/ws?crop_size=112", "k");
  ASSERT_EQ(ws.handshake_status(), 101);
  ASSERT_TRUE(ws.SendBinary(PhotoBytes("grace_hopper.jpg")));
  const json a = ws.Read();
  EXPECT_EQ(crop_side(a), 112) << a.dump().substr(0, 300);
  WsClient plain(server_->port(), "/v1/detect/ws", "k");
  ASSERT_EQ(plain.handshake_status(), 101);
  ASSERT_TRUE(plain.SendText(
      json({{"image", Base64(PhotoBytes("grace_hopper.jpg"))}, {"crop_size", 128}}).dump()));
  const json b = plain.Read();
  EXPECT_EQ(crop_side(b), 128) << b.dump().substr(0, 300);
  ASSERT_TRUE(plain.SendBinary(PhotoBytes("grace_hopper.jpg")));
  const json c = plain.Read();
  EXPECT_EQ(crop_side(c), 0) << "a picture without crop_size got a crop";
}

TEST_F(ServeWebSocketTest, LatestOnlyAnswersEveryFrameDoneOrSuperseded) {
  WsClient ws(server_->port(), "/v1/detect/ws?latest_only=true", "k");
  ASSERT_EQ(ws.handshake_status(), 101);
  constexpr int kFrames = 24;
  for (int i = 0; i < kFrames; ++i) ASSERT_TRUE(ws.SendBinary(PhotoBytes("grace_hopper.jpg")));
  std::set<int64_t> seen;
  int done = 0, superseded = 0;
  for (int i = 0; i < kFrames; ++i) {
    const json a = ws.Read();
    EXPECT_TRUE(seen.insert(a.at("seq").get<int64_t>()).second) << "answered twice: " << a;
    if (a.contains("faces")) {
      ++done;
      EXPECT_EQ(CheckFaces(a, "grace_hopper.jpg"), "");
    } else {
      EXPECT_EQ(a.value("status", 0), 409) << a;
      EXPECT_EQ(CheckError(a.dump(), "superseded", {}), "");
      ++superseded;
    }
  }
  EXPECT_EQ(*seen.rbegin(), kFrames - 1);
  EXPECT_GT(done, 0);
  std::cout << "[ latest   ] " << done << " frames detected, " << superseded << " superseded\n";
}

TEST_F(ServeWebSocketTest, RefusedUpgradesAndOversizedMessages) {
  {
    WsClient no_key(server_->port(), "/v1/detect/ws");
    EXPECT_EQ(no_key.handshake_status(), 401);
  }
  {
    WsClient bad_option(server_->port(), "/v1/detect/ws?latest_only=maybe", "k");
    EXPECT_EQ(bad_option.handshake_status(), 422);
  }
  {
    WsClient not_a_socket(server_->port(), "/v1/models", "k");
    EXPECT_EQ(not_a_socket.handshake_status(), 400);
  }
  {
    RawConnection plain(server_->port());
    ASSERT_TRUE(plain.Send(GetRequest("/v1/detect/ws", "Authorization: Bearer k\r\n")));
    const auto r = plain.ReadResponse(std::chrono::seconds(5));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 426);
    EXPECT_EQ(r->Header("upgrade"), "websocket");
  }
  {
    WsClient big(server_->port(), "/v1/detect/ws", "k");
    ASSERT_EQ(big.handshake_status(), 101);
    // One byte over --max-body-bytes: refused from the frame header (the rest is never read).
    big.SendBinary(std::string(2'000'001, 'x'));
    EXPECT_EQ(big.ReadCloseCode(), 1009);  // "message too big"
  }
}

}  // namespace
}  // namespace mogserve::e2e
