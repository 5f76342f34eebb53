// A blocking WebSocket client for the end-to-end tests (GET /v1/detect/ws, /v1/streams/ws).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "support/raw_http.h"

namespace mogserve::e2e {

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
  nlohmann::json Read() {
    for (;;) {
      auto frame = ReadFrame(std::chrono::seconds(60));
      if (!frame) {
        ADD_FAILURE() << "no message";
        return nlohmann::json::object();
      }
      if (frame->first == 0x9) {  // ping: answer, keep reading
        EXPECT_TRUE(SendFrame(0xA, frame->second));
        continue;
      }
      if (frame->first != 0x1) {
        ADD_FAILURE() << "opcode " << frame->first;
        return nlohmann::json::object();
      }
      return nlohmann::json::parse(frame->second);
    }
  }
  // The next text message within `timeout`, answering pings; nullopt when none comes, or the
  // server closes (the connection, or a close frame, which is answered as RFC 6455 §5.5.1 asks,
  // and the connection shut down for writing).
  std::optional<nlohmann::json> TryRead(std::chrono::milliseconds timeout) {
    const auto give_up = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          give_up - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      auto frame = ReadFrame(left);
      if (!frame) return std::nullopt;
      if (frame->first == 0x8) {
        // Then the TCP close, as a browser does on the server's FIN.
        SendFrame(0x8, frame->second.substr(0, 2));
        connection_.ShutdownWrite();
        return std::nullopt;
      }
      if (frame->first == 0x9) {
        if (!SendFrame(0xA, frame->second)) return std::nullopt;
        continue;
      }
      if (frame->first != 0x1) return std::nullopt;
      return nlohmann::json::parse(frame->second);
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
  // One whole message, or one control frame: opcode and payload. A data message the server
  // fragments (Beast splits long messages into continuation frames) is joined here; pings
  // between its fragments are answered.
  std::optional<std::pair<int, std::string>> ReadFrame(std::chrono::milliseconds timeout) {
    auto first = ReadRawFrame(timeout);
    if (!first || first->fin || first->opcode >= 0x8) {
      if (!first) return std::nullopt;
      return std::make_pair(first->opcode, std::move(first->payload));
    }
    std::string message = std::move(first->payload);
    for (;;) {
      auto next = ReadRawFrame(timeout);
      if (!next) return std::nullopt;
      if (next->opcode == 0x9) {
        if (!SendFrame(0xA, next->payload)) return std::nullopt;
        continue;
      }
      if (next->opcode >= 0x8) return std::make_pair(next->opcode, std::move(next->payload));
      message += next->payload;
      if (next->fin) return std::make_pair(first->opcode, std::move(message));
    }
  }
  struct RawFrame {
    bool fin = true;
    int opcode = 0;
    std::string payload;
  };
  std::optional<RawFrame> ReadRawFrame(std::chrono::milliseconds timeout) {
    auto head = connection_.ReadExactly(2, timeout);
    if (!head) return std::nullopt;
    RawFrame f;
    f.fin = (static_cast<uint8_t>((*head)[0]) & 0x80) != 0;
    f.opcode = static_cast<uint8_t>((*head)[0]) & 0x0F;
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
    f.payload = std::move(*payload);
    return f;
  }

  RawConnection connection_;
  int status_ = 0;
};

}  // namespace mogserve::e2e
