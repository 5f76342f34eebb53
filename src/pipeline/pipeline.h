// Pipeline: the asynchronous request path of DESIGN.md §2 — decode/pre-process pool → BatchPolicy
// (the scheduler) → one worker thread per engine instance → post-process pool → the request's
// callback. Policy apart from mechanism: the BatchPolicy decides what runs next and when; the
// Pipeline only executes its decisions, owns the threads and buffers, and ends every request
// exactly once.
//
// Threads (all joined by Shutdown / the destructor):
//   "pre-<i>"   preprocess_threads decoders (0: requests are decoded on the Submit caller's thread)
//   "engine-<i>" one per engine instance: builds the CanvasBatch, runs Forward, hands the rows to
//               the post pool
//   "post-<i>"  postprocess_threads running the model's decoder (model::OutputDecoder) on each
//               row and the callbacks
//   "timer"     wakes the scheduler when a Decision::kWait comes due
// Every scheduling decision is taken under the one pipeline mutex, right when an event happens:
// an admission, a cancel, a batch completion, or the timer. So an engine that frees up gets its
// next batch in the same critical section (continuous batching never leaves it idle while work
// waits), and no dispatcher thread has to be woken on the hot path.
//
// Memory is bounded: at most max_preprocessing requests are between Submit and the scheduler
// (holding their encoded bytes), the scheduler's queue is bounded in count and bytes, and at most
// one batch per instance runs; a Submit beyond that is refused at once (rejected_queue_full) or,
// in SubmitMode::kBlock, waits for room. Canvases live in a CanvasPool and are reused.
//
// Time: every timestamp the scheduler sees comes from the TimeSource (tests inject a manual one);
// decode/pre/post-process durations are CPU work measured on the steady clock.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/thread_pool.h"
#include "engine/engine.h"
#include "image/decode.h"
#include "model/output_decoder.h"
#include "mogserve/result.h"
#include "mogserve/status.h"
#include "pipeline/canvas_pool.h"
#include "pipeline/face_stage.h"
#include "pipeline/pipeline_observer.h"
#include "pipeline/pipeline_stats.h"
#include "pipeline/prepared_canvas.h"
#include "pipeline/shape_buckets.h"
#include "pipeline/time_source.h"
#include "scheduler/batch_policy.h"
#include "scheduler/scheduler_config.h"

