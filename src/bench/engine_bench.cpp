#include "bench/engine_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "common/cpu_info.h"
#include "engine/caching_cpu_allocator.h"
#include "engine/conv_peak.h"

namespace mogserve::bench {
namespace {

struct Variant {
  const char* name;
  bool channels_last;
  bool caching_allocator;
};

// The system-allocator variants must run first: the caching allocator cannot be uninstalled.
constexpr Variant kComparedVariants[] = {{"NCHW, system allocator", false, false},
                                         {"channels-last, system allocator", true, false},
                                         {"NCHW, caching allocator", false, true},
                                         {"channels-last, caching allocator", true, true}};
constexpr const Variant& kDefaultVariant = kComparedVariants[3];

std::vector<std::vector<uint8_t>> NoiseCanvases(int count, int side) {
  std::mt19937 rng(12345);
  std::vector<std::vector<uint8_t>> canvases(static_cast<size_t>(count));
  for (auto& c : canvases) {
    c.resize(static_cast<size_t>(side) * side * 3);
    for (auto& v : c) v = static_cast<uint8_t>(rng());
  }
  return canvases;
}

StatusOr<std::vector<double>> TimeBatch(engine::Engine& engine,
                                        const engine::CanvasBatch& canvases,
                                        const EngineBenchOptions& options) {
  for (int i = 0; i < 2; ++i) MOGSERVE_RETURN_IF_ERROR(engine.Forward(canvases).status());
  std::vector<double> samples;
  const auto start = std::chrono::steady_clock::now();
  while (static_cast<int>(samples.size()) < options.min_iterations ||
         std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() <
             options.min_seconds) {
    const auto t0 = std::chrono::steady_clock::now();
    MOGSERVE_RETURN_IF_ERROR(engine.Forward(canvases).status());
    samples.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return samples;
}

Status RunVariant(const Variant& v, const EngineBenchOptions& options, EngineBenchReport& report) {
  engine::EngineOptions eo = options.engine;
  eo.channels_last = v.channels_last;
  if (!v.caching_allocator) eo.allocator_cache_bytes = 0;
  MOGSERVE_ASSIGN_OR_RETURN(std::unique_ptr<engine::Engine> engine, engine::CreateEngine(eo));
  if (v.caching_allocator && !engine::CachingCpuAllocatorInstalled()) {
    return Internal("the caching allocator did not install");
  }
  const int max_batch = *std::max_element(options.batch_sizes.begin(), options.batch_sizes.end());
  const int side = engine->info().fixed_side;
  const auto canvases = NoiseCanvases(max_batch, side);
  report.macs_per_image = static_cast<double>(engine->MacsPerImage(side, side));
  if (&v == &kDefaultVariant) report.engine = engine->info().Describe();
  for (int batch : options.batch_sizes) {
    engine::CanvasBatch ptrs;
    ptrs.width = ptrs.height = side;
    for (int i = 0; i < batch; ++i) ptrs.canvases.push_back(canvases[static_cast<size_t>(i)].data());
    MOGSERVE_ASSIGN_OR_RETURN(std::vector<double> samples, TimeBatch(*engine, ptrs, options));
    EngineBenchRow row;
    row.variant = v.name;
    row.batch = batch;
    row.batch_latency = Summarize(std::move(samples));
    row.ms_per_image = row.batch_latency.mean_ms / batch;
    row.images_per_s = 1000.0 / row.ms_per_image;
    row.gflops = 2.0 * report.macs_per_image * batch / row.batch_latency.mean_ms / 1e6;
    row.fraction_of_peak = report.peak_gflops > 0 ? row.gflops / report.peak_gflops : 0;
    std::fprintf(stderr, "  %-34s batch %2d: %8.2f ms/batch  %7.2f ms/img  %6.1f GFLOP/s\n", v.name,
                 batch, row.batch_latency.mean_ms, row.ms_per_image, row.gflops);
    report.rows.push_back(row);
  }
  return Status::Ok();
}

void SummarizeDefault(EngineBenchReport& report) {
  double batch1_ms = 0;
  for (const EngineBenchRow& r : report.rows) {
    if (r.variant == kDefaultVariant.name && r.batch == 1) batch1_ms = r.ms_per_image;
  }
  for (const EngineBenchRow& r : report.rows) {
    if (r.variant != kDefaultVariant.name) continue;
    if (r.images_per_s > report.best_images_per_s) {
      report.best_images_per_s = r.images_per_s;
      report.best_batch = r.batch;
    }
    if (batch1_ms > 0) {
      report.worst_per_image_vs_batch1 =
          std::max(report.worst_per_image_vs_batch1, r.ms_per_image / batch1_ms);
    }
  }
}

}  // namespace

std::string DescribeMachine() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, model = "unknown CPU";
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  }
  return model + ", " + std::to_string(AvailableCores()) + " cores";
}

