#include "bench/pipeline_driver.h"

#include "api/serving_stack.h"
#include "common/process_memory.h"

#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <random>
#include <thread>

namespace mogserve::bench {
namespace {

using pipeline::Pipeline;
using pipeline::PipelineOptions;
using pipeline::RequestResult;
using scheduler::Outcome;
using Steady = std::chrono::steady_clock;

std::chrono::nanoseconds FromMs(double ms);

// A point's start (now), the end of its warm-up (the first 20%) and its end.
std::array<Steady::time_point, 3> PointWindow(double seconds) {
  const Steady::time_point start = Steady::now();
  return {start, start + FromMs(seconds * 200), start + FromMs(seconds * 1000)};
}

std::chrono::nanoseconds FromMs(double ms) {
  return std::chrono::nanoseconds(static_cast<int64_t>(ms * 1e6));
}

double MsBetween(Steady::time_point a, Steady::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// Latencies and completion times of the requests that count (arrived in the measured window).
class Samples {
 public:
  void Add(const RequestResult& r, Steady::time_point submitted, Steady::time_point warm,
           Steady::time_point end) {
    const Steady::time_point now = Steady::now();
    std::lock_guard<std::mutex> lock(mu_);
    if (r.outcome == Outcome::kDone) {
      if (now >= warm && now <= end) completions_.push_back(now);
      if (submitted >= warm) latencies_ms_.push_back(MsBetween(submitted, now));
    } else if (submitted >= warm) {
      ++rejected_;
    }
  }
  void Fill(PipelineBenchRow* row, double window_s) {
    std::lock_guard<std::mutex> lock(mu_);
    row->window_s = window_s;
    row->done = static_cast<int64_t>(completions_.size());
    row->rejected = rejected_;
    row->throughput_per_s = Rate(window_s);
    row->latency = Summarize(latencies_ms_);
  }

 private:
  // Completions arrive a batch at a time (up to 16 within a millisecond, then nothing for
  // 400 ms), so counting them in a fixed window is off by up to a batch. The rate is taken
  // between the first and the last batch completion in the window instead: the completions
  // after the first batch over the time between them.
  double Rate(double window_s) {
    if (completions_.size() < 2) return completions_.size() / window_s;
    std::sort(completions_.begin(), completions_.end());
    const Steady::time_point first = completions_.front();
    size_t first_batch = 0;
    while (first_batch < completions_.size() &&
           completions_[first_batch] - first <= std::chrono::milliseconds(1)) {
      ++first_batch;
    }
    const double span_s = std::chrono::duration<double>(completions_.back() - first).count();
    if (first_batch == completions_.size() || span_s < window_s / 2) {
      return completions_.size() / window_s;
    }
    return (completions_.size() - first_batch) / span_s;
  }

  std::mutex mu_;
  std::vector<double> latencies_ms_;
  std::vector<Steady::time_point> completions_;  // in the measured window
  int64_t rejected_ = 0;
};

void FillEngineStats(const pipeline::PipelineStats& a, const pipeline::PipelineStats& b,
                     double window_s, int instances, PipelineBenchRow* row) {
  const int64_t batches = b.batches - a.batches;
  row->mean_batch_size =
      batches > 0 ? static_cast<double>(b.batched_requests - a.batched_requests) / batches : 0;
  double busy = 0;
  for (size_t i = 0; i < b.engine_busy_seconds.size(); ++i) {
    busy += b.engine_busy_seconds[i] - a.engine_busy_seconds[i];
  }
  row->busy_ratio = busy / (window_s * instances);
  const int64_t ended = b.ended() - a.ended();
  row->scheduler_us_per_request =
      ended > 0 ? (b.scheduler_seconds - a.scheduler_seconds) / ended * 1e6 : 0;
}

pipeline::SubmitRequest MakeRequest(const Setup& setup, uint64_t index, const std::string& client) {
  pipeline::SubmitRequest r;
  r.image.decoded = setup.pictures[index % setup.pictures.size()];
  r.client = client;
  return r;
}

// Resets the memory peaks before a point; Read() takes them after it.
class MemoryPeaks {
 public:
  explicit MemoryPeaks(const Setup& setup) : setup_(setup) {
    for (engine::Engine* e : setup.engines) e->ResetPeakMemory();
    rss_reset_ = ResetPeakRss();
  }
  void Read(PipelineBenchRow* row) const {
    row->engine_peak_bytes = setup_.engines[0]->Memory().peak_in_use_bytes;
    row->peak_rss_bytes = rss_reset_ ? ReadProcessMemory().peak_rss_bytes : 0;
  }

 private:
  const Setup& setup_;
  bool rss_reset_ = false;
};

// A load point's row from what was measured: the samples, the pipeline's counters at the start
// and end of the measured window, and the memory peaks.
PipelineBenchRow FinishRow(const Setup& setup, scheduler::Policy policy, const char* mode,
                           double seconds, Samples& samples, const pipeline::PipelineStats& at_warm,
                           const pipeline::PipelineStats& at_end, const MemoryPeaks& peaks) {
  PipelineBenchRow row;
  row.policy = scheduler::PolicyName(policy);
  row.mode = mode;
  const double window_s = seconds * 0.8;
  samples.Fill(&row, window_s);
  FillEngineStats(at_warm, at_end, window_s, static_cast<int>(setup.engines.size()), &row);
  peaks.Read(&row);
  return row;
}

}  // namespace

const model::OutputDecoder& DecoderOf(const engine::Engine& engine) {
  struct NoFaces final : model::OutputDecoder {
    DetectOptions default_detect_options() const override { return {}; }
    std::vector<Detection> Postprocess(const model::OutputRows&,
                                       const DetectOptions&) const override {
      return {};
    }
  };
  static const NoFaces kNoFaces;
  const model::FaceModel* model = engine.model().get();
  return model != nullptr ? static_cast<const model::OutputDecoder&>(*model) : kNoFaces;
}

SimulatedEngine::SimulatedEngine(double intercept_ms, double per_image_ms, std::string precision)
    : intercept_ms_(intercept_ms), per_image_ms_(per_image_ms) {
  char text[96];
  std::snprintf(text, sizeof(text), "simulated engine (%.1f ms + %.1f ms/image)", intercept_ms,
                per_image_ms);
  info_.model = text;
  info_.device = "none";
  info_.precision = std::move(precision);
}

StatusOr<engine::BatchOutputs> SimulatedEngine::Forward(const engine::CanvasBatch& batch) {
  const int rows = static_cast<int>(batch.canvases.size());
  const int run = std::max(rows, batch.padded_batch_size);
  const double ms = intercept_ms_ + per_image_ms_ * run;
  if (ms > 0) std::this_thread::sleep_for(FromMs(ms));
  engine::BatchOutputs out;
  out.batch = rows;
  out.anchors = 0;
  return out;
}

StatusOr<std::unique_ptr<engine::Engine>> SimulatedEngine::NewInstance() const {
  return std::unique_ptr<engine::Engine>(
      new SimulatedEngine(intercept_ms_, per_image_ms_, info_.precision));
}

double CpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
         (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

StatusOr<PlannedCapacity> PlanBatches(Setup* setup, int picture_width, int picture_height,
                                      double batch_knee, int parallel_instances) {
  std::vector<int> sizes;
  for (int n = 1; n <= setup->max_batch_size; n *= 2) sizes.push_back(n);
  if (sizes.back() != setup->max_batch_size) sizes.push_back(setup->max_batch_size);
  pipeline::BufferPlanOptions plan_options;
  plan_options.batch_sizes = sizes;
  plan_options.buckets = {setup->buckets.Place(picture_width, picture_height).bucket};
  plan_options.throughput_knee = batch_knee;
  MOGSERVE_ASSIGN_OR_RETURN(
      pipeline::BufferPlan plan,
      pipeline::BufferPlan::Measure(*setup->engines[0], setup->buckets, plan_options));
  PlannedCapacity capacity;
  capacity.description = plan.Describe();
  capacity.knee_batch =
      std::min(setup->max_batch_size, plan.knee_batch_size(plan_options.buckets.front()));
  for (const pipeline::BufferPlanRow& row : plan.rows()) {
    if (!row.measured || row.latency_ms <= 0) continue;
    const double per_s = row.batch_size * 1000.0 / row.latency_ms * parallel_instances;
    if (row.batch_size == 1) capacity.batch1_per_s = per_s;
    if (per_s > capacity.per_s) {
      capacity.per_s = per_s;
      capacity.batch = row.batch_size;
    }
  }
  if (capacity.per_s <= 0) return Internal("the warm-up measured no batch size");
  setup->seed = plan.latency_samples();
  setup->plan = std::move(plan);
  return capacity;
}

StatusOr<std::unique_ptr<Pipeline>> MakePipeline(const Setup& setup, scheduler::Policy policy) {
  if (setup.pictures.empty()) return InvalidArgument("no pictures to send");
  // The serving stack's pipeline (api::ToPipelineOptions), with the point's scheduler and the
  // warm-up's plan and latencies Setup already holds.
  DetectorOptions o;
  o.max_batch_size = setup.max_batch_size;
  o.max_delay_ms = setup.max_delay_ms;
  o.queue_capacity = 1024;
  o.postprocess_threads = setup.postprocess_threads;
  MOGSERVE_ASSIGN_OR_RETURN(scheduler::SchedulerConfig config, api::ToSchedulerConfig(o));
  config.policy = policy;
  if (setup.plan) setup.plan->ApplyTo(&config, /*pad_to_planned=*/false);
  PipelineOptions options =
      api::ToPipelineOptions(o, config, setup.buckets, DecoderOf(*setup.engines.front()));
  options.preprocess_threads = setup.preprocess_threads;  // 0 here means none, not a default
  options.latency_seed = setup.seed;
  return Pipeline::Create(setup.engines, &DecoderOf(*setup.engines.front()), options);
}

StatusOr<PipelineBenchRow> ClosedLoop(const Setup& setup, scheduler::Policy policy, int concurrency,
                                      double seconds) {
  MemoryPeaks peaks(setup);
  MOGSERVE_ASSIGN_OR_RETURN(std::unique_ptr<Pipeline> p, MakePipeline(setup, policy));
  const auto [start, warm, end] = PointWindow(seconds);
  Samples samples;
  std::vector<std::thread> clients;
  for (int c = 0; c < concurrency; ++c) {
    clients.emplace_back([&, c] {
      std::mutex mu;
      std::condition_variable cv;
      const std::string client = "client-" + std::to_string(c);
      for (uint64_t k = 0; Steady::now() < end; ++k) {
        bool finished = false;
        const Steady::time_point submitted = Steady::now();
        p->Submit(MakeRequest(setup, c + k, client), [&](RequestResult r) {
          samples.Add(r, submitted, warm, end);
          std::lock_guard<std::mutex> lock(mu);
          finished = true;
          cv.notify_one();
        });
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return finished; });
      }
    });
  }
  std::this_thread::sleep_until(warm);
  const pipeline::PipelineStats at_warm = p->Stats();
  std::this_thread::sleep_until(end);
  const pipeline::PipelineStats at_end = p->Stats();
  for (std::thread& t : clients) t.join();
  p->Shutdown();
  PipelineBenchRow row =
      FinishRow(setup, policy, "closed", seconds, samples, at_warm, at_end, peaks);
  row.concurrency = concurrency;
  return row;
}

StatusOr<PipelineBenchRow> OpenLoop(const Setup& setup, scheduler::Policy policy, double rate,
                                    double seconds, uint32_t seed) {
  MemoryPeaks peaks(setup);
  MOGSERVE_ASSIGN_OR_RETURN(std::unique_ptr<Pipeline> p, MakePipeline(setup, policy));
  const auto [start, warm, end] = PointWindow(seconds);
  Samples samples;
  std::mt19937 rng(seed);
  std::exponential_distribution<double> gap_s(rate);
  Steady::time_point next = start;
  pipeline::PipelineStats at_warm;
  bool warm_taken = false;
  uint64_t index = 0;
  while (true) {
    next += FromMs(gap_s(rng) * 1000);
    if (next >= end) break;
    if (!warm_taken && next >= warm) {
      std::this_thread::sleep_until(warm);
      at_warm = p->Stats();
      warm_taken = true;
    }
    std::this_thread::sleep_until(next);
    const Steady::time_point submitted = Steady::now();
    p->Submit(MakeRequest(setup, index, "client-" + std::to_string(index % 64)),
              [&samples, submitted, warm, end](RequestResult r) {
                samples.Add(r, submitted, warm, end);
              });
    ++index;
  }
  if (!warm_taken) at_warm = p->Stats();
  std::this_thread::sleep_until(end);
  const pipeline::PipelineStats at_end = p->Stats();
  p->Shutdown();  // the backlog drains; its latencies count, its completions do not
  PipelineBenchRow row = FinishRow(setup, policy, "open", seconds, samples, at_warm, at_end, peaks);
  row.offered_per_s = rate;
  return row;
}

StatusOr<StreamPoint> StreamLoop(const Setup& setup, scheduler::Policy policy, int streams,
                                 double seconds, const StreamOptions& options) {
  if (streams < 1) return InvalidArgument("at least one stream");
  MOGSERVE_ASSIGN_OR_RETURN(std::unique_ptr<Pipeline> p, MakePipeline(setup, policy));
  struct Counts {
    int64_t frames = 0, in_time = 0, late = 0, superseded = 0, rejected = 0, failed = 0;
  };
  std::mutex mu;
  std::vector<Counts> counts(static_cast<size_t>(streams));
  std::vector<double> latencies_ms;
  const double period_ms = 1000.0 / options.fps;
  const auto [start, warm, end] = PointWindow(seconds);
  uint64_t index = 0;
  for (int64_t tick = 0;; ++tick) {
    const Steady::time_point tick_start = start + FromMs(period_ms * static_cast<double>(tick));
    if (tick_start >= end) break;
    for (int s = 0; s < streams; ++s) {
      std::this_thread::sleep_until(tick_start + FromMs(period_ms * s / streams));
      const Steady::time_point submitted = Steady::now();
      const bool counted = submitted >= warm;
      pipeline::SubmitRequest request = MakeRequest(setup, index++, "stream-" + std::to_string(s));
      request.priority = scheduler::Priority::kStream;
      request.latest_only = true;
      if (counted) {
        std::lock_guard<std::mutex> lock(mu);
        ++counts[static_cast<size_t>(s)].frames;
      }
      p->Submit(std::move(request), [&, s, submitted, counted](RequestResult r) {
        if (!counted) return;
        const double ms = MsBetween(submitted, Steady::now());
        std::lock_guard<std::mutex> lock(mu);
        Counts& c = counts[static_cast<size_t>(s)];
        switch (r.outcome) {
          case Outcome::kDone:
            latencies_ms.push_back(ms);
            ++(ms <= options.deadline_ms ? c.in_time : c.late);
            break;
          case Outcome::kSuperseded:
            ++c.superseded;
            break;
          case Outcome::kRejectedQueueFull:
          case Outcome::kRejectedDeadline:
          case Outcome::kRejectedBadInput:
            ++c.rejected;
            break;
          case Outcome::kFailed:
          case Outcome::kCancelled:
            ++c.failed;
            break;
        }
      });
    }
  }
  std::this_thread::sleep_until(end);
  p->Shutdown();  // every counted frame ends before the counts are read
  StreamPoint point;
  point.policy = scheduler::PolicyName(policy);
  point.streams = streams;
  point.seconds = seconds;
  std::lock_guard<std::mutex> lock(mu);
  for (const Counts& c : counts) {
    point.frames += c.frames;
    point.in_time += c.in_time;
    point.late += c.late;
    point.superseded += c.superseded;
    point.rejected += c.rejected;
    point.failed += c.failed;
    const bool realtime = c.frames > 0 &&
                          c.in_time >= options.required_in_time * static_cast<double>(c.frames) &&
                          c.in_time + c.superseded == c.frames;
    if (realtime) ++point.realtime_streams;
  }
  point.answered = point.in_time + point.late;
  point.latency = Summarize(latencies_ms);
  point.all_realtime = point.realtime_streams == streams;
  return point;
}

}  // namespace mogserve::bench
