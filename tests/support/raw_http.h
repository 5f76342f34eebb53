// A raw HTTP/1.1 client over a TCP socket, for the tests that must send what no well-behaved
// client library would: malformed framing, slow headers, endless bodies, pipelined requests.
// And a prober that keeps asking GET /healthz on fresh connections while an attack runs.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

namespace mogserve::e2e {

struct RawResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  std::string Header(const std::string& lower_name) const;
};

class RawConnection {
 public:
  // Connects to 127.0.0.1:port (blocking); ok() tells whether it worked.
  explicit RawConnection(int port);
  ~RawConnection();
  RawConnection(RawConnection&& other) noexcept;
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  bool ok() const { return fd_ >= 0; }
  // Sends all of `bytes`; false when the connection failed (reset or closed by the server).
  bool Send(std::string_view bytes);
  // Sends what the socket takes within `wait` (at least one byte unless it is full or failed);
  // returns the bytes sent, -1 on error.
  long SendSome(std::string_view bytes, std::chrono::milliseconds wait);
  void ShutdownWrite();
  // Whether a byte of an answer (or the server's close) arrived within `wait`.
  bool Readable(std::chrono::milliseconds wait);
  // One response: status line, headers, and a Content-Length body (a 1xx has none); nullopt
  // when it does not arrive whole within `timeout` or the connection closes first.
  std::optional<RawResponse> ReadResponse(std::chrono::milliseconds timeout);
  // The status line and headers of a response whose body is read in chunks (below).
  std::optional<RawResponse> ReadResponseHead(std::chrono::milliseconds timeout);
  // The data of the next chunk of a chunked body: "" for the last chunk, nullopt when it does
  // not arrive within `timeout`.
  std::optional<std::string> ReadChunk(std::chrono::milliseconds timeout);
  // Exactly `n` bytes (what a response or frame header said would follow); nullopt when they do
  // not arrive within `timeout`.
  std::optional<std::string> ReadExactly(size_t n, std::chrono::milliseconds timeout);
  // True when the server closes the connection within `timeout` without sending anything more
  // (bytes already buffered count as "something more").
  bool ClosedWithoutMore(std::chrono::milliseconds timeout);

 private:
  // Reads more into buffer_ before `deadline`; false on timeout, error or end of stream.
  bool Fill(std::chrono::steady_clock::time_point deadline);

  int fd_ = -1;
  std::string buffer_;
  bool eof_ = false;
};

// "GET path HTTP/1.1" with Host, extra header lines (each ending in \r\n) and no body.
std::string GetRequest(const std::string& path, const std::string& headers = "");
// POST with a Content-Length body.
std::string PostRequest(const std::string& path, const std::string& content_type,
                        const std::string& body, const std::string& headers = "");

// While alive, GETs /healthz on a new connection every `every` and records the slowest answer
// and the failures (no answer within 5 s, or not 200).
class HealthProber {
 public:
  HealthProber(int port, std::chrono::milliseconds every = std::chrono::milliseconds(100));
  ~HealthProber();
  // Stops probing; then the figures below are final.
  void Stop();
  int probes() const { return probes_.load(); }
  int failures() const { return failures_.load(); }
  std::chrono::milliseconds slowest() const;
  std::string Describe() const;

 private:
  const int port_;
  const std::chrono::milliseconds every_;
  std::atomic<bool> stop_{false};
  std::atomic<int> probes_{0};
  std::atomic<int> failures_{0};
  std::atomic<int64_t> slowest_ms_{0};
  mutable std::mutex mu_;
  std::string first_failure_;  // guarded by mu_
  std::thread thread_;
};

}  // namespace mogserve::e2e
