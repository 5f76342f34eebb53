// BatchPolicy: the scheduler. Decides which queued requests run next, as one batch for one
// engine, and when to wait instead. Pure policy (DESIGN.md §3): no threads, no clock reads, no
// tensors; time is always an argument, so tests inject it and the pipeline passes steady_clock.
//
// Thread-safety: none. The pipeline wraps one instance in its mutex and calls it under the lock,
// on whichever thread the event happens (there is no dispatcher thread):
//   Admit() after a request is pre-processed (a pre-process thread, or the Submit caller's),
//   Cancel() from Pipeline::Cancel (a client gone, a timeout), OnBatchCompleted() from an engine
//   worker; after each of these, and when the pipeline's timer thread reaches the last
//   Decision::wake_at, the pipeline calls Next() until it stops returning a batch to dispatch.
//
// Semantics (each decision, and why):
// - Queues: one BucketQueue per shape bucket; inside it a class per priority, inside a class a
//   round-robin ring of clients, FIFO per client (fairness bound: see bucket_queue.h).
// - Starvation guard between classes: aging. Each aging_step that a class's oldest request has
//   waited lifts the class one level (bulk waiting 2 steps competes as interactive); at equal
//   levels the older request wins. So a request of class c is overtaken by newer higher-class
//   work for at most c·aging_step, after which service is by arrival order among the lifted.
// - Which bucket: among buckets that are ready to dispatch (per policy, below), the one whose
//   next pick is most urgent by the same (effective class, oldest arrival) key. Aging makes that
//   key reach any bucket's old work eventually, so no bucket starves.
// - Deadlines: effective deadline = min(request deadline, arrival + default_timeout). With
//   est1 = the bucket's LatencyModel estimate for a batch of PaddedBatchSize(1), a request is
//   hopeless when now + est1 > deadline (finishing exactly at the deadline counts as met): refused
//   at admission (rejected_deadline) or, if queued, removed by the next Next() call before any
//   batch is formed, so it never appears in a plan. Optimistic on purpose: only requests that would
//   be late even running alone are shed; the waiting policies stop waiting at earliest_deadline -
//   estimate(target batch) instead.
//   A stale estimate cannot lock a bucket out: the estimate only moves when a batch of the
//   bucket completes, so if every request has been refused as hopeless for kStaleEstimateAfter
//   (5 s) with no batch completing, the next one is admitted as a probe (when the bucket is
//   empty), spared by admission and expiry, and the next completed batch of the bucket starts
//   the model afresh: it measures the engine again (an
//   estimate learnt while the machine was contended would otherwise refuse that bucket's work
//   for ever). At most one probe per bucket at a time and per 5 s of refusals.
// - Admission order: bad input, then deadline, then capacity (counted as if the superseded frame
//   were already gone), then supersede. A refused request changes nothing, so a latest_only
//   frame that is itself refused does not drop the queued older frame.
// - Batch forming: picks in urgency order until max size, or until the next pick would exceed
//   max_batch_pixels (it stops rather than skip ahead, so the ring order, and with it the
//   fairness bound, holds). A first pick larger than max_batch_pixels runs alone.
// - Policies, when an engine is idle (with none idle, Next only expires and says when to wake):
//   naive      the globally oldest request, batch of 1, never waits.
//   dynamic    a bucket is ready when it holds a full batch (size or pixels), or reaches a
//              preferred size (then the largest preferred size that fits is sent), or its oldest
//              request has waited max_delay, or the earliest deadline would be missed by waiting.
//   continuous ready at once if any engine is busy (work piles up behind it, so the next batch
//              grows by itself), or the target batch is queued, or the oldest request arrived
//              while an engine was busy (it already waited behind a batch: an engine that frees
//              up takes it at once); only work that arrived to all-idle engines is held, until
//              oldest arrival + max_delay or the deadline bound.
//   adaptive   continuous until the bucket's LatencyModel is fitted; then, with every engine idle,
//              it holds only while waiting raises throughput: with arrival rate r and model
//              a·n + b, the throughput of (wait w, then run n + r·w) grows with w iff r·b > n, so
//              it holds while the queue is below r·b, at most b from the oldest arrival, and
//              within latency_target for the oldest request and the deadline bound.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "mogserve/status.h"
#include "scheduler/batch_plan.h"
#include "scheduler/bucket_queue.h"
#include "scheduler/latency_model.h"
#include "scheduler/outcome.h"
#include "scheduler/request.h"
#include "scheduler/scheduler_config.h"