namespace mogserve::pipeline {

// One batch latency measured before serving (BufferPlan's warm-up), to seed the scheduler's
// latency model so deadline checks work from the first request.
struct LatencySample {
  int bucket = 0;
  int batch_size = 0;  // rows run
  Duration latency{};
};

struct PipelineOptions {
  ShapeBuckets buckets = ShapeBuckets::FixedSquare(512);
  // The batching policy; num_buckets is overwritten with buckets.size().
  scheduler::SchedulerConfig scheduler;
  std::vector<LatencySample> latency_seed;
  int preprocess_threads = 1;   // 0 = decode on the thread that calls Submit
  int postprocess_threads = 1;  // >= 1
  // Requests submitted but not yet admitted to the scheduler (decoding or waiting for a
  // decoder); each holds its encoded bytes. 0 = 4 x preprocess_threads, at least 8 (no limit
  // when decoding on the callers' threads: their number bounds it).
  int max_preprocessing = 0;
  image::DecodeOptions decode;
  std::optional<DetectOptions> detect;  // nullopt = the decoder's defaults
  // Run on each image's decoded faces before its result is delivered (the landmark net); the
  // canvas is then held until post-processing instead of returning to the pool after the
  // forward pass. Not owned; must outlive the pipeline. nullptr = none.
  const FaceStage* face_stage = nullptr;
  // Not owned; must outlive the pipeline. nullptr = the steady clock / no observer.
  TimeSource* time = nullptr;
  PipelineObserver* observer = nullptr;
};

struct SubmitRequest {
  ImageInput image;
  scheduler::Priority priority = scheduler::Priority::kApi;
  std::string client;        // fairness / latest_only key (API key, connection, stream id)
  bool latest_only = false;  // a newer frame of this client supersedes this one while queued
  // 0 = the server's default_timeout; otherwise arrival + timeout, never beyond the default.
  Duration timeout = Duration::zero();
  std::optional<DetectOptions> detect;  // nullopt = the pipeline's defaults
};

// The callback gets the request's one and only result. It runs on a pipeline thread (or on the
// Submit / Cancel caller's thread for requests that end there), never under the pipeline's lock,
// so it may call Submit or Cancel.
using ResultCallback = std::function<void(RequestResult)>;

enum class SubmitMode {
  kRefuse,  // when the pipeline is full, end the request at once as rejected_queue_full
  kBlock,   // wait until there is room (offline jobs); only shutdown ends the wait
};

struct SubmitTicket {
  uint64_t id = 0;        // for Cancel; ids are unique per pipeline, starting at 1
  bool accepted = false;  // false: the request already ended (callback called before return)
};

enum class ShutdownMode {
  kDrain,   // finish every request already accepted
  kCancel,  // end queued and decoding requests as cancelled; running batches still finish
};

class Pipeline {
 public:
  // `instances` (not owned, at least one) must outlive the pipeline; instance i gets worker i.
  // `decoder` (not owned, must outlive it too) turns their output rows into faces: the model
  // the instances run (engine::Engine::model()). InvalidArgument when the options do not
  // validate (the scheduler's message names the field).
  static StatusOr<std::unique_ptr<Pipeline>> Create(std::vector<engine::Engine*> instances,
                                                    const model::OutputDecoder* decoder,
                                                    PipelineOptions options);
  // Shutdown(kDrain) if not already shut down.
  ~Pipeline();

  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  // Hands a request to the pipeline. `done` is called exactly once: before Submit returns when
  // the request is refused at once (queue full, shutting down), else later from a pipeline
  // thread. Thread-safe.
  SubmitTicket Submit(SubmitRequest request, ResultCallback done,
                      SubmitMode mode = SubmitMode::kRefuse);
  // The same for a picture already in its canvas (a video frame the caller scaled into a canvas
  // of canvas_pool()): it goes straight to the scheduler, taking no pre-processing slot and no
  // decoder. request.image is ignored. The canvas returns to the pool whatever the outcome.
  SubmitTicket SubmitPrepared(SubmitRequest request, PreparedCanvas prepared, ResultCallback done,
                              SubmitMode mode = SubmitMode::kRefuse);
  // Cancels a request that has not started running: a queued one ends as cancelled now, one still
  // decoding ends as cancelled when its decode finishes. False when it is unknown, already ended,
  // or already in a batch (too late). Thread-safe.
  bool Cancel(uint64_t id);
  // Stops accepting requests (later Submits end as cancelled), ends or drains the accepted ones
  // per `mode`, and joins every thread. Idempotent; the first call's mode wins. Thread-safe, but
  // must not be called from a callback.
  void Shutdown(ShutdownMode mode = ShutdownMode::kDrain);

  PipelineStats Stats() const;
  // For an idle server: frees the canvases a burst left in the pool beyond what the instances'
  // batches need (the largest bucket × max batch size × (instances + 1)) and the engines' cached
  // memory; returns the bytes freed. Under load both are kept, so that nothing is allocated.
  // Thread-safe.
  int64_t ReleaseIdleMemory();
  const ShapeBuckets& buckets() const { return options_.buckets; }
  // Where SubmitPrepared's canvases come from (and return to). Thread-safe.
  CanvasPool& canvas_pool() { return pool_; }
  const scheduler::SchedulerConfig& scheduler_config() const { return options_.scheduler; }
  int instances() const { return static_cast<int>(workers_.size()); }
  // The per-image settings of a request that brings none (PipelineOptions::detect).
  const DetectOptions& default_detect() const { return default_detect_; }

