#include "pipeline/pipeline.h"

#include <algorithm>
#include <limits>
#include <set>
#include <utility>

#include "common/clock.h"

namespace mogserve::pipeline {

using scheduler::Outcome;

namespace {

double Ms(Duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

// The message a request that ended without running carries.
Status StatusFor(Outcome outcome) {
  switch (outcome) {
    case Outcome::kRejectedQueueFull:
      return ResourceExhausted("queue full: the server is at capacity, retry later");
    case Outcome::kRejectedDeadline:
      return Status(StatusCode::kDeadlineExceeded,
                    "the request's deadline cannot be met; it was not run");
    case Outcome::kRejectedBadInput:
      return InvalidArgument("the request was refused by the scheduler");
    case Outcome::kCancelled:
      return Status(StatusCode::kCancelled, "cancelled");
    case Outcome::kSuperseded:
      return Status(StatusCode::kCancelled, "superseded by a newer frame of the same stream");
    case Outcome::kFailed:
      return Internal("the engine failed");
    case Outcome::kDone:
      break;
  }
  return Status::Ok();
}

// Adds the wall time of one scheduler call to a counter (guarded by the caller's lock), so the
// policy's own cost is measured apart from the pipeline's threads and copies.
class ScopedSchedulerTime {
 public:
  explicit ScopedSchedulerTime(double* seconds) : seconds_(seconds), start_(SteadyClock::now()) {}
  ~ScopedSchedulerTime() {
    *seconds_ += std::chrono::duration<double>(SteadyClock::now() - start_).count();
  }

 private:
  double* seconds_;
  SteadyClock::time_point start_;
};

}  // namespace

// A request from Submit to its end. Owned by entries_; the fields below `stage` are written by
// the thread that holds the request's current stage (pre-process task, worker, post task) and
// handed on through mu_ or the thread pools' queues, which order the accesses.
struct Pipeline::Entry {
  uint64_t id = 0;
  ResultCallback done;
  scheduler::Priority priority = scheduler::Priority::kApi;
  std::string client;
  bool latest_only = false;
  TimePoint arrival{};
  TimePoint deadline = scheduler::kNoDeadline;
  DetectOptions detect;

