#include "bench/pipeline_bench.h"

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <thread>

#include "bench/engine_bench.h"
#include "pipeline/buffer_plan.h"
#include "pipeline/pipeline.h"

namespace mogserve::bench {
namespace {

using pipeline::Pipeline;
using pipeline::PipelineOptions;
using pipeline::RequestResult;
using pipeline::ShapeBuckets;
using scheduler::Outcome;
using Steady = std::chrono::steady_clock;

std::chrono::nanoseconds FromMs(double ms) {
  return std::chrono::nanoseconds(static_cast<int64_t>(ms * 1e6));
}

// An engine that takes intercept + n x per_image milliseconds per batch of n rows, sleeping (so
// the CPU stays free for the pipeline's own threads), and finds no faces.
class SimulatedEngine final : public engine::Engine {
 public:
  SimulatedEngine(double intercept_ms, double per_image_ms)
      : intercept_ms_(intercept_ms), per_image_ms_(per_image_ms) {
    char text[96];
    std::snprintf(text, sizeof(text), "simulated engine (%.1f ms + %.1f ms/image)", intercept_ms,
                  per_image_ms);
    info_.model = text;
    info_.device = "none";
    info_.precision = "-";
  }
  const engine::EngineInfo& info() const override { return info_; }
  DetectOptions default_detect_options() const override { return {}; }
  int64_t MacsPerImage(int, int) const override { return 0; }
  StatusOr<engine::BatchOutputs> Forward(const engine::CanvasBatch& batch) override {
    const int rows = static_cast<int>(batch.canvases.size());
    const int run = std::max(rows, batch.padded_batch_size);
    const double ms = intercept_ms_ + per_image_ms_ * run;
    if (ms > 0) std::this_thread::sleep_for(FromMs(ms));
    engine::BatchOutputs out;
    out.batch = rows;
    out.anchors = 0;
    return out;
  }
  std::vector<Detection> Postprocess(const engine::BatchOutputs&, int, const image::Letterbox&,
                                     const DetectOptions&) const override {
    return {};
  }
  engine::MemoryStats Memory() const override { return {}; }
  void ResetPeakMemory() override {}
  StatusOr<std::unique_ptr<engine::Engine>> NewInstance() const override {
    return std::unique_ptr<engine::Engine>(new SimulatedEngine(intercept_ms_, per_image_ms_));
  }

 private:
  double intercept_ms_;
  double per_image_ms_;
  engine::EngineInfo info_;
};

double CpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
         (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

// What a point runs on: the engines, their input geometry and the warm-up latencies.
struct Setup {
  std::vector<engine::Engine*> engines;
  ShapeBuckets buckets = ShapeBuckets::FixedSquare(512);
  std::vector<pipeline::LatencySample> seed;
  std::optional<pipeline::BufferPlan> plan;  // caps batches per bucket (the knee), as serve does
  image::Image picture;
  int preprocess_threads = 1;
  int postprocess_threads = 1;
  int max_batch_size = 16;
  double max_delay_ms = 5;
};

StatusOr<std::unique_ptr<Pipeline>> MakePipeline(const Setup& setup, scheduler::Policy policy) {
  PipelineOptions options;
  options.buckets = setup.buckets;
  options.scheduler.policy = policy;
  options.scheduler.max_batch_size = setup.max_batch_size;
  options.scheduler.max_delay = FromMs(setup.max_delay_ms);
  options.scheduler.queue_capacity_requests = 1024;
  if (setup.plan) setup.plan->ApplyTo(&options.scheduler, /*pad_to_planned=*/false);
  options.latency_seed = setup.seed;
  options.preprocess_threads = setup.preprocess_threads;
  options.postprocess_threads = setup.postprocess_threads;
  options.max_preprocessing = 256;
  return Pipeline::Create(setup.engines, options);
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
      if (submitted >= warm) {
        latencies_ms_.push_back(std::chrono::duration<double, std::milli>(now - submitted).count());
      }
    } else if (submitted >= warm) {
      ++rejected_;
    }
  }
  void Fill(PipelineBenchRow* row, double window_s) {
    std::lock_guard<std::mutex> lock(mu_);
    row->done = static_cast<int64_t>(completions_.size());
    row->rejected = rejected_;
    row->throughput_per_s = Rate(window_s);
    row->latency = Summarize(latencies_ms_);
  }

