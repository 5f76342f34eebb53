#include "loopback.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>

namespace mogserve::video::testing {
namespace {

// A socket listening on 127.0.0.1:0; its port in *port.
int ListenOnLoopback(int* port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(fd, 16) != 0 || getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    throw std::runtime_error("cannot listen on 127.0.0.1");
  }
  *port = ntohs(addr.sin_port);
  return fd;
}

}  // namespace

int ClosedTcpPort() {
  int port = 0;
  close(ListenOnLoopback(&port));
  return port;
}

bool IsListening(int port) {
  std::ifstream table("/proc/net/tcp");
  char wanted[32];
  std::snprintf(wanted, sizeof(wanted), "0100007F:%04X", port);  // 127.0.0.1, little-endian
  std::string line;
  while (std::getline(table, line)) {
    char local[64] = {}, remote[64] = {};
    unsigned state = 0;
    if (std::sscanf(line.c_str(), "%*d: %63s %63s %x", local, remote, &state) == 3 &&
        std::string(local) == wanted && state == 0x0A) {  // TCP_LISTEN
      return true;
    }
  }
  return false;
}

bool IsBoundUdp(int port) {
  std::ifstream table("/proc/net/udp");
  char loopback[32], any[32];
  std::snprintf(loopback, sizeof(loopback), "0100007F:%04X", port);
  std::snprintf(any, sizeof(any), "00000000:%04X", port);
  std::string line;
  while (std::getline(table, line)) {
    char local[64] = {};
    if (std::sscanf(line.c_str(), "%*d: %63s", local) == 1 &&
        (std::string(local) == loopback || std::string(local) == any)) {
      return true;
    }
  }
  return false;
}

// port_ is written in the body: a member initialiser would run before port_'s own (= 0).
SilentListener::SilentListener() {
  fd_ = ListenOnLoopback(&port_);
}

SilentListener::~SilentListener() {
  close(fd_);
}

bool SilentListener::WaitForConnection(int timeout_ms) const {
  pollfd p{fd_, POLLIN, 0};  // a listening socket is readable once a connection is pending
  return poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN) != 0;
}

FixedStatusHttpServer::FixedStatusHttpServer(std::string status_line)
    : status_line_(std::move(status_line)) {
  fd_ = ListenOnLoopback(&port_);
  thread_ = std::thread([this] { Serve(); });
}

FixedStatusHttpServer::~FixedStatusHttpServer() {
  stop_ = true;
  thread_.join();
  close(fd_);
}

void FixedStatusHttpServer::Serve() {
  while (!stop_) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    const int client = accept(fd_, nullptr, nullptr);
    if (client < 0) continue;
    // Reads the request head (until the blank line) before answering, as a server would.
    std::string head;
    char buf[1024];
    while (head.find("\r\n\r\n") == std::string::npos) {
      pollfd c{client, POLLIN, 0};
      if (poll(&c, 1, 2000) <= 0) break;
      const ssize_t n = read(client, buf, sizeof(buf));
      if (n <= 0) break;
      head.append(buf, static_cast<size_t>(n));
    }
    ++requests_;
    const std::string reply =
        "HTTP/1.1 " + status_line_ + "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    (void)!write(client, reply.data(), reply.size());
    close(client);
  }
}

TrickleServer::TrickleServer(std::string prefix) : prefix_(std::move(prefix)) {
  fd_ = ListenOnLoopback(&port_);
  thread_ = std::thread([this] { Serve(); });
}

TrickleServer::~TrickleServer() {
  stop_ = true;
  thread_.join();
  close(fd_);
}

void TrickleServer::Serve() {
  std::string nulls;
  for (int i = 0; i < 20; ++i) {
    std::string packet(188, '\xff');
    packet[0] = 0x47;  // sync byte; PID 0x1FFF (null), payload only
    packet[1] = 0x1F;
    packet[2] = static_cast<char>(0xFF);
    packet[3] = 0x10;
    nulls += packet;
  }
  while (!stop_) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    const int client = accept(fd_, nullptr, nullptr);
    if (client < 0) continue;
    bool open = send(client, prefix_.data(), prefix_.size(), MSG_NOSIGNAL) ==
                static_cast<ssize_t>(prefix_.size());
    while (open && !stop_) {
      open = send(client, nulls.data(), nulls.size(), MSG_NOSIGNAL) > 0;
      poll(nullptr, 0, 10);
    }
    close(client);
  }
}

}  // namespace mogserve::video::testing
