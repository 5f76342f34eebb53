// The in-process load drivers the pipeline benchmarks share (`bench pipeline`, `bench report`):
// a simulated engine, the setup of a measured point (engines, shape buckets, the warm-up's
// batch plan), closed-loop, open-loop and camera-stream drivers over a fresh Pipeline per point,
// and the per-point statistics (throughput, latency, batch size, engine busy ratio, memory).
// The HTTP `bench serve` drives the server with bench/load_generator.h instead.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench/latency_stats.h"
#include "engine/engine.h"
#include "image/image.h"
#include "pipeline/buffer_plan.h"
#include "pipeline/pipeline.h"
#include "pipeline/shape_buckets.h"
#include "scheduler/scheduler_config.h"

namespace mogserve::bench {

// An engine that takes intercept + n x per_image milliseconds per batch of n rows, sleeping (so
// the CPU stays free for the pipeline's own threads); it runs no model, and DecoderOf gives it
// one that finds no faces. `precision` is only a label for reports.
class SimulatedEngine final : public engine::Engine {
 public:
  SimulatedEngine(double intercept_ms, double per_image_ms, std::string precision = "-");
  const engine::EngineInfo& info() const override { return info_; }
  std::shared_ptr<const model::FaceModel> model() const override { return nullptr; }
  int64_t MacsPerImage(int, int) const override { return 0; }
  StatusOr<engine::BatchOutputs> Forward(const engine::CanvasBatch& batch) override;
  engine::MemoryStats Memory() const override { return {}; }
  void ResetPeakMemory() override {}
  StatusOr<std::unique_ptr<engine::Engine>> NewInstance() const override;

 private:
  double intercept_ms_;
  double per_image_ms_;
  engine::EngineInfo info_;
};

// The decoder of the model `engine` runs; for an engine without one (SimulatedEngine), a decoder
// that finds no faces.
const model::OutputDecoder& DecoderOf(const engine::Engine& engine);

// SchedulerConfig's max_delay in milliseconds: the default every bench starts from, as serve does.
inline double DefaultMaxDelayMs() {
  return std::chrono::duration<double, std::milli>(scheduler::SchedulerConfig{}.max_delay).count();
}

// CPU time (user + system) of the process so far, in seconds.
double CpuSeconds();

// What a point runs on: the engines, their input geometry and the warm-up latencies.
struct Setup {
  std::vector<engine::Engine*> engines;
  pipeline::ShapeBuckets buckets = pipeline::ShapeBuckets::FixedSquare(512);
  std::vector<pipeline::LatencySample> seed;
  std::optional<pipeline::BufferPlan> plan;  // caps batches per bucket (the knee), as serve does
  // The decoded pictures requests carry, in turn (at least one).
  std::vector<image::Image> pictures;
  int preprocess_threads = 1;
  int postprocess_threads = 1;
  int max_batch_size = scheduler::SchedulerConfig{}.max_batch_size;
  double max_delay_ms = DefaultMaxDelayMs();
};

// The engine's capacity as the warm-up measured it.
struct PlannedCapacity {
  double per_s = 0;         // best images/s over the measured batch sizes
  int batch = 0;            // ... reached at this batch size
  double batch1_per_s = 0;  // images/s at batch 1 (what the naive policy can serve)
  int knee_batch = 0;       // the throughput knee's batch cap
  std::string description;  // BufferPlan::Describe()
};

// Runs the BufferPlan warm-up on setup->engines[0] over batch sizes 1, 2, 4, ... up to
// setup->max_batch_size, for the bucket of a picture_width x picture_height picture; sets
// setup->seed and setup->plan. `parallel_instances`: engine instances that run truly in
// parallel (the simulation), multiplying the capacity.
StatusOr<PlannedCapacity> PlanBatches(Setup* setup, int picture_width, int picture_height,
                                      double batch_knee, int parallel_instances);

StatusOr<std::unique_ptr<pipeline::Pipeline>> MakePipeline(const Setup& setup,
                                                           scheduler::Policy policy);

struct PipelineBenchRow {
  std::string policy;
  std::string mode;     // "closed" or "open"
  int concurrency = 0;  // closed loop
  double load = 0;      // open loop: offered rate / capacity
  double offered_per_s = 0;
  double window_s = 0;   // the measured window (after the 20% warm-up)
  int64_t done = 0;      // completed in the measured window
  int64_t rejected = 0;  // any rejection (queue full, deadline)
  double throughput_per_s = 0;
  LatencyStats latency;  // submit → callback, completed requests
  double mean_batch_size = 0;
  double busy_ratio = 0;                // engine time in forward passes / wall time
  double scheduler_us_per_request = 0;  // time inside the policy's calls, per ended request
  // Over the whole point: the engine allocator's peak (instance 0's counters; 0 where the
  // engine keeps none) and the process's peak RSS (0 when it could not be reset or read).
  int64_t engine_peak_bytes = 0;
  int64_t peak_rss_bytes = 0;
};

// `concurrency` clients for `seconds`, each sending its next request when the previous one is
// answered; the first 20% is warm-up.
StatusOr<PipelineBenchRow> ClosedLoop(const Setup& setup, scheduler::Policy policy, int concurrency,
                                      double seconds);

// Poisson arrivals at `rate` per second for `seconds` (the sequence is fixed by `seed`, so
// policies compared at one seed see the same arrivals); the first 20% is warm-up.
StatusOr<PipelineBenchRow> OpenLoop(const Setup& setup, scheduler::Policy policy, double rate,
                                    double seconds, uint32_t seed);

struct StreamOptions {
  double fps = 25;
  double deadline_ms = 200;        // a frame answered later than this is late
  double required_in_time = 0.95;  // fraction of a stream's frames answered within the deadline
};

// `streams` simulated cameras for `seconds`: stream i submits a frame every 1/fps seconds
// (phases spread evenly), latest_only, client "stream-<i>", stream priority; frames cycle
// through setup.pictures. Frames submitted in the first 20% are warm-up. A stream is served in
// real time when at least required_in_time of its frames are answered within the deadline and
// every other one was superseded (none late, rejected, failed or cancelled).
struct StreamPoint {
  std::string policy;
  int streams = 0;
  double seconds = 0;
  int64_t frames = 0;    // submitted in the measured window, all streams
  int64_t answered = 0;  // done (in time or late)
  int64_t in_time = 0;   // done within the deadline
  int64_t late = 0;      // done after the deadline
  int64_t superseded = 0;
  int64_t rejected = 0;  // any rejection
  int64_t failed = 0;    // failed or cancelled
  LatencyStats latency;  // answered frames
  int realtime_streams = 0;
  bool all_realtime = false;
};
StatusOr<StreamPoint> StreamLoop(const Setup& setup, scheduler::Policy policy, int streams,
                                 double seconds, const StreamOptions& options);

}  // namespace mogserve::bench
