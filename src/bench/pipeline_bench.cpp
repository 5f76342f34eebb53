#include "bench/pipeline_bench.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

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
