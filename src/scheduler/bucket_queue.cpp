#include "scheduler/bucket_queue.h"

#include <cassert>

namespace mogserve::scheduler {

void BucketQueue::Push(QueuedRequest queued) {
  const Request& r = queued.request;
  ClassQueue& cls = classes_[static_cast<int>(r.priority)];
  const ArrivalKey key{r.arrival, queued.seq, r.id};
  cls.by_arrival.insert(key);
  by_arrival_.insert(key);
  by_deadline_.emplace(queued.deadline, r.id);
  auto [it, inserted] = cls.clients.try_emplace(r.client);
  if (inserted) it->second.ring_pos = cls.ring.insert(cls.ring.end(), r.client);
  it->second.fifo.emplace(queued.seq, r.id);
  pixels_ += r.pixel_cost;
  const uint64_t id = r.id;
  requests_.emplace(id, std::move(queued));
}

QueuedRequest BucketQueue::Remove(uint64_t id) {
  auto node = requests_.extract(id);
  assert(!node.empty());
  QueuedRequest queued = std::move(node.mapped());
  const Request& r = queued.request;
  ClassQueue& cls = classes_[static_cast<int>(r.priority)];
  const ArrivalKey key{r.arrival, queued.seq, r.id};
  cls.by_arrival.erase(key);
  by_arrival_.erase(key);
  by_deadline_.erase({queued.deadline, r.id});
  auto client = cls.clients.find(r.client);
  client->second.fifo.erase(queued.seq);
  if (client->second.fifo.empty()) {
    cls.ring.erase(client->second.ring_pos);
    cls.clients.erase(client);
  }
  pixels_ -= r.pixel_cost;
  return queued;
}

const QueuedRequest* BucketQueue::Find(uint64_t id) const {
  auto it = requests_.find(id);
  return it == requests_.end() ? nullptr : &it->second;
}

TimePoint BucketQueue::EarliestDeadline() const {
  return by_deadline_.empty() ? kNoDeadline : by_deadline_.begin()->first;
}

BucketQueue::Urgency BucketQueue::ClassUrgency(int c, TimePoint now, Duration aging_step) const {
  const ClassQueue& cls = classes_[c];
  if (cls.by_arrival.empty()) return Urgency{};
  const TimePoint oldest = cls.by_arrival.begin()->arrival;
  int effective = c;
  if (aging_step > Duration::zero() && now > oldest) {
    const auto levels = (now - oldest) / aging_step;
    effective = levels >= c ? 0 : c - static_cast<int>(levels);
  }
  return Urgency{effective, oldest, c};
}

int BucketQueue::NextClass(TimePoint now, Duration aging_step) const {
  int best = -1;
  Urgency best_urgency;
  for (int c = 0; c < kNumPriorities; ++c) {
    if (classes_[c].by_arrival.empty()) continue;
    const Urgency u = ClassUrgency(c, now, aging_step);
    if (best < 0 || u < best_urgency) {
      best = c;
      best_urgency = u;
    }
  }
  assert(best >= 0);
  return best;
}

BucketQueue::Urgency BucketQueue::NextUrgency(TimePoint now, Duration aging_step) const {
  if (empty()) return Urgency{};
  return ClassUrgency(NextClass(now, aging_step), now, aging_step);
}

const QueuedRequest& BucketQueue::PeekNext(TimePoint now, Duration aging_step) const {
  const ClassQueue& cls = classes_[NextClass(now, aging_step)];
  const ClientQueue& client = cls.clients.at(cls.ring.front());
  return requests_.at(client.fifo.begin()->second);
}

QueuedRequest BucketQueue::PopNext(TimePoint now, Duration aging_step) {
  ClassQueue& cls = classes_[NextClass(now, aging_step)];
  // Rotate before removing: if the client still has requests it must go to the back of the ring.
  cls.ring.splice(cls.ring.end(), cls.ring, cls.ring.begin());
  const ClientQueue& client = cls.clients.at(cls.ring.back());
  return Remove(client.fifo.begin()->second);
}

}  // namespace mogserve::scheduler