StatusOr<EngineBenchReport> RunEngineBench(const EngineBenchOptions& options) {
  if (options.batch_sizes.empty()) return InvalidArgument("no batch sizes to measure");
  EngineBenchReport report;
  report.machine = DescribeMachine();
  // Threads must be set before the peak is measured: load the default engine options first.
  const int threads =
      options.engine.threads > 0 ? options.engine.threads : AvailableCores();
  std::fprintf(stderr, "measuring the 3x3 convolution peak (%d threads)...\n", threads);
  {
    engine::EngineOptions probe = options.engine;
    probe.allocator_cache_bytes = 0;
    MOGSERVE_RETURN_IF_ERROR(engine::CreateEngine(probe).status());  // sets the thread count
  }
  const engine::ConvPeak peak = engine::MeasureConv3x3Peak(2.0);
  report.peak_gflops = peak.gflops;
  report.peak_batch = peak.batch;
  std::fprintf(stderr, "  peak %.1f GFLOP/s (batch %d)\n", peak.gflops, peak.batch);
  if (options.compare_variants) {
    for (const Variant& v : kComparedVariants)
      MOGSERVE_RETURN_IF_ERROR(RunVariant(v, options, report));
  } else {
    MOGSERVE_RETURN_IF_ERROR(RunVariant(kDefaultVariant, options, report));
  }
  SummarizeDefault(report);
  return report;
}

std::string EngineBenchMarkdown(const EngineBenchReport& r) {
  std::string out;
  char buf[512];
  std::snprintf(buf, sizeof(buf),
                "Engine: %s  \nMachine: %s  \nMeasured 3x3-conv peak: %.1f GFLOP/s (batch %d); "
                "model cost %.3f GMAC per image\n\n",
                r.engine.c_str(), r.machine.c_str(), r.peak_gflops, r.peak_batch,
                r.macs_per_image / 1e9);
  out += buf;
  out +=
      "| variant | batch | mean ms | median | min | max | std | ms/image | images/s | GFLOP/s "
      "| % of peak |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const EngineBenchRow& row : r.rows) {
    const LatencyStats& s = row.batch_latency;
    std::snprintf(buf, sizeof(buf),
                  "| %s | %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.1f | %.1f | %.0f%% |\n",
                  row.variant.c_str(), row.batch, s.mean_ms, s.median_ms, s.min_ms, s.max_ms,
                  s.stddev_ms, row.ms_per_image, row.images_per_s, row.gflops,
                  100.0 * row.fraction_of_peak);
    out += buf;
  }
  std::snprintf(buf, sizeof(buf),
                "\nDefault variant: best %.1f images/s at batch %d; worst per-image time of any "
                "batch size vs batch 1: %.2fx\n",
                r.best_images_per_s, r.best_batch, r.worst_per_image_vs_batch1);
  out += buf;
  return out;
}

std::string EngineBenchJson(const EngineBenchReport& r) {
  nlohmann::json rows = nlohmann::json::array();
  for (const EngineBenchRow& row : r.rows) {
    const LatencyStats& s = row.batch_latency;
    rows.push_back({{"variant", row.variant},
                    {"batch", row.batch},
                    {"iterations", s.count},
                    {"mean_ms", s.mean_ms},
                    {"median_ms", s.median_ms},
                    {"min_ms", s.min_ms},
                    {"max_ms", s.max_ms},
                    {"stddev_ms", s.stddev_ms},
                    {"ms_per_image", row.ms_per_image},
                    {"images_per_s", row.images_per_s},
                    {"gflops", row.gflops},
                    {"fraction_of_peak", row.fraction_of_peak}});
  }
  nlohmann::json j = {{"engine", r.engine},
                      {"machine", r.machine},
                      {"peak_gflops", r.peak_gflops},
                      {"peak_batch", r.peak_batch},
                      {"macs_per_image", r.macs_per_image},
                      {"best_images_per_s", r.best_images_per_s},
                      {"best_batch", r.best_batch},
                      {"worst_per_image_vs_batch1", r.worst_per_image_vs_batch1},
                      {"rows", rows}};
  return j.dump(2);
}

}  // namespace mogserve::bench
