#include "bench/pipeline_bench.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "api/serving_stack.h"
#include "bench/engine_bench.h"

namespace mogserve::bench {
namespace {

using pipeline::ShapeBuckets;

// Wall and CPU time per request with a zero-latency engine and tiny pictures; the scheduler's
// share goes to *scheduler_us.
StatusOr<double> MeasureOverhead(double* cpu_us, double* scheduler_us) {
  SimulatedEngine engine(0, 0);
  Setup setup;
  setup.engines = {&engine};
  setup.buckets = ShapeBuckets::FixedSquare(16);
  setup.pictures = {image::Image(8, 8)};
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
  setup.pictures = {image::Image(o.image_width, o.image_height)};
  if (o.real_engine) {
    MOGSERVE_ASSIGN_OR_RETURN(std::unique_ptr<engine::Engine> first,
                              api::LoadEngine(o.model, o.engine));
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
  for (auto& e : owned) setup.engines.push_back(e.get());
  // The capacity and the scheduler's seed come from a warm-up on this machine, now, for the
  // simulation too (its sleeps overshoot on a loaded machine): ratios within one run.
  // Instances share nothing in the simulation; on a CPU they share the cores.
  std::fprintf(stderr, "warm-up: measuring batch sizes on %s...\n", report.engine.c_str());
  MOGSERVE_ASSIGN_OR_RETURN(PlannedCapacity capacity,
                            PlanBatches(&setup, o.image_width, o.image_height, o.batch_knee,
                                        o.real_engine ? 1 : o.instances));
  std::fprintf(stderr, "%s", capacity.description.c_str());
  report.capacity_per_s = capacity.per_s;
  report.capacity_batch = capacity.batch;

  char settings[320];
  std::snprintf(settings, sizeof(settings),
                "max batch %d, capped at %d by the throughput knee (%.2f), max delay %.1f ms, "
                "%d instance(s), %d pre / %d post thread(s), "
                "%dx%d pictures, %.1f s per point (first 20%% warm-up)",
                o.max_batch_size, capacity.knee_batch, o.batch_knee, o.max_delay_ms, o.instances,
                o.preprocess_threads, o.postprocess_threads, o.image_width, o.image_height,
                o.seconds);
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

std::vector<ResultTable> PipelineBenchTables(const PipelineBenchReport& r) {
  ResultTable t;
  t.AddField({"engine", "Engine", r.engine})
      .AddField({"machine", "Machine", r.machine})
      .AddField({"settings", "Settings", r.settings})
      .AddField({"capacity_per_s", "Capacity (best batch), images/s", r.capacity_per_s})
      .AddField({"capacity_batch", "... at batch", int64_t{r.capacity_batch}})
      .AddField({"overhead_us_per_request",
                 "Pipeline overhead, zero-latency engine, all stages, us wall per request "
                 "(target <= 50)",
                 r.overhead_us_per_request})
      .AddField({"overhead_cpu_us_per_request", "... us of CPU per request",
                 r.overhead_cpu_us_per_request})
      .AddField({"scheduler_us_per_request", "... of which inside the scheduler's calls, us",
                 r.scheduler_us_per_request, 2})
      .AddField({"targets.continuous_saturation_ratio",
                 "Continuous at saturation, fraction of the best-batch capacity (target >= 0.95)",
                 r.continuous_saturation_ratio, 3})
      .AddField({"targets.continuous_p50_at_half_ms",
                 "Open loop at 50% load, p50 ms: continuous (target: <= dynamic)",
                 r.continuous_p50_at_half_ms})
      .AddField({"targets.dynamic_p50_at_half_ms", "... dynamic", r.dynamic_p50_at_half_ms})
      .AddField({"targets.continuous_vs_naive_c16",
                 "Closed loop, 16 clients: continuous / naive throughput",
                 r.continuous_vs_naive_c16, 2});
  t.AddColumn({"policy"})
      .AddColumn({"mode", "loop"})
      .AddColumn({"who", "clients / load", 0, 1, "", false, kInMarkdown})
      .AddColumn({"concurrency", "", 0, 1, "", false, kInJson | kInCsv})
      .AddColumn({"load", "", 2, 1, "", false, kInJson | kInCsv})
      .AddColumn({"offered_per_s", "offered/s", 0, 1, "", true})
      .AddColumn({"done", "", 0, 1, "", false, kInJson | kInCsv})
      .AddColumn({"throughput_per_s", "images/s"})
      .AddColumn({"p50_ms", "p50 ms"})
      .AddColumn({"p95_ms", "p95 ms"})
      .AddColumn({"p99_ms", "p99 ms"})
      .AddColumn({"mean_ms", "", 1, 1, "", false, kInJson | kInCsv})
      .AddColumn({"mean_batch_size", "mean batch", 2})
      .AddColumn({"busy_ratio", "busy", 0, 100, "%"})
      .AddColumn({"rejected", "rejected"})
      .AddColumn({"scheduler_us_per_request", "", 2, 1, "", false, kInJson | kInCsv});
  for (const PipelineBenchRow& row : r.rows) {
    const std::string who =
        row.mode == "closed" ? std::to_string(row.concurrency)
                             : std::to_string(static_cast<int>(std::lround(row.load * 100))) + "%";
    t.AddRow({row.policy, row.mode, who, int64_t{row.concurrency}, row.load, row.offered_per_s,
              int64_t{row.done}, row.throughput_per_s, row.latency.median_ms, row.latency.p95_ms,
              row.latency.p99_ms, row.latency.mean_ms, row.mean_batch_size, row.busy_ratio,
              int64_t{row.rejected}, row.scheduler_us_per_request});
  }
  return {t};
}

}  // namespace mogserve::bench
