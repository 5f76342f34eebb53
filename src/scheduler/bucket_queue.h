// BucketQueue: the queued requests of one shape bucket, ordered for every question the policy
// asks: which request is next (priority class with aging, then round-robin across clients,
// FIFO within a client), which is oldest (max_delay), which deadline is earliest (expiry).
//
// Fairness bound: within one priority class, the clients with queued requests form a ring; each
// pick takes the head request of the client at the front and moves that client to the back. A
// client that joins goes to the back, so once a client has a queued request, its head is picked
// within K picks from that class, K = the number of clients queued in the class at that moment
// (newcomers join behind it). A flood of 1000 from one client therefore delays a light client's
// single request by at most one pick.
//
// Every operation is O(log n) in the number of queued requests (plus O(#classes) = O(4) to choose
// the class), so a decision never scans the queue.
//
// Not thread-safe; owned by BatchPolicy.
#pragma once

#include <array>
#include <cstdint>
#include <list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>

#include "scheduler/request.h"

namespace mogserve::scheduler {

// A request as held in a queue: its effective deadline (after the server timeout) and its
// admission sequence number, which breaks arrival-time ties and orders a client's requests.
struct QueuedRequest {
  Request request;
  TimePoint deadline = kNoDeadline;
  uint64_t seq = 0;
};

class BucketQueue {
 public:
  void Push(QueuedRequest queued);
  // Removes and returns the request; `id` must be queued here.
  QueuedRequest Remove(uint64_t id);
  const QueuedRequest* Find(uint64_t id) const;

  bool empty() const { return requests_.empty(); }
  int64_t size() const { return static_cast<int64_t>(requests_.size()); }
  int64_t pixels() const { return pixels_; }

  // Oldest arrival in the bucket (any class); the bucket must not be empty.
  TimePoint OldestArrival() const { return by_arrival_.begin()->arrival; }
  // Id of the oldest request (any class): naive's global FIFO.
  uint64_t OldestId() const { return by_arrival_.begin()->id; }
  // Earliest effective deadline, or kNoDeadline; and the id holding it.
  TimePoint EarliestDeadline() const;
  uint64_t EarliestDeadlineId() const { return by_deadline_.begin()->second; }

  // How urgent the next pick is, comparable across buckets: lower is more urgent.
  struct Urgency {
    int effective_class = kNumPriorities;
    TimePoint oldest_arrival = TimePoint::max();
    int real_class = kNumPriorities;
    bool operator<(const Urgency& o) const {
      if (effective_class != o.effective_class) return effective_class < o.effective_class;
      if (oldest_arrival != o.oldest_arrival) return oldest_arrival < o.oldest_arrival;
      return real_class < o.real_class;
    }
  };
  // The urgency of the class that would be served next at `now` (aging_step 0 = strict).
  Urgency NextUrgency(TimePoint now, Duration aging_step) const;
  // The request that would be picked next (class by urgency, then the client ring), without
  // removing it; the bucket must not be empty.
  const QueuedRequest& PeekNext(TimePoint now, Duration aging_step) const;
  // Removes the request PeekNext returned and rotates its client to the back of the ring.
  QueuedRequest PopNext(TimePoint now, Duration aging_step);

 private:
  struct ArrivalKey {
    TimePoint arrival;
    uint64_t seq;
    uint64_t id;
    bool operator<(const ArrivalKey& o) const {
      return arrival != o.arrival ? arrival < o.arrival : seq < o.seq;
    }
  };
  struct ClientQueue {
    std::map<uint64_t, uint64_t> fifo;  // seq -> id, admission order
    std::list<std::string>::iterator ring_pos;
  };
  struct ClassQueue {
    std::set<ArrivalKey> by_arrival;  // for aging: the class's oldest request
    std::list<std::string> ring;      // clients with queued requests, front = next to serve
    std::unordered_map<std::string, ClientQueue> clients;
  };

  int NextClass(TimePoint now, Duration aging_step) const;
  Urgency ClassUrgency(int c, TimePoint now, Duration aging_step) const;

  std::unordered_map<uint64_t, QueuedRequest> requests_;
  std::array<ClassQueue, kNumPriorities> classes_;
  std::set<ArrivalKey> by_arrival_;
  std::set<std::pair<TimePoint, uint64_t>> by_deadline_;  // (deadline, id)
  int64_t pixels_ = 0;
};

}  // namespace mogserve::scheduler
