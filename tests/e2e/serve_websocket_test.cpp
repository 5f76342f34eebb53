// GET /v1/detect/ws against the real server: pictures as WebSocket messages, one answer each.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "serve_support.h"
#include "support/raw_http.h"

namespace mogserve::e2e {
namespace {

using nlohmann::json;

// A blocking WebSocket client written from RFC 6455 over a raw socket (an implementation
// independent of the server's): the opening handshake, masked client frames, and the server's
// unmasked frames, answering pings.
class WsClient {
 public:
  // Connects and upgrades `target`; handshake_status() is the answer's status (101 when open).
  WsClient(int port, const std::string& target, const std::string& api_key = "")
      : connection_(port) {
    std::string headers =
        "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n";
    if (!api_key.empty()) headers += "Authorization: Bearer " + api_key + "\r\n";
    if (!connection_.Send(GetRequest(target, headers))) return;
    const auto r = connection_.ReadResponse(std::chrono::seconds(10));
    if (!r) return;
    status_ = r->status;
    // RFC 6455 §1.3: the accept key of the sample nonce above.
    if (status_ == 101) {
      EXPECT_EQ(r->Header("sec-websocket-accept"), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    }
  }
  int handshake_status() const { return status_; }

  // False when the server closed the connection before taking the whole message.
  bool SendBinary(const std::string& bytes) { return SendFrame(0x2, bytes); }
  bool SendText(const std::string& text) { return SendFrame(0x1, text); }
  // The next text message as JSON; an empty object (and a test failure) when none comes.
  json Read() {
    for (;;) {
      auto frame = ReadFrame(std::chrono::seconds(60));
      if (!frame) {
        ADD_FAILURE() << "no message";
        return json::object();
      }
      if (frame->first == 0x9) {  // ping: answer, keep reading
        EXPECT_TRUE(SendFrame(0xA, frame->second));
        continue;
      }
      if (frame->first != 0x1) {
        ADD_FAILURE() << "opcode " << frame->first;
        return json::object();
      }
      return json::parse(frame->second);
    }
  }
  // The close code of the server's next frame when it is a close frame, else -1.
  int ReadCloseCode() {
    auto frame = ReadFrame(std::chrono::seconds(30));
    if (!frame || frame->first != 0x8 || frame->second.size() < 2) return -1;
    return (static_cast<uint8_t>(frame->second[0]) << 8) | static_cast<uint8_t>(frame->second[1]);
  }

 private:
  bool SendFrame(int opcode, const std::string& payload) {
    std::string frame(1, static_cast<char>(0x80 | opcode));
    const uint64_t n = payload.size();
    if (n < 126) {
      frame += static_cast<char>(0x80 | n);
    } else if (n < 65536) {
      frame += static_cast<char>(0x80 | 126);
      for (int shift : {8, 0}) frame += static_cast<char>((n >> shift) & 0xFF);
    } else {
      frame += static_cast<char>(0x80 | 127);
      for (int shift = 56; shift >= 0; shift -= 8) frame += static_cast<char>((n >> shift) & 0xFF);
    }
    const char mask[4] = {0x12, 0x34, 0x56, 0x78};
    frame.append(mask, 4);
    for (size_t i = 0; i < payload.size(); ++i)
      frame += static_cast<char>(payload[i] ^ mask[i % 4]);
    return connection_.Send(frame);
  }
  // One whole frame (the server does not fragment): opcode and payload.
  std::optional<std::pair<int, std::string>> ReadFrame(std::chrono::milliseconds timeout) {
    auto head = connection_.ReadExactly(2, timeout);
    if (!head) return std::nullopt;
    const int opcode = static_cast<uint8_t>((*head)[0]) & 0x0F;
    uint64_t n = static_cast<uint8_t>((*head)[1]) & 0x7F;
    const int extra = n == 126 ? 2 : n == 127 ? 8 : 0;
    if (extra > 0) {
      auto length = connection_.ReadExactly(extra, timeout);
      if (!length) return std::nullopt;
      n = 0;
      for (char c : *length) n = (n << 8) | static_cast<uint8_t>(c);
    }
    auto payload = connection_.ReadExactly(n, timeout);
    if (!payload) return std::nullopt;
    return std::make_pair(opcode, std::move(*payload));
  }

  RawConnection connection_;
  int status_ = 0;
};

class ServeWebSocketTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = StartSharedServer({"--api-key", "k", "--plan-batch-sizes", "1,2",
                                 "--max-batch-size", "4", "--max-body-bytes", "2000000"});
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
