#include "support/raw_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace mogserve::e2e {
namespace {

using Clock = std::chrono::steady_clock;

int MillisLeft(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::max<int64_t>(0, left.count()));
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

std::string RawResponse::Header(const std::string& lower_name) const {
  const auto it = headers.find(lower_name);
  return it == headers.end() ? "" : it->second;
}

RawConnection::RawConnection(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return;
  }
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  fd_ = fd;
}

RawConnection::~RawConnection() {
  if (fd_ >= 0) ::close(fd_);
}

RawConnection::RawConnection(RawConnection&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), buffer_(std::move(other.buffer_)), eof_(other.eof_) {}

bool RawConnection::Send(std::string_view bytes) {
  while (!bytes.empty() && fd_ >= 0) {
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return fd_ >= 0;
}

long RawConnection::SendSome(std::string_view bytes, std::chrono::milliseconds wait) {
  pollfd p{fd_, POLLOUT, 0};
  if (::poll(&p, 1, static_cast<int>(wait.count())) <= 0) return 0;
  if (p.revents & (POLLERR | POLLHUP)) return -1;
  const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
  return n;
}

void RawConnection::ShutdownWrite() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_WR);
}

bool RawConnection::Fill(Clock::time_point deadline) {
  if (eof_ || fd_ < 0) return false;
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, MillisLeft(deadline)) <= 0) return false;
  char chunk[16384];
  const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
  if (n <= 0) {
    eof_ = true;
    return false;
  }
  buffer_.append(chunk, static_cast<size_t>(n));
  return true;
}

bool RawConnection::Readable(std::chrono::milliseconds wait) {
  if (!buffer_.empty() || eof_) return true;
  pollfd p{fd_, POLLIN, 0};
  return ::poll(&p, 1, static_cast<int>(wait.count())) > 0;
}

std::optional<RawResponse> RawConnection::ReadResponse(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  std::optional<RawResponse> r = ReadResponseHead(timeout);
  if (!r) return std::nullopt;
  const std::string length = r->Header("content-length");
  const size_t body_size = r->status < 200 || length.empty() ? 0 : std::stoul(length);
  while (buffer_.size() < body_size) {
    if (!Fill(deadline)) return std::nullopt;
  }
  r->body = buffer_.substr(0, body_size);
  buffer_.erase(0, body_size);
  return r;
}

std::optional<std::string> RawConnection::ReadChunk(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  size_t eol;
  while ((eol = buffer_.find("\r\n")) == std::string::npos) {
    if (!Fill(deadline)) return std::nullopt;
  }
  const size_t size = std::stoul(buffer_.substr(0, eol), nullptr, 16);
  while (buffer_.size() < eol + 2 + size + 2) {
    if (!Fill(deadline)) return std::nullopt;
  }
  std::string data = buffer_.substr(eol + 2, size);
  buffer_.erase(0, eol + 2 + size + 2);  // the last chunk has no trailer fields here
  return data;
}

std::optional<RawResponse> RawConnection::ReadResponseHead(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  size_t end;
  while ((end = buffer_.find("\r\n\r\n")) == std::string::npos) {
    if (!Fill(deadline)) return std::nullopt;
  }
  RawResponse r;
  const std::string head = buffer_.substr(0, end);
  size_t line_end = head.find("\r\n");
  const std::string status_line = head.substr(0, line_end);
  if (status_line.rfind("HTTP/1.", 0) != 0 || status_line.size() < 12) return std::nullopt;
  r.status = std::stoi(status_line.substr(9, 3));
  while (line_end != std::string::npos) {
    const size_t next = head.find("\r\n", line_end + 2);
    const std::string line = head.substr(line_end + 2, next - line_end - 2);
    const size_t colon = line.find(':');
    if (colon != std::string::npos) {
      std::string value = line.substr(colon + 1);
      value.erase(0, value.find_first_not_of(' '));
      r.headers[Lower(line.substr(0, colon))] = value;
    }
    line_end = next;
  }
  buffer_.erase(0, end + 4);
  return r;
}

std::optional<std::string> RawConnection::ReadExactly(size_t n, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (buffer_.size() < n) {
    if (!Fill(deadline)) return std::nullopt;
  }
  std::string out = buffer_.substr(0, n);
  buffer_.erase(0, n);
  return out;
}

bool RawConnection::ClosedWithoutMore(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (buffer_.empty() && !eof_) {
    if (!Fill(deadline) && !eof_) return false;
  }
  return buffer_.empty() && eof_;
}

std::string GetRequest(const std::string& path, const std::string& headers) {
  return "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + headers + "\r\n";
}

std::string PostRequest(const std::string& path, const std::string& content_type,
                        const std::string& body, const std::string& headers) {
  return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: " + content_type +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" + headers + "\r\n" + body;
}

HealthProber::HealthProber(int port, std::chrono::milliseconds every) : port_(port), every_(every) {
  thread_ = std::thread([this] {
    do {  // at least one probe, however short the attack
      const auto start = Clock::now();
      RawConnection c(port_);
      std::optional<RawResponse> r;
      if (c.ok() && c.Send(GetRequest("/healthz", "Connection: close\r\n"))) {
        r = c.ReadResponse(std::chrono::seconds(5));
      }
      const auto ms =
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
      probes_.fetch_add(1);
      int64_t slowest = slowest_ms_.load();
      while (ms > slowest && !slowest_ms_.compare_exchange_weak(slowest, ms)) {
      }
      if (!r || r->status != 200) {
        failures_.fetch_add(1);
        std::lock_guard<std::mutex> lock(mu_);
        if (first_failure_.empty()) {
          first_failure_ = !c.ok() ? "connect failed: " + std::string(std::strerror(errno))
                           : !r    ? "no answer within 5 s"
                                   : "status " + std::to_string(r->status) + ": " + r->body;
        }
      }
      if (!stop_.load()) std::this_thread::sleep_until(start + every_);  // pacing the probes
    } while (!stop_.load());
  });
}

HealthProber::~HealthProber() {
  Stop();
}

void HealthProber::Stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

std::chrono::milliseconds HealthProber::slowest() const {
  return std::chrono::milliseconds(slowest_ms_.load());
}

std::string HealthProber::Describe() const {
  std::lock_guard<std::mutex> lock(mu_);
  return std::to_string(probes_.load()) + " probes, " + std::to_string(failures_.load()) +
         " failed, slowest " + std::to_string(slowest_ms_.load()) + " ms" +
         (first_failure_.empty() ? "" : "; first failure: " + first_failure_);
}

}  // namespace mogserve::e2e
