// ConnectionRegistry: the open connections of a listener, for the connection cap. At the cap a
// new connection displaces the one that has waited longest without a complete request header
// (idle keep-alive, or a slow header): a flood of idle or slow clients can take every slot only
// until the next client arrives, so health checks and real clients always get in. Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>

namespace mogserve::server::http {

class Connection;

// Where a connection is in its exchange; only kIdle and kHeader can be displaced.
enum class ConnectionPhase : int { kIdle, kHeader, kBody, kHandling, kWriting, kClosing };

struct ConnectionCounters {
  int64_t open = 0;
  int64_t accepted_total = 0;
  int64_t displaced_total = 0;  // closed at the cap for a newer connection
  int64_t refused_total = 0;    // 503 at the cap, every connection busy
};

class ConnectionRegistry {
 public:
  using Handle = std::list<Connection*>::iterator;

  explicit ConnectionRegistry(int max_connections) : max_connections_(max_connections) {}

  Handle Add(Connection* connection);
  void Remove(Handle handle);

  // With more than max_connections open (not counting those already displaced and closing; or
  // at any count with `at_any_size`: out of file descriptors), picks the connection to displace
  // for `newcomer` — the longest-waiting idle or header-phase one other than it — or null when
  // every other connection is busy with a request.
  std::shared_ptr<Connection> PickVictim(const Connection* newcomer, bool at_any_size = false);
  // More open than max_connections, not counting the displaced ones still closing.
  bool OverCap() const;
  void CountRefused();

  // Calls `fn` on every open connection (held alive during the call).
  void ForEach(const std::function<void(const std::shared_ptr<Connection>&)>& fn);

  ConnectionCounters counters() const;
  int64_t open() const;

 private:
  const int max_connections_;
  mutable std::mutex mu_;
  std::list<Connection*> connections_;  // guarded by mu_
  ConnectionCounters counters_;         // guarded by mu_
  int64_t closing_displaced_ = 0;       // displaced, not yet removed; guarded by mu_
};

}  // namespace mogserve::server::http