  Stage stage = Stage::kPreprocessing;  // guarded by mu_
  bool cancel_requested = false;        // guarded by mu_ (kPreprocessing only)
  TimePoint queued_at{};
  PreparedCanvas prepared;
  DetectResult result;  // width, height, timing; faces once post-processed
};

struct Pipeline::Worker {
  int index = 0;
  engine::Engine* engine = nullptr;
  std::condition_variable cv;
  std::optional<scheduler::BatchPlan> job;  // guarded by mu_; set = busy
  TimePoint started_at{};                   // guarded by mu_; when job's Forward began
  engine::CanvasBatch batch;                // the worker's own, reused for every batch
  // The (bucket, padded batch size) shapes this engine has run (guarded by mu_). A shape's first
  // pass is cold - the engine allocates, creates its kernels, faults its pages in (1.75 s for
  // the SSD's 73 ms pass on one AVX2 machine) - so it is not a sample of the latency model:
  // one such sample made every frame of a live stream hopeless for 5 s. The warm-up's shapes
  // (latency_seed, measured on the first engine) are warm there already.
  std::set<std::pair<int, int>> warm_shapes;
  std::thread thread;
};

StatusOr<std::unique_ptr<Pipeline>> Pipeline::Create(std::vector<engine::Engine*> instances,
                                                     const model::OutputDecoder* decoder,
                                                     PipelineOptions options) {
  if (instances.empty()) return InvalidArgument("the pipeline needs at least one engine instance");
  if (decoder == nullptr) return InvalidArgument("the pipeline needs the model's output decoder");
  for (const engine::Engine* e : instances) {
    if (e == nullptr) return InvalidArgument("engine instance is null");
  }
  if (options.preprocess_threads < 0 || options.postprocess_threads < 1) {
    return InvalidArgument("preprocess_threads must be >= 0 and postprocess_threads >= 1");
  }
  if (options.max_preprocessing < 0) return InvalidArgument("max_preprocessing must be >= 0");
  options.scheduler.num_buckets = options.buckets.size();
  for (const LatencySample& s : options.latency_seed) {
    if (s.bucket < 0 || s.bucket >= options.buckets.size() || s.batch_size < 1) {
      return InvalidArgument("latency_seed: bucket " + std::to_string(s.bucket) + " / batch size " +
                             std::to_string(s.batch_size) + " is out of range");
    }
  }
  MOGSERVE_ASSIGN_OR_RETURN(std::unique_ptr<scheduler::BatchPolicy> policy,
                            scheduler::BatchPolicy::Create(options.scheduler));
  for (const LatencySample& s : options.latency_seed) {
    policy->OnBatchCompleted(s.bucket, s.batch_size, s.latency);
  }
  std::unique_ptr<Pipeline> pipeline(
      new Pipeline(std::move(instances), decoder, std::move(options), std::move(policy)));
  pipeline->Start();
  return pipeline;
}

Pipeline::Pipeline(std::vector<engine::Engine*> instances, const model::OutputDecoder* decoder,
                   PipelineOptions options, std::unique_ptr<scheduler::BatchPolicy> policy)
    : engines_(std::move(instances)),
      decoder_(decoder),
      options_(std::move(options)),
      default_detect_(options_.detect ? *options_.detect : decoder_->default_detect_options()),
      time_(options_.time != nullptr ? options_.time : &steady_time_),
      started_at_(time_->Now()),
      policy_(std::move(policy)) {
  // Decoding on the callers' threads is bounded by their number; a pool gets a short backlog.
  max_preprocessing_ = options_.max_preprocessing > 0 ? options_.max_preprocessing
                       : options_.preprocess_threads > 0
                           ? std::max(8, 4 * options_.preprocess_threads)
                           : std::numeric_limits<int>::max();
  stats_.engine_busy_seconds.assign(engines_.size(), 0.0);
}

void Pipeline::Start() {
  if (options_.preprocess_threads > 0) {
    pre_pool_ = std::make_unique<ThreadPool>(options_.preprocess_threads, "pre");
  }
  post_pool_ = std::make_unique<ThreadPool>(options_.postprocess_threads, "post");
  for (size_t i = 0; i < engines_.size(); ++i) {
    auto worker = std::make_unique<Worker>();
    worker->index = static_cast<int>(i);
    worker->engine = engines_[i];
    if (i == 0) {
      for (const LatencySample& s : options_.latency_seed) {
        worker->warm_shapes.emplace(s.bucket, s.batch_size);
      }
    }
    workers_.push_back(std::move(worker));
  }
  for (auto& worker : workers_) {
    Worker* w = worker.get();
    w->thread = std::thread([this, w] { WorkerLoop(w); });
  }
  timer_ = std::thread([this] { TimerLoop(); });
  time_subscription_ = time_->Subscribe([this] { OnTimeAdvanced(); });
}

Pipeline::~Pipeline() {
  Shutdown(ShutdownMode::kDrain);
}

bool Pipeline::HasRoomLocked(SubmitMode mode) const {
  const int64_t preprocessing = stats_.preprocessing;
  if (preprocessing >= max_preprocessing_) return false;
  if (mode == SubmitMode::kRefuse) return true;  // the scheduler checks its own capacity
  // Blocking producers also wait for the queue, counting what is decoding as already queued, so
  // an offline job is never refused.
  const scheduler::SchedulerConfig& c = options_.scheduler;
  const scheduler::QueueStats q = policy_->Stats();
  if (q.total.requests + preprocessing >= c.queue_capacity_requests) return false;
  return c.queue_capacity_bytes == 0 || q.total.bytes < c.queue_capacity_bytes;
}

Pipeline::Entry* Pipeline::AcceptLocked(SubmitRequest& request, ResultCallback done,
                                        SubmitMode mode, std::unique_lock<std::mutex>& lock,
                                        SubmitTicket* ticket, Completions* completions) {
  ++stats_.submitted;
  ticket->id = ++next_id_;
  if (mode == SubmitMode::kBlock) {
    room_cv_.wait(lock, [&] { return !accepting_ || HasRoomLocked(mode); });
  }
  auto owned = std::make_unique<Entry>();
  Entry* entry = owned.get();
  entry->id = ticket->id;
  entry->done = std::move(done);
  entry->arrival = time_->Now();
  entries_.emplace(ticket->id, std::move(owned));
  if (!accepting_) {
    EndLocked(entry, Outcome::kCancelled,
              Status(StatusCode::kCancelled, "the pipeline is shutting down"), completions);
    return nullptr;
  }
  if (!HasRoomLocked(SubmitMode::kRefuse)) {
    EndLocked(entry, Outcome::kRejectedQueueFull,
              ResourceExhausted("queue full: " + std::to_string(max_preprocessing_) +
                                " requests are already waiting to be decoded; retry later"),
              completions);
    return nullptr;
  }
  ticket->accepted = true;
  entry->priority = request.priority;
  entry->client = std::move(request.client);
  entry->latest_only = request.latest_only;
  if (request.timeout > Duration::zero()) entry->deadline = entry->arrival + request.timeout;
  entry->detect = request.detect ? *request.detect : default_detect_;
  return entry;
}

SubmitTicket Pipeline::Submit(SubmitRequest request, ResultCallback done, SubmitMode mode) {
  Completions completions;
  SubmitTicket ticket;
  Entry* entry = nullptr;
  {
    std::unique_lock<std::mutex> lock(mu_);
    entry = AcceptLocked(request, std::move(done), mode, lock, &ticket, &completions);
    if (entry != nullptr) {
      ++stats_.preprocessing;
      if (pre_pool_) ++handoffs_;
    }
  }
  if (!ticket.accepted) {
    RunCompletions(&completions);
    return ticket;
  }
  if (pre_pool_) {
    pre_pool_->Submit([this, entry, input = std::move(request.image)]() mutable {
      Preprocess(entry, std::move(input));
    });
    // Shutdown may destroy the pool once every request has ended, which the task just queued
    // can make happen before Submit returns from the pool: it waits for this hand-off too.
    std::lock_guard<std::mutex> lock(mu_);
    if (--handoffs_ == 0 && entries_.empty()) drain_cv_.notify_all();
  } else {
    Preprocess(entry, std::move(request.image));
  }
  return ticket;
}

SubmitTicket Pipeline::SubmitPrepared(SubmitRequest request, PreparedCanvas prepared,
                                      ResultCallback done, SubmitMode mode) {
  Completions completions;
  SubmitTicket ticket;
  {
    std::unique_lock<std::mutex> lock(mu_);
    Entry* entry = AcceptLocked(request, std::move(done), mode, lock, &ticket, &completions);
    if (entry != nullptr) {
      Admit(entry, std::move(prepared), &completions);
      PumpLocked(&completions);
    } else {
      pool_.Release(std::move(prepared.canvas));
    }
  }
  RunCompletions(&completions);
  return ticket;
}

void Pipeline::Preprocess(Entry* entry, ImageInput input) {
  StatusOr<PreparedCanvas> prepared =
      PrepareCanvas(std::move(input), options_.buckets, options_.decode, pool_);
  Completions completions;
  {
    std::lock_guard<std::mutex> lock(mu_);
    --stats_.preprocessing;
    room_cv_.notify_all();
    if (!prepared.ok()) {
      EndLocked(entry, Outcome::kRejectedBadInput, prepared.status(), &completions);
    } else if (entry->cancel_requested || cancel_on_shutdown_) {
      pool_.Release(std::move(prepared->canvas));
      EndLocked(entry, Outcome::kCancelled, StatusFor(Outcome::kCancelled), &completions);
    } else {
      Admit(entry, std::move(prepared).value(), &completions);
    }
    PumpLocked(&completions);
  }
  RunCompletions(&completions);
}

void Pipeline::Admit(Entry* entry, PreparedCanvas prepared, Completions* done) {
  entry->prepared = std::move(prepared);
  const PreparedCanvas& p = entry->prepared;
  entry->result.width = p.width;
  entry->result.height = p.height;
  entry->result.timing.decode_ms = p.decode_ms;
  entry->result.timing.preprocess_ms = p.preprocess_ms;

  scheduler::Request r;
  r.id = entry->id;
  r.bucket = p.bucket;
  r.pixel_cost = int64_t{p.letterbox.canvas_width} * p.letterbox.canvas_height;
  r.byte_cost = static_cast<int64_t>(p.canvas.size());
  r.priority = entry->priority;
  r.client = entry->client;
  r.latest_only = entry->latest_only;
  r.arrival = entry->arrival;
  r.deadline = entry->deadline;
  const TimePoint now = time_->Now();
  scheduler::AdmitResult admitted;
  {
    ScopedSchedulerTime timed(&stats_.scheduler_seconds);
    admitted = policy_->Admit(r, now);
  }
  if (!admitted.accepted) {
    EndLocked(entry, admitted.rejection, StatusFor(admitted.rejection), done);
    return;
  }
  entry->stage = Stage::kQueued;
  entry->queued_at = now;
  if (admitted.superseded) EndIdLocked(*admitted.superseded, Outcome::kSuperseded, done);
}

void Pipeline::PumpLocked(Completions* done) {
  while (true) {
    scheduler::EngineState engines;
    Worker* idle = nullptr;
    for (auto& w : workers_) {
      if (w->job) {
        ++engines.busy;
      } else {
        ++engines.idle;
        if (idle == nullptr) idle = w.get();
      }
    }
    const TimePoint now = time_->Now();
    scheduler::Decision d;
    {
      ScopedSchedulerTime timed(&stats_.scheduler_seconds);
      d = policy_->Next(now, engines);
    }
    for (const scheduler::Ended& e : d.ended) EndIdLocked(e.id, e.outcome, done);
    if (d.kind != scheduler::Decision::Kind::kDispatch) {
      const TimePoint wake =
          d.kind == scheduler::Decision::Kind::kWait ? d.wake_at : TimePoint::max();
      if (wake != next_wake_) {
        next_wake_ = wake;
        timer_cv_.notify_one();
      }
      return;
    }
    for (uint64_t id : d.plan.ids) {
      Entry* entry = entries_.at(id).get();
      entry->stage = Stage::kRunning;
      entry->result.timing.queue_ms = Ms(now - entry->queued_at);
    }
    stats_.running += d.plan.batch_size;
    idle->job = std::move(d.plan);
    idle->cv.notify_one();
    room_cv_.notify_all();
  }
}

void Pipeline::WorkerLoop(Worker* w) {
  while (true) {
    scheduler::BatchPlan plan;
    {
      std::unique_lock<std::mutex> lock(mu_);
      w->cv.wait(lock, [&] { return w->job.has_value() || stopping_; });
      if (!w->job) return;
      plan = *w->job;
      const CanvasShape shape = options_.buckets.shape(plan.bucket);
      engine::CanvasBatch& batch = w->batch;
      batch.width = shape.width;
      batch.height = shape.height;
      batch.canvases.clear();
      batch.geometry.clear();
      for (uint64_t id : plan.ids) {
        const Entry& entry = *entries_.at(id);
        batch.canvases.push_back(entry.prepared.canvas.data());
        batch.geometry.push_back(entry.prepared.letterbox);
      }
      batch.padded_batch_size = plan.padded_batch_size;
    }
    RunBatch(w, plan);
  }
}

void Pipeline::RunBatch(Worker* w, const scheduler::BatchPlan& plan) {
  if (options_.observer != nullptr) options_.observer->OnBatchStarted(w->index, plan);
  const TimePoint start = time_->Now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    w->started_at = start;
  }
  StatusOr<engine::BatchOutputs> outputs = w->engine->Forward(w->batch);
  const Duration latency = time_->Now() - start;