 private:
  std::mutex mu_;
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

pipeline::SubmitRequest MakeRequest(const Setup& setup, int client) {
  pipeline::SubmitRequest r;
  r.image.decoded = setup.picture;
  r.client = "client-" + std::to_string(client);
  return r;
}

StatusOr<PipelineBenchRow> ClosedLoop(const Setup& setup, scheduler::Policy policy, int concurrency,
                                      double seconds) {
  MOGSERVE_ASSIGN_OR_RETURN(std::unique_ptr<Pipeline> p, MakePipeline(setup, policy));
  const Steady::time_point start = Steady::now();
  const Steady::time_point warm = start + FromMs(seconds * 200);
  const Steady::time_point end = start + FromMs(seconds * 1000);
  Samples samples;
  std::vector<std::thread> clients;
  for (int c = 0; c < concurrency; ++c) {
    clients.emplace_back([&, c] {
      std::mutex mu;
      std::condition_variable cv;
      while (Steady::now() < end) {
        bool finished = false;
        const Steady::time_point submitted = Steady::now();
        p->Submit(MakeRequest(setup, c), [&](RequestResult r) {
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
  PipelineBenchRow row;
  row.policy = scheduler::PolicyName(policy);
  row.mode = "closed";
  row.concurrency = concurrency;
  const double window_s = seconds * 0.8;
  samples.Fill(&row, window_s);
  FillEngineStats(at_warm, at_end, window_s, static_cast<int>(setup.engines.size()), &row);
  return row;
}

StatusOr<PipelineBenchRow> OpenLoop(const Setup& setup, scheduler::Policy policy, double rate,
                                    double seconds, uint32_t seed) {
  MOGSERVE_ASSIGN_OR_RETURN(std::unique_ptr<Pipeline> p, MakePipeline(setup, policy));
  const Steady::time_point start = Steady::now();
  const Steady::time_point warm = start + FromMs(seconds * 200);
  const Steady::time_point end = start + FromMs(seconds * 1000);
  Samples samples;
  std::mt19937 rng(seed);
  std::exponential_distribution<double> gap_s(rate);
  Steady::time_point next = start;
  pipeline::PipelineStats at_warm;
  bool warm_taken = false;
  int client = 0;
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
    p->Submit(MakeRequest(setup, client++ % 64), [&samples, submitted, warm, end](RequestResult r) {
      samples.Add(r, submitted, warm, end);
    });
  }
  if (!warm_taken) at_warm = p->Stats();
  std::this_thread::sleep_until(end);
  const pipeline::PipelineStats at_end = p->Stats();
  p->Shutdown();  // the backlog drains; its latencies count, its completions do not
  PipelineBenchRow row;
  row.policy = scheduler::PolicyName(policy);
  row.mode = "open";
  row.offered_per_s = rate;
  const double window_s = seconds * 0.8;
  samples.Fill(&row, window_s);
  FillEngineStats(at_warm, at_end, window_s, static_cast<int>(setup.engines.size()), &row);
  return row;
}

// Wall and CPU time per request with a zero-latency engine and tiny pictures; the scheduler's
// share goes to *scheduler_us.
StatusOr<double> MeasureOverhead(double* cpu_us, double* scheduler_us) {
  SimulatedEngine engine(0, 0);
  Setup setup;
  setup.engines = {&engine};
  setup.buckets = ShapeBuckets::FixedSquare(16);
  setup.picture = image::Image(8, 8);
  setup.preprocess_threads = 0;
  setup.max_delay_ms = 0;
  const double cpu_before = CpuSeconds();
  MOGSERVE_ASSIGN_OR_RETURN(PipelineBenchRow row,
                            ClosedLoop(setup, scheduler::Policy::kContinuous, 16, 2.0));
  const double cpu = CpuSeconds() - cpu_before;
  *scheduler_us = row.scheduler_us_per_request;
  const double total_requests = row.throughput_per_s * 2.0;  // over the whole run
  *cpu_us = total_requests > 0 ? cpu / total_requests * 1e6 : 0;
  return row.throughput_per_s > 0 ? 1e6 / row.throughput_per_s : 0;
}

void Progress(const PipelineBenchRow& r) {
  std::fprintf(stderr,
               "  %-10s %-6s %s  %7.1f img/s  p50 %8.1f ms  p99 %8.1f ms  batch %5.2f  busy %3.0f%%"
               "  rejected %lld\n",
               r.policy.c_str(), r.mode.c_str(),
               r.mode == "closed" ? ("c=" + std::to_string(r.concurrency)).c_str()
                                  : ("load " + std::to_string(r.load).substr(0, 4)).c_str(),
               r.throughput_per_s, r.latency.median_ms, r.latency.p99_ms, r.mean_batch_size,
               r.busy_ratio * 100, static_cast<long long>(r.rejected));
}

}  // namespace

StatusOr<PipelineBenchReport> RunPipelineBench(const PipelineBenchOptions& o) {
  PipelineBenchReport report;
  report.machine = DescribeMachine();
  if (o.measure_overhead) {
    std::fprintf(stderr, "overhead: zero-latency engine, continuous, 16 clients...\n");
    MOGSERVE_ASSIGN_OR_RETURN(
        report.overhead_us_per_request,
        MeasureOverhead(&report.overhead_cpu_us_per_request, &report.scheduler_us_per_request));
  }

  std::vector<std::unique_ptr<engine::Engine>> owned;
  Setup setup;
  setup.max_batch_size = o.max_batch_size;
  setup.max_delay_ms = o.max_delay_ms;
  setup.preprocess_threads = o.preprocess_threads;
  setup.postprocess_threads = o.postprocess_threads;
  setup.picture = image::Image(o.image_width, o.image_height);
  std::vector<int> sizes;
  for (int n = 1; n <= o.max_batch_size; n *= 2) sizes.push_back(n);
  if (sizes.back() != o.max_batch_size) sizes.push_back(o.max_batch_size);
  if (o.real_engine) {
    MOGSERVE_ASSIGN_OR_RETURN(std::unique_ptr<engine::Engine> first,
                              engine::CreateEngine(o.engine));
    owned.push_back(std::move(first));
    const engine::EngineInfo& info = owned[0]->info();
    if (info.fixed_side > 0) {
      setup.buckets = ShapeBuckets::FixedSquare(info.fixed_side);
    } else {
      MOGSERVE_ASSIGN_OR_RETURN(setup.buckets, ShapeBuckets::Target(640, info.multiple));
    }
  } else {
    owned.push_back(std::make_unique<SimulatedEngine>(o.sim_intercept_ms, o.sim_per_image_ms));
    setup.buckets = ShapeBuckets::FixedSquare(512);
  }
  for (int i = 1; i < o.instances; ++i) {
    MOGSERVE_ASSIGN_OR_RETURN(std::unique_ptr<engine::Engine> more, owned[0]->NewInstance());
    owned.push_back(std::move(more));
  }
  report.engine = o.real_engine ? owned[0]->info().Describe() : owned[0]->info().model;
  // The capacity and the scheduler's seed come from a warm-up on this machine, now, for the
  // simulation too (its sleeps overshoot on a loaded machine): ratios within one run.
  pipeline::BufferPlanOptions plan_options;
  plan_options.batch_sizes = sizes;
  plan_options.buckets = {setup.buckets.Place(o.image_width, o.image_height).bucket};
  plan_options.throughput_knee = o.batch_knee;
  std::fprintf(stderr, "warm-up: measuring batch sizes on %s...\n", report.engine.c_str());
  MOGSERVE_ASSIGN_OR_RETURN(pipeline::BufferPlan plan,
                            pipeline::BufferPlan::Measure(*owned[0], setup.buckets, plan_options));
  std::fprintf(stderr, "%s", plan.Describe().c_str());
  setup.seed = plan.latency_samples();
  setup.plan = plan;
  for (const pipeline::BufferPlanRow& row : plan.rows()) {
    if (!row.measured || row.latency_ms <= 0) continue;
    // Instances share nothing in the simulation; on a CPU they share the cores.
    const int parallel = o.real_engine ? 1 : o.instances;
    const double per_s = row.batch_size * 1000.0 / row.latency_ms * parallel;
    if (per_s > report.capacity_per_s) {
      report.capacity_per_s = per_s;
      report.capacity_batch = row.batch_size;
    }
  }
  for (auto& e : owned) setup.engines.push_back(e.get());

  char settings[320];
  std::snprintf(settings, sizeof(settings),
                "max batch %d, capped at %d by the throughput knee (%.2f), max delay %.1f ms, "
                "%d instance(s), %d pre / %d post thread(s), "
                "%dx%d pictures, %.1f s per point (first 20%% warm-up)",
                o.max_batch_size,
                std::min(o.max_batch_size, plan.knee_batch_size(plan_options.buckets.front())),
                o.batch_knee, o.max_delay_ms, o.instances, o.preprocess_threads,
                o.postprocess_threads, o.image_width, o.image_height, o.seconds);
  report.settings = settings;
  std::fprintf(stderr, "capacity: %.1f images/s (batch %d)\n", report.capacity_per_s,
               report.capacity_batch);

  for (scheduler::Policy policy : o.policies) {
    for (int c : o.concurrency) {
      MOGSERVE_ASSIGN_OR_RETURN(PipelineBenchRow row, ClosedLoop(setup, policy, c, o.seconds));
      Progress(row);
      report.rows.push_back(row);
    }
    for (size_t i = 0; i < o.loads.size(); ++i) {
      const double load = o.loads[i];
      const double rate = load * report.capacity_per_s;
      // Every policy sees the same arrival sequence at a given load (same seed), and a point
      // lasts long enough for ~150 arrivals, within 3x --seconds.
      const double seconds = std::min(std::max(o.seconds, 150.0 / rate), 3 * o.seconds);
      MOGSERVE_ASSIGN_OR_RETURN(PipelineBenchRow row, OpenLoop(setup, policy, rate, seconds,
                                                               1000 + static_cast<uint32_t>(i)));
      row.load = load;
      Progress(row);
      report.rows.push_back(row);
    }
  }

  double naive_c16 = 0, continuous_c16 = 0;
  for (const PipelineBenchRow& r : report.rows) {
    if (r.policy == "continuous" && r.mode == "closed") {
      report.continuous_saturation_ratio =
          std::max(report.continuous_saturation_ratio, r.throughput_per_s / report.capacity_per_s);
    }
    if (r.mode == "open" && std::abs(r.load - 0.5) < 1e-9) {
      if (r.policy == "continuous") report.continuous_p50_at_half_ms = r.latency.median_ms;
      if (r.policy == "dynamic") report.dynamic_p50_at_half_ms = r.latency.median_ms;
    }
    if (r.mode == "closed" && r.concurrency == 16) {
      if (r.policy == "naive") naive_c16 = r.throughput_per_s;
      if (r.policy == "continuous") continuous_c16 = r.throughput_per_s;
    }
  }
  if (naive_c16 > 0) report.continuous_vs_naive_c16 = continuous_c16 / naive_c16;
  return report;
}

std::string PipelineBenchMarkdown(const PipelineBenchReport& r) {
  std::string md;
  char line[512];
  md +=
      "Engine: " + r.engine + "  \nMachine: " + r.machine + "  \nSettings: " + r.settings + "\n\n";
  std::snprintf(line, sizeof(line),
                "Capacity (best batch): **%.1f images/s** at batch %d. Pipeline overhead with a "
                "zero-latency engine: **%.1f us per request** of wall time (%.1f us of CPU), all "
                "stages; of which **%.2f us** inside the scheduler's calls.\n\n",
                r.capacity_per_s, r.capacity_batch, r.overhead_us_per_request,
                r.overhead_cpu_us_per_request, r.scheduler_us_per_request);
  md += line;
  md +=
      "| policy | loop | clients / load | offered/s | images/s | p50 ms | p95 ms | p99 ms | "
      "mean batch | busy | rejected |\n";
  md += "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const PipelineBenchRow& row : r.rows) {
    const std::string who =
        row.mode == "closed" ? std::to_string(row.concurrency)
                             : std::to_string(static_cast<int>(std::lround(row.load * 100))) + "%";
    std::snprintf(line, sizeof(line),
                  "| %s | %s | %s | %s | %.1f | %.1f | %.1f | %.1f | %.2f | %.0f%% | %lld |\n",
                  row.policy.c_str(), row.mode.c_str(), who.c_str(),
                  row.mode == "open" ? std::to_string(std::lround(row.offered_per_s)).c_str() : "-",
                  row.throughput_per_s, row.latency.median_ms, row.latency.p95_ms,
                  row.latency.p99_ms, row.mean_batch_size, row.busy_ratio * 100,
                  static_cast<long long>(row.rejected));
    md += line;
  }
  md += "\nTargets:\n\n";
  std::snprintf(line, sizeof(line),
                "- scheduler overhead per request (zero-latency engine): %.2f us inside the "
                "scheduler, %.1f us wall for the whole pipeline (target <= 50 us)\n"
                "- continuous at saturation: %.1f%% of the best-batch capacity (target >= 95%%)\n"
                "- open loop at 50%% load, p50: continuous %.1f ms vs dynamic %.1f ms (target: "
                "continuous <= dynamic)\n",
                r.scheduler_us_per_request, r.overhead_us_per_request,
                r.continuous_saturation_ratio * 100, r.continuous_p50_at_half_ms,
                r.dynamic_p50_at_half_ms);
  md += line;
  if (r.continuous_vs_naive_c16 > 0) {
    std::snprintf(line, sizeof(line),
                  "- closed loop, 16 clients: continuous / naive throughput = %.2f\n",
                  r.continuous_vs_naive_c16);
    md += line;
  }
  return md;
}

std::string PipelineBenchJson(const PipelineBenchReport& r) {
  nlohmann::json j;
  j["engine"] = r.engine;
  j["machine"] = r.machine;
  j["settings"] = r.settings;
  j["capacity_per_s"] = r.capacity_per_s;
  j["capacity_batch"] = r.capacity_batch;
  j["overhead_us_per_request"] = r.overhead_us_per_request;
  j["overhead_cpu_us_per_request"] = r.overhead_cpu_us_per_request;
  j["scheduler_us_per_request"] = r.scheduler_us_per_request;
  j["targets"] = {{"continuous_saturation_ratio", r.continuous_saturation_ratio},
                  {"continuous_p50_at_half_ms", r.continuous_p50_at_half_ms},
                  {"dynamic_p50_at_half_ms", r.dynamic_p50_at_half_ms},
                  {"continuous_vs_naive_c16", r.continuous_vs_naive_c16}};
  nlohmann::json rows = nlohmann::json::array();
  for (const PipelineBenchRow& row : r.rows) {
    rows.push_back({{"policy", row.policy},
                    {"mode", row.mode},
                    {"concurrency", row.concurrency},
                    {"load", row.load},
                    {"offered_per_s", row.offered_per_s},
                    {"done", row.done},
                    {"rejected", row.rejected},
                    {"throughput_per_s", row.throughput_per_s},
                    {"p50_ms", row.latency.median_ms},
                    {"p95_ms", row.latency.p95_ms},
                    {"p99_ms", row.latency.p99_ms},
                    {"mean_ms", row.latency.mean_ms},
                    {"mean_batch_size", row.mean_batch_size},
                    {"busy_ratio", row.busy_ratio},
                    {"scheduler_us_per_request", row.scheduler_us_per_request}});
  }
  j["rows"] = rows;
  return j.dump(2) + "\n";
}

}  // namespace mogserve::bench
