#include "server/http/connection_registry.h"

#include <vector>

#include "server/http/connection.h"

namespace mogserve::server::http {

ConnectionRegistry::Handle ConnectionRegistry::Add(Connection* connection) {
  std::lock_guard<std::mutex> lock(mu_);
  ++counters_.accepted_total;
  ++counters_.open;
  return connections_.insert(connections_.end(), connection);
}

void ConnectionRegistry::Remove(Handle handle) {
  std::lock_guard<std::mutex> lock(mu_);
  if ((*handle)->displaced()) --closing_displaced_;
  connections_.erase(handle);
  --counters_.open;
}

std::shared_ptr<Connection> ConnectionRegistry::PickVictim(const Connection* newcomer,
                                                           bool at_any_size) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!at_any_size && counters_.open - closing_displaced_ <= max_connections_) return nullptr;
  Connection* oldest = nullptr;
  for (Connection* c : connections_) {
    const ConnectionPhase p = c->phase();
    if (p != ConnectionPhase::kIdle && p != ConnectionPhase::kHeader) continue;
    if (c == newcomer || c->displaced()) continue;
    if (oldest == nullptr || c->phase_since_ns() < oldest->phase_since_ns()) oldest = c;
  }
  // A connection in the list is alive or blocked in its destructor on mu_ (then lock() fails).
  std::shared_ptr<Connection> victim = oldest ? oldest->weak_from_this().lock() : nullptr;
  if (victim && victim->MarkDisplaced()) {
    ++counters_.displaced_total;
    ++closing_displaced_;
  }
  return victim;
}

bool ConnectionRegistry::OverCap() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counters_.open - closing_displaced_ > max_connections_;
}

void ConnectionRegistry::CountRefused() {
  std::lock_guard<std::mutex> lock(mu_);
  ++counters_.refused_total;
}

void ConnectionRegistry::ForEach(
    const std::function<void(const std::shared_ptr<Connection>&)>& fn) {
  std::vector<std::shared_ptr<Connection>> alive;
  {
    std::lock_guard<std::mutex> lock(mu_);
    alive.reserve(connections_.size());
    for (Connection* c : connections_) {
      if (auto p = c->weak_from_this().lock()) alive.push_back(std::move(p));
    }
  }
  for (const auto& c : alive) fn(c);
}

ConnectionCounters ConnectionRegistry::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counters_;
}

int64_t ConnectionRegistry::open() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counters_.open;
}

}  // namespace mogserve::server::http