  BatchReport report;
  report.instance = w->index;
  report.bucket = plan.bucket;
  report.batch_size = plan.batch_size;
  report.padded_batch_size = std::max(plan.padded_batch_size, plan.batch_size);
  report.inference_ms = Ms(latency);
  report.ok = outputs.ok();
  if (outputs.ok() && outputs->batch < plan.batch_size) {
    report.ok = false;
    outputs = Internal("the engine returned " + std::to_string(outputs->batch) + " rows for " +
                       std::to_string(plan.batch_size) + " canvases");
  }

  std::vector<Entry*> rows;
  Completions completions;
  {
    std::lock_guard<std::mutex> lock(mu_);
    FinishBatchLocked(w, plan, report, latency, outputs.status(), &rows, &completions);
  }
  if (options_.observer != nullptr) options_.observer->OnBatchFinished(report);
  RunCompletions(&completions);
  if (report.ok) {
    SchedulePostprocess(std::move(rows),
                        std::make_shared<const engine::BatchOutputs>(std::move(outputs).value()));
  }
}

void Pipeline::FinishBatchLocked(Worker* w, const scheduler::BatchPlan& plan,
                                 const BatchReport& report, Duration latency, const Status& error,
                                 std::vector<Entry*>* rows, Completions* done) {
  w->job.reset();
  w->started_at = TimePoint{};
  const double seconds = std::chrono::duration<double>(latency).count();
  stats_.engine_busy_seconds[w->index] += seconds;
  stats_.inference_seconds += seconds;
  ++stats_.batches;
  stats_.batched_requests += plan.batch_size;
  stats_.padded_rows += report.padded_batch_size - plan.batch_size;
  if (static_cast<int>(stats_.batch_size_counts.size()) <= plan.batch_size) {
    stats_.batch_size_counts.resize(plan.batch_size + 1, 0);
  }
  ++stats_.batch_size_counts[plan.batch_size];
  const bool cold =
      report.ok && w->warm_shapes.emplace(plan.bucket, report.padded_batch_size).second;
  if (cold) {
    ++stats_.cold_batches;
  } else if (report.ok) {
    ScopedSchedulerTime timed(&stats_.scheduler_seconds);
    policy_->OnBatchCompleted(plan.bucket, report.padded_batch_size, latency);
  } else {
    ++stats_.failed_batches;
  }
  for (uint64_t id : plan.ids) {
    Entry* entry = entries_.at(id).get();
    // The engine copied the canvas into its staging buffer: the buffer can serve the next
    // request now, unless a face stage reads it after decoding.
    if (options_.face_stage == nullptr || !report.ok) {
      pool_.Release(std::move(entry->prepared.canvas));
      entry->prepared.canvas = {};
    }
    entry->result.timing.inference_ms = report.inference_ms;
    entry->result.timing.batch_size = plan.batch_size;
    if (report.ok) {
      entry->stage = Stage::kPostprocessing;
      rows->push_back(entry);
    } else {
      --stats_.running;
      EndLocked(entry, Outcome::kFailed, error, done);
    }
  }
  PumpLocked(done);
}

// One task per post thread (not per row): the rows of a batch are split into contiguous runs.
void Pipeline::SchedulePostprocess(std::vector<Entry*> rows,
                                   std::shared_ptr<const engine::BatchOutputs> outputs) {
  const size_t tasks = std::min(rows.size(), static_cast<size_t>(post_pool_->size()));
  auto shared_rows = std::make_shared<const std::vector<Entry*>>(std::move(rows));
  for (size_t t = 0; t < tasks; ++t) {
    const size_t begin = shared_rows->size() * t / tasks;
    const size_t end = shared_rows->size() * (t + 1) / tasks;
    post_pool_->Submit([this, shared_rows, begin, end, outputs] {
      for (size_t row = begin; row < end; ++row) {
        Postprocess((*shared_rows)[row], outputs, static_cast<int>(row));
      }
    });
  }
}

void Pipeline::Postprocess(Entry* entry, const std::shared_ptr<const engine::BatchOutputs>& outputs,
                           int row) {
  const auto start = SteadyClock::now();
  entry->result.faces =
      decoder_->Postprocess(outputs->rows_of(row, entry->prepared.letterbox), entry->detect);
  Status stage = Status::Ok();
  if (options_.face_stage != nullptr) {
    if (!entry->result.faces.empty()) {
      stage = options_.face_stage->Apply(entry->prepared.canvas, entry->prepared.letterbox,
                                         entry->result.faces);
    }
    pool_.Release(std::move(entry->prepared.canvas));
    entry->prepared.canvas = {};
  }
  entry->result.timing.postprocess_ms = MillisecondsSince(start);
  Completions completions;
  {
    std::lock_guard<std::mutex> lock(mu_);
    --stats_.running;
    if (stage.ok()) {
      EndLocked(entry, Outcome::kDone, Status::Ok(), &completions);
    } else {
      EndLocked(entry, Outcome::kFailed, std::move(stage), &completions);
    }
  }
  RunCompletions(&completions);
}

void Pipeline::EndIdLocked(uint64_t id, Outcome outcome, Completions* done) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  Entry* entry = it->second.get();
  pool_.Release(std::move(entry->prepared.canvas));
  entry->prepared.canvas = {};
  EndLocked(entry, outcome, StatusFor(outcome), done);
}