namespace mogserve::scheduler {

// What Admit did with a request.
struct AdmitResult {
  bool accepted = false;
  Outcome rejection = Outcome::kDone;  // when !accepted: the outcome to end the request with
  // When accepted and it replaced a queued latest_only frame of the same client: that frame's id
  // (end it as superseded).
  std::optional<uint64_t> superseded;
};

class BatchPolicy {
 public:
  // InvalidArgument (naming the field) when the config does not validate.
  static StatusOr<std::unique_ptr<BatchPolicy>> Create(const SchedulerConfig& config);

  // Queues `request` or refuses it at once; see the admission order above.
  AdmitResult Admit(const Request& request, TimePoint now);
  // Removes a queued request (it ends as cancelled). False if it is not queued: unknown,
  // already ended, or already dispatched in a plan.
  bool Cancel(uint64_t id);
  // Removes every queued request as cancelled (shutdown without drain).
  std::vector<Ended> CancelAll();

  // The next decision at `now`. Expires hopeless requests first (Decision::ended).
  Decision Next(TimePoint now, const EngineState& engines);

  // Feedback from an engine: a batch of `bucket` ran `padded_batch_size` rows in `latency`.
  // Also the way to seed the model from the start-up warm-up measurements.
  void OnBatchCompleted(int bucket, int padded_batch_size, Duration latency);

  // No more admissions will come (the pipeline is draining for shutdown): waiting cannot grow a
  // batch any more, so every non-empty bucket becomes ready at once, whatever the policy.
  void SetDraining(bool draining) { draining_ = draining; }

  QueueStats Stats() const { return stats_; }
  int64_t size() const { return stats_.total.requests; }
  bool IsQueued(uint64_t id) const { return where_.count(id) > 0; }
  const SchedulerConfig& config() const { return config_; }
  const LatencyModel& latency_model(int bucket) const { return models_[bucket]; }
  // The batch-1 latency estimate behind deadline admission and expiry.
  Duration SingleRequestEstimate(int bucket) const;

 private:
  // Exponentially weighted mean gap between admissions to one bucket (adaptive's arrival rate).
  struct ArrivalRate {
    TimePoint last{};
    bool has_last = false;
    double mean_gap_us = 0.0;  // 0 = unknown
  };

  explicit BatchPolicy(const SchedulerConfig& config);

  std::optional<Outcome> CheckAdmission(const Request& request, TimePoint deadline, TimePoint now,
                                        std::optional<uint64_t> superseded, bool probe) const;
  // Whether a hopeless request to `bucket` is admitted as the probe of a stale estimate.
  bool ProbeDue(int bucket, TimePoint now) const;
  bool IsProbe(int bucket, uint64_t id) const { return probe_[bucket] == id; }
  void Enqueue(QueuedRequest queued, TimePoint now);
  QueuedRequest Dequeue(int bucket, uint64_t id);
  void Forget(const Request& request);  // bookkeeping for a request leaving the queues
  void Account(const Request& request, int sign);

  void ExpireHopeless(TimePoint now, std::vector<Ended>* ended);
  TimePoint NextExpiry() const;
  bool Hopeless(int bucket, TimePoint deadline, TimePoint now) const;

  // The earliest time bucket `b` may dispatch (<= now: ready).
  TimePoint ReadyAt(int b, TimePoint now, const EngineState& engines) const;
  TimePoint HoldUntil(int b, TimePoint latest_by_policy) const;
  TimePoint AdaptiveReadyAt(int b, TimePoint now) const;
  bool HasFullBatch(int b) const;
  int BatchLimit(int b) const;
  BatchPlan FormBatch(int b, TimePoint now, int limit);

  SchedulerConfig config_;
  std::vector<BucketQueue> buckets_;
  std::vector<LatencyModel> models_;
  std::vector<ArrivalRate> rates_;
  std::unordered_map<uint64_t, int> where_;           // queued id -> bucket
  std::unordered_map<std::string, uint64_t> latest_;  // client -> its queued latest_only frame
  // Per bucket: since when every admission has been refused as hopeless with no batch
  // completing (nullopt: not refusing), and the probe admitted in spite of that, if queued.
  std::vector<std::optional<TimePoint>> refusing_since_;
  std::vector<std::optional<uint64_t>> probe_;
  std::vector<bool> relearn_;  // a probe left the queue: its batch's sample replaces the model's
  uint64_t next_seq_ = 0;
  bool draining_ = false;
  // The last `now` at which Next saw a busy engine (continuous: work that arrived before it
  // queued behind a batch).
  TimePoint last_busy_ = TimePoint::min();
  QueueStats stats_;
};

}  // namespace mogserve::scheduler
