#include "scheduler/batch_policy.h"

#include <algorithm>
#include <cassert>

namespace mogserve::scheduler {

namespace {

double ToUs(Duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

Duration FromUs(double us) {
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double, std::micro>(us));
}

// Weight of the newest gap in the arrival-rate average: reacts within ~10 arrivals.
constexpr double kArrivalGapWeight = 0.2;
// How long a bucket refuses every request as hopeless, no batch completing, before a probe.
constexpr Duration kStaleEstimateAfter = std::chrono::seconds(5);

}  // namespace

StatusOr<std::unique_ptr<BatchPolicy>> BatchPolicy::Create(const SchedulerConfig& config) {
  MOGSERVE_RETURN_IF_ERROR(config.Validate());
  return std::unique_ptr<BatchPolicy>(new BatchPolicy(config));
}

BatchPolicy::BatchPolicy(const SchedulerConfig& config)
    : config_(config), buckets_(config.num_buckets), rates_(config.num_buckets) {
  models_.reserve(config.num_buckets);
  for (int b = 0; b < config.num_buckets; ++b) {
    models_.emplace_back(config.latency_window, config.default_batch_latency);
  }
  stats_.by_bucket.resize(config.num_buckets);
  refusing_since_.resize(config.num_buckets);
  probe_.resize(config.num_buckets);
  relearn_.resize(config.num_buckets, false);
}

Duration BatchPolicy::SingleRequestEstimate(int bucket) const {
  return models_[bucket].Estimate(config_.PaddedBatchSize(1));
}

bool BatchPolicy::Hopeless(int bucket, TimePoint deadline, TimePoint now) const {
  return deadline != kNoDeadline && now + SingleRequestEstimate(bucket) > deadline;
}

std::optional<Outcome> BatchPolicy::CheckAdmission(const Request& r, TimePoint deadline,
                                                   TimePoint now,
                                                   std::optional<uint64_t> superseded,
                                                   bool probe) const {
  const int priority = static_cast<int>(r.priority);
  if (r.bucket < 0 || r.bucket >= config_.num_buckets || r.pixel_cost <= 0 || r.byte_cost < 0 ||
      priority < 0 || priority >= kNumPriorities || where_.count(r.id) > 0) {
    return Outcome::kRejectedBadInput;
  }
  if (!probe && Hopeless(r.bucket, deadline, now)) return Outcome::kRejectedDeadline;
  int64_t freed_requests = 0;
  int64_t freed_bytes = 0;
  if (superseded) {
    freed_requests = 1;
    freed_bytes = buckets_[where_.at(*superseded)].Find(*superseded)->request.byte_cost;
  }
  const int64_t requests_after = stats_.total.requests - freed_requests + 1;
  const int64_t bytes_after = stats_.total.bytes - freed_bytes + r.byte_cost;
  if (requests_after > config_.queue_capacity_requests ||
      (config_.queue_capacity_bytes > 0 && bytes_after > config_.queue_capacity_bytes)) {
    return Outcome::kRejectedQueueFull;
  }
  return std::nullopt;
}

AdmitResult BatchPolicy::Admit(const Request& request, TimePoint now) {
  AdmitResult result;
  TimePoint deadline = request.deadline;
  if (config_.default_timeout > Duration::zero()) {
    deadline = std::min(deadline, request.arrival + config_.default_timeout);
  }
  std::optional<uint64_t> older;
  if (request.latest_only) {
    auto it = latest_.find(request.client);
    if (it != latest_.end()) older = it->second;
  }
  const bool valid_bucket = request.bucket >= 0 && request.bucket < config_.num_buckets;
  const bool probe = valid_bucket && Hopeless(request.bucket, deadline, now) &&
                     ProbeDue(request.bucket, now);
  const std::optional<Outcome> rejection = CheckAdmission(request, deadline, now, older, probe);
  if (rejection) {
    if (*rejection == Outcome::kRejectedDeadline && !refusing_since_[request.bucket]) {
      refusing_since_[request.bucket] = now;
    }
    result.rejection = *rejection;
    return result;
  }
  if (probe) {
    probe_[request.bucket] = request.id;
    refusing_since_[request.bucket].reset();
  }
  if (older) {
    Dequeue(where_.at(*older), *older);
    result.superseded = older;
  }
  Enqueue(QueuedRequest{request, deadline, next_seq_++}, now);
  result.accepted = true;
  return result;
}

void BatchPolicy::Account(const Request& r, int sign) {
  auto add = [&](QueueDepth& d) {
    d.requests += sign;
    d.bytes += sign * r.byte_cost;
  };
  add(stats_.total);
  add(stats_.by_priority[static_cast<int>(r.priority)]);
  add(stats_.by_bucket[r.bucket]);
}

void BatchPolicy::Enqueue(QueuedRequest queued, TimePoint now) {
  const Request& r = queued.request;
  Account(r, +1);
  where_.emplace(r.id, r.bucket);
  if (r.latest_only) latest_[r.client] = r.id;
  ArrivalRate& rate = rates_[r.bucket];
  if (rate.has_last && now >= rate.last) {
    const double gap_us = ToUs(now - rate.last);
    rate.mean_gap_us = rate.mean_gap_us == 0.0 ? gap_us
                                               : (1 - kArrivalGapWeight) * rate.mean_gap_us +
                                                     kArrivalGapWeight * gap_us;
  }
  rate.last = now;
  rate.has_last = true;
  buckets_[r.bucket].Push(std::move(queued));
}

QueuedRequest BatchPolicy::Dequeue(int bucket, uint64_t id) {
  QueuedRequest queued = buckets_[bucket].Remove(id);
  Forget(queued.request);
  return queued;
}

bool BatchPolicy::ProbeDue(int bucket, TimePoint now) const {
  const std::optional<TimePoint>& since = refusing_since_[bucket];
  return since && now - *since >= kStaleEstimateAfter && !probe_[bucket] &&
         buckets_[bucket].empty();
}

void BatchPolicy::Forget(const Request& r) {
  Account(r, -1);
  where_.erase(r.id);
  if (probe_[r.bucket] == r.id) {
    probe_[r.bucket].reset();
    relearn_[r.bucket] = true;
  }
  if (r.latest_only) {
    auto it = latest_.find(r.client);
    if (it != latest_.end() && it->second == r.id) latest_.erase(it);
  }
}

bool BatchPolicy::Cancel(uint64_t id) {
  auto it = where_.find(id);
  if (it == where_.end()) return false;
  Dequeue(it->second, id);
  return true;
}

std::vector<Ended> BatchPolicy::CancelAll() {
  std::vector<Ended> ended;
  ended.reserve(where_.size());
  for (int b = 0; b < config_.num_buckets; ++b) {
    while (!buckets_[b].empty()) {
      const uint64_t id = buckets_[b].OldestId();
      Dequeue(b, id);
      ended.push_back({id, Outcome::kCancelled});
    }
  }
  return ended;
}

void BatchPolicy::OnBatchCompleted(int bucket, int padded_batch_size, Duration latency) {
  if (bucket < 0 || bucket >= config_.num_buckets) return;
  if (relearn_[bucket]) {  // the samples before the probe's were the stale ones
    models_[bucket] = LatencyModel(config_.latency_window, config_.default_batch_latency);
    relearn_[bucket] = false;
  }
  models_[bucket].Add(padded_batch_size, latency);
  refusing_since_[bucket].reset();  // the estimate is fresh again
}

void BatchPolicy::ExpireHopeless(TimePoint now, std::vector<Ended>* ended) {
  for (int b = 0; b < config_.num_buckets; ++b) {
    BucketQueue& q = buckets_[b];
    while (!q.empty() && Hopeless(b, q.EarliestDeadline(), now)) {
      const uint64_t id = q.EarliestDeadlineId();
      if (IsProbe(b, id)) break;  // it runs whatever the estimate says
      Dequeue(b, id);
      ended->push_back({id, Outcome::kRejectedDeadline});
    }
  }
}

TimePoint BatchPolicy::NextExpiry() const {
  TimePoint next = TimePoint::max();
  for (int b = 0; b < config_.num_buckets; ++b) {
    const TimePoint deadline = buckets_[b].EarliestDeadline();
    // The first instant at which the request is hopeless (Hopeless is strict). A probe never
    // expires, and what queues behind it waits for it.
    if (deadline != kNoDeadline && !IsProbe(b, buckets_[b].EarliestDeadlineId())) {
      next = std::min(next, deadline - SingleRequestEstimate(b) + Duration(1));
    }
  }
  return next;
}

Decision BatchPolicy::Next(TimePoint now, const EngineState& engines) {
  Decision d;
  if (engines.busy > 0) last_busy_ = std::max(last_busy_, now);
  ExpireHopeless(now, &d.ended);
  if (size() == 0) return d;
  TimePoint wake = NextExpiry();
  if (engines.idle > 0 && config_.policy == Policy::kNaive) {
    // Global FIFO: the bucket holding the oldest request.
    int oldest = -1;
    for (int b = 0; b < config_.num_buckets; ++b) {
      if (buckets_[b].empty()) continue;
      if (oldest < 0 || buckets_[b].OldestArrival() < buckets_[oldest].OldestArrival()) oldest = b;
    }
    d.kind = Decision::Kind::kDispatch;
    d.plan.bucket = oldest;
    const QueuedRequest r = Dequeue(oldest, buckets_[oldest].OldestId());
    d.plan.ids.push_back(r.request.id);
    d.plan.batch_size = 1;
    d.plan.padded_batch_size = config_.PaddedBatchSize(1);
    d.plan.pixels = r.request.pixel_cost;
    return d;
  }
  if (engines.idle > 0) {
    int best = -1;
    BucketQueue::Urgency best_urgency;
    for (int b = 0; b < config_.num_buckets; ++b) {
      if (buckets_[b].empty()) continue;
      const TimePoint ready = ReadyAt(b, now, engines);
      if (ready > now) {
        wake = std::min(wake, ready);
        continue;
      }
      const BucketQueue::Urgency u = buckets_[b].NextUrgency(now, config_.aging_step);
      if (best < 0 || u < best_urgency) {
        best = b;
        best_urgency = u;
      }
    }
    if (best >= 0) {
      d.kind = Decision::Kind::kDispatch;
      d.plan = FormBatch(best, now, BatchLimit(best));
      return d;
    }
  }
  d.kind = wake == TimePoint::max() ? Decision::Kind::kIdle : Decision::Kind::kWait;
  d.wake_at = wake;
  return d;
}

bool BatchPolicy::HasFullBatch(int b) const {
  const BucketQueue& q = buckets_[b];
  return q.size() >= config_.MaxBatchSizeFor(b) ||
         (config_.max_batch_pixels > 0 && q.pixels() >= config_.max_batch_pixels);
}

// Holding must end early enough for the earliest deadline in the bucket to be met by a batch of
// the size being waited for.
TimePoint BatchPolicy::HoldUntil(int b, TimePoint latest_by_policy) const {
  const TimePoint deadline = buckets_[b].EarliestDeadline();
  if (deadline == kNoDeadline) return latest_by_policy;
  const int target = config_.PaddedBatchSize(config_.TargetBatchSizeFor(b));
  return std::min(latest_by_policy, deadline - models_[b].Estimate(target));
}

TimePoint BatchPolicy::ReadyAt(int b, TimePoint now, const EngineState& engines) const {
  const BucketQueue& q = buckets_[b];
  if (draining_ || HasFullBatch(b)) return now;
  const TimePoint by_delay = q.OldestArrival() + config_.max_delay;
  if (config_.policy == Policy::kDynamic) {
    const auto& preferred = config_.preferred_batch_sizes;
    if (!preferred.empty() && q.size() >= preferred.front()) return now;
    return HoldUntil(b, by_delay);
  }
  // continuous and adaptive never hold work back from an idle engine while another one runs.
  if (engines.busy > 0 || q.size() >= config_.TargetBatchSizeFor(b)) return now;
  if (config_.policy == Policy::kContinuous && q.OldestArrival() < last_busy_) return now;
  if (config_.policy == Policy::kAdaptive && models_[b].Fitted(config_.adaptive_min_samples)) {
    return AdaptiveReadyAt(b, now);
  }
  return HoldUntil(b, by_delay);
}

// See the header: hold while r·b > n (r = arrivals per µs, b = fixed cost per batch), i.e.
// while b > n · mean_gap, for at most b from the oldest arrival, and only while the oldest
// request can still finish a target batch within latency_target.
TimePoint BatchPolicy::AdaptiveReadyAt(int b, TimePoint now) const {
  const BucketQueue& q = buckets_[b];
  const LatencyModel& model = models_[b];
  const double gap_us = rates_[b].mean_gap_us;
  const double fixed_us = model.intercept_us();
  if (gap_us <= 0.0 || fixed_us <= static_cast<double>(q.size()) * gap_us) return now;
  const TimePoint oldest = q.OldestArrival();
  const Duration target_latency =
      model.Estimate(config_.PaddedBatchSize(config_.TargetBatchSizeFor(b)));
  const TimePoint by_model = oldest + FromUs(fixed_us);
  const TimePoint by_target = oldest + config_.latency_target - target_latency;
  return HoldUntil(b, std::min(by_model, by_target));
}

int BatchPolicy::BatchLimit(int b) const {
  const int cap = config_.MaxBatchSizeFor(b);
  const int64_t queued = buckets_[b].size();
  const auto& preferred = config_.preferred_batch_sizes;
  if (config_.policy != Policy::kDynamic || queued >= cap || preferred.empty() ||
      queued < preferred.front()) {
    return cap;
  }
  // Triton: the largest preferred size that can form now.
  int limit = preferred.front();
  for (int p : preferred) {
    if (p <= queued && p <= cap) limit = p;
  }
  return limit;
}

BatchPlan BatchPolicy::FormBatch(int b, TimePoint now, int limit) {
  BatchPlan plan;
  plan.bucket = b;
  BucketQueue& q = buckets_[b];
  while (static_cast<int>(plan.ids.size()) < limit && !q.empty()) {
    const QueuedRequest& next = q.PeekNext(now, config_.aging_step);
    if (config_.max_batch_pixels > 0 && !plan.ids.empty() &&
        plan.pixels + next.request.pixel_cost > config_.max_batch_pixels) {
      break;
    }
    const QueuedRequest picked = q.PopNext(now, config_.aging_step);
    Forget(picked.request);
    plan.pixels += picked.request.pixel_cost;
    plan.ids.push_back(picked.request.id);
  }
  plan.batch_size = static_cast<int>(plan.ids.size());
  plan.padded_batch_size = config_.PaddedBatchSize(plan.batch_size);
  return plan;
}

}  // namespace mogserve::scheduler