void Pipeline::EndLocked(Entry* entry, Outcome outcome, Status status, Completions* done) {
  auto it = entries_.find(entry->id);
  std::unique_ptr<Entry> owned = std::move(it->second);
  entries_.erase(it);
  ++stats_.outcomes[static_cast<int>(outcome)];
  Completion c;
  c.done = std::move(owned->done);
  c.result.id = owned->id;
  c.result.outcome = outcome;
  c.result.status = std::move(status);
  c.result.result = std::move(owned->result);
  c.result.total_ms = Ms(time_->Now() - owned->arrival);
  if (!owned->prepared.canvas.empty()) pool_.Release(std::move(owned->prepared.canvas));
  done->push_back(std::move(c));
  room_cv_.notify_all();
  if (entries_.empty()) drain_cv_.notify_all();
}

void Pipeline::RunCompletions(Completions* done) {
  for (Completion& c : *done) {
    if (options_.observer != nullptr) options_.observer->OnRequestEnded(c.result);
    if (c.done) c.done(std::move(c.result));
  }
  done->clear();
}

bool Pipeline::Cancel(uint64_t id) {
  Completions completions;
  bool cancelled = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(id);
    if (it == entries_.end()) return false;
    Entry* entry = it->second.get();
    if (entry->stage == Stage::kPreprocessing) {
      cancelled = !entry->cancel_requested;
      entry->cancel_requested = true;
    } else if (entry->stage == Stage::kQueued && policy_->Cancel(id)) {
      EndIdLocked(id, Outcome::kCancelled, &completions);
      PumpLocked(&completions);
      cancelled = true;
    }
  }
  RunCompletions(&completions);
  return cancelled;
}