 private:
  enum class Stage { kPreprocessing, kQueued, kRunning, kPostprocessing };
  struct Entry;
  struct Worker;
  struct Completion {
    ResultCallback done;
    RequestResult result;
  };
  using Completions = std::vector<Completion>;

  Pipeline(std::vector<engine::Engine*> instances, const model::OutputDecoder* decoder,
           PipelineOptions options, std::unique_ptr<scheduler::BatchPolicy> policy);
  void Start();

  // The part of Submit before pre-processing: waits for room (kBlock), creates the entry and
  // accepts or ends it; requires mu_ (held by `lock`). nullptr when it ended at once.
  Entry* AcceptLocked(SubmitRequest& request, ResultCallback done, SubmitMode mode,
                      std::unique_lock<std::mutex>& lock, SubmitTicket* ticket,
                      Completions* completions);
  void Preprocess(Entry* entry, ImageInput input);
  void Admit(Entry* entry, PreparedCanvas prepared, Completions* done);  // requires mu_
  void WorkerLoop(Worker* worker);
  void RunBatch(Worker* worker, const scheduler::BatchPlan& plan);
  // Records a finished forward pass, ends its requests if it failed, and dispatches the next
  // batch; requires mu_. `rows` receives the entries to post-process.
  void FinishBatchLocked(Worker* w, const scheduler::BatchPlan& plan, const BatchReport& report,
                         Duration latency, const Status& error, std::vector<Entry*>* rows,
                         Completions* done);
  void SchedulePostprocess(std::vector<Entry*> rows,
                           std::shared_ptr<const engine::BatchOutputs> outputs);
  void Postprocess(Entry* entry, const std::shared_ptr<const engine::BatchOutputs>& outputs,
                   int row);
  void TimerLoop();
  void OnTimeAdvanced();

  // Asks the policy for decisions until none dispatches; requires mu_.
  void PumpLocked(Completions* done);
  // Ends `entry` with `outcome`; requires mu_. The callback goes into `done`, to be run by
  // RunCompletions once the lock is released.
  void EndLocked(Entry* entry, scheduler::Outcome outcome, Status status, Completions* done);
  void EndIdLocked(uint64_t id, scheduler::Outcome outcome, Completions* done);
  void RunCompletions(Completions* done);
  bool HasRoomLocked(SubmitMode mode) const;

  const std::vector<engine::Engine*> engines_;
  const model::OutputDecoder* const decoder_;
  const PipelineOptions options_;
  const DetectOptions default_detect_;
  TimeSource* const time_;
  SteadyTimeSource steady_time_;
  const TimePoint started_at_;
  int max_preprocessing_ = 0;
  CanvasPool pool_;

  mutable std::mutex mu_;
  std::unique_ptr<scheduler::BatchPolicy> policy_;                // guarded by mu_
  std::unordered_map<uint64_t, std::unique_ptr<Entry>> entries_;  // guarded by mu_
  uint64_t next_id_ = 0;                                          // guarded by mu_
  int handoffs_ = 0;       // Submits between queueing a task on pre_pool_ and returning; mu_
  bool accepting_ = true;  // guarded by mu_
  bool cancel_on_shutdown_ = false;         // guarded by mu_
  bool stopping_ = false;                   // threads should exit; guarded by mu_
  TimePoint next_wake_ = TimePoint::max();  // guarded by mu_
  PipelineStats stats_;               // counters only (snapshots fill the rest); guarded by mu_
  std::condition_variable room_cv_;   // preprocessing or queue space freed, or shutdown
  std::condition_variable drain_cv_;  // entries_ became empty
  std::condition_variable timer_cv_;  // next_wake_ changed, or stopping_

  std::vector<std::unique_ptr<Worker>> workers_;
  std::unique_ptr<ThreadPool> pre_pool_;
  std::unique_ptr<ThreadPool> post_pool_;
  std::thread timer_;
  uint64_t time_subscription_ = 0;
  std::once_flag shutdown_once_;
};

}  // namespace mogserve::pipeline