void Pipeline::TimerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    if (next_wake_ != TimePoint::max() && time_->Now() >= next_wake_) {
      next_wake_ = TimePoint::max();
      Completions completions;
      PumpLocked(&completions);
      lock.unlock();
      RunCompletions(&completions);
      lock.lock();
      continue;
    }
    time_->WaitUntil(timer_cv_, lock, next_wake_);
  }
}

void Pipeline::OnTimeAdvanced() {
  Completions completions;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    PumpLocked(&completions);
  }
  RunCompletions(&completions);
}

void Pipeline::Shutdown(ShutdownMode mode) {
  std::call_once(shutdown_once_, [&] {
    Completions completions;
    {
      std::unique_lock<std::mutex> lock(mu_);
      accepting_ = false;
      policy_->SetDraining(true);
      if (mode == ShutdownMode::kCancel) {
        cancel_on_shutdown_ = true;
        for (const scheduler::Ended& e : policy_->CancelAll()) {
          EndIdLocked(e.id, e.outcome, &completions);
        }
      }
      PumpLocked(&completions);
      room_cv_.notify_all();
    }
    RunCompletions(&completions);
    {
      std::unique_lock<std::mutex> lock(mu_);
      drain_cv_.wait(lock, [&] { return entries_.empty() && handoffs_ == 0; });
    }
    // Every request has ended. The workers go first (they may still be handing their last rows
    // to the post pool), then the pools, which run their last callbacks before joining.
    time_->Unsubscribe(time_subscription_);
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
      for (auto& w : workers_) w->cv.notify_one();
      timer_cv_.notify_all();
    }
    for (auto& w : workers_) w->thread.join();
    timer_.join();
    pre_pool_.reset();
    post_pool_.reset();
  });
}

int64_t Pipeline::ReleaseIdleMemory() {
  int64_t largest = 0;
  for (int b = 0; b < options_.buckets.size(); ++b) {
    const auto shape = options_.buckets.shape(b);
    largest = std::max<int64_t>(largest, int64_t{3} * shape.width * shape.height);
  }
  int64_t freed = pool_.Trim(largest * options_.scheduler.max_batch_size * (instances() + 1));
  for (engine::Engine* e : engines_) freed += e->ReleaseCachedMemory();
  return freed;
}

PipelineStats Pipeline::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  PipelineStats s = stats_;
  s.queue = policy_->Stats();
  const TimePoint now = time_->Now();
  s.uptime_seconds = std::chrono::duration<double>(now - started_at_).count();
  // Count the running batches' time so far, so busy ratios over short windows stay exact.
  for (const auto& w : workers_) {
    if (w->job && w->started_at != TimePoint{} && now > w->started_at) {
      s.engine_busy_seconds[w->index] += std::chrono::duration<double>(now - w->started_at).count();
    }
  }
  const CanvasPool::Stats pool = pool_.stats();
  s.canvas_allocations = pool.allocations;
  s.canvas_acquisitions = pool.acquisitions;
  return s;
}

}  // namespace mogserve::pipeline
