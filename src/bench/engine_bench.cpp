#include "bench/engine_bench.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "bench/forward_timer.h"
#include "bench/mogface_bench.h"
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

Status RunSsdVariant(const Variant& v, const EngineBenchOptions& options,
                     EngineBenchReport& report) {
  engine::EngineOptions eo = options.engine;
  eo.cpu.channels_last = v.channels_last;
  if (!v.caching_allocator) eo.cpu.allocator_cache_bytes = 0;
  MOGSERVE_ASSIGN_OR_RETURN(std::unique_ptr<engine::Engine> engine, engine::CreateEngine(eo));
  if (v.caching_allocator && !engine::CachingCpuAllocatorInstalled()) {
    return Internal("the caching allocator did not install");
  }
  const int max_batch = *std::max_element(options.batch_sizes.begin(), options.batch_sizes.end());
  const int side = engine->info().fixed_side;
  const auto canvases = NoiseCanvases(max_batch, side, side);
  report.macs_per_image = static_cast<double>(engine->MacsPerImage(side, side));
  if (&v == &kDefaultVariant) report.engine = engine->info().Describe();
  for (int batch : options.batch_sizes) {
    EngineBenchRow row;
    row.variant = v.name;
    row.size = side;
    row.precision = engine->info().precision;
    row.batch = batch;
    row.macs_per_image = report.macs_per_image;
    engine->ResetPeakMemory();
    row.memory_baseline_bytes = engine->Memory().in_use_bytes;
    MOGSERVE_ASSIGN_OR_RETURN(
        std::vector<double> samples,
        TimeForward(*engine, BatchOf(canvases, batch, side, side), options.warmup,
                    options.min_iterations, options.min_seconds));
    row.memory_peak_bytes = engine->Memory().peak_in_use_bytes;
    FillRowRates(std::move(samples), report.peak_gflops, row);
    std::fprintf(stderr, "  %-34s batch %2d: %8.2f ms/batch  %7.2f ms/img  %6.1f GFLOP/s\n", v.name,
                 batch, row.batch_latency.mean_ms, row.ms_per_image, row.gflops);
    report.rows.push_back(row);
  }
  return Status::Ok();
}

// Over the default variant's rows at the first precision measured.
void SummarizeSsdDefault(EngineBenchReport& report) {
  if (report.rows.empty()) return;
  const std::string precision = report.rows.front().precision;
  double batch1_ms = 0;
  for (const EngineBenchRow& r : report.rows) {
    if (r.variant == kDefaultVariant.name && r.precision == precision && r.batch == 1) {
      batch1_ms = r.ms_per_image;
    }
  }
  for (const EngineBenchRow& r : report.rows) {
    if (r.variant != kDefaultVariant.name || r.precision != precision) continue;
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

StatusOr<EngineBenchReport> RunSsdBench(const EngineBenchOptions& options) {
  EngineBenchReport report;
  report.model = "ssd";
  report.machine = DescribeMachine();
  // Threads must be set before the peak is measured: load the default engine options first.
  report.threads = options.engine.cpu.threads > 0 ? options.engine.cpu.threads : AvailableCores();
  std::vector<engine::Precision> precisions = options.precisions;
  if (precisions.empty()) precisions = {options.engine.precision};
  for (size_t i = 0; i < precisions.size(); ++i) {
    EngineBenchOptions at = options;
    at.engine.precision = precisions[i];
    const char* name = engine::PrecisionName(precisions[i]);
    if (i == 0) {
      engine::EngineOptions probe = at.engine;
      probe.cpu.allocator_cache_bytes = 0;
      MOGSERVE_RETURN_IF_ERROR(engine::CreateEngine(probe).status());  // sets the thread count
    }
    std::fprintf(stderr, "measuring the %s 3x3 convolution peak (%d threads)...\n", name,
                 report.threads);
    const engine::ConvPeak peak = engine::MeasureConv3x3Peak(2.0, precisions[i]);
    report.peaks.push_back({name, peak.gflops, peak.batch});
    report.peak_gflops = peak.gflops;  // the rows below are rated against their own precision
    report.peak_batch = peak.batch;
    std::fprintf(stderr, "  peak %.1f GFLOP/s (batch %d)\n", peak.gflops, peak.batch);
    if (options.compare_variants && i == 0) {
      for (const Variant& v : kComparedVariants)
        MOGSERVE_RETURN_IF_ERROR(RunSsdVariant(v, at, report));
    } else {
      MOGSERVE_RETURN_IF_ERROR(RunSsdVariant(kDefaultVariant, at, report));
    }
  }
  report.peak_gflops = report.peaks.front().gflops;
  report.peak_batch = report.peaks.front().batch;
  SummarizeSsdDefault(report);
  return report;
}

std::string SsdMarkdown(const EngineBenchReport& r) {
  std::string out;
  char buf[512];
  std::string peaks;
  for (const PrecisionPeak& p : r.peaks) {
    std::snprintf(buf, sizeof(buf), "%s%s %.1f (batch %d)", peaks.empty() ? "" : ", ",
                  p.precision.c_str(), p.gflops, p.batch);
    peaks += buf;
  }
  std::snprintf(buf, sizeof(buf),
                "Engine: %s  \nMachine: %s  \nMeasured 3x3-conv peak, GFLOP/s (int8: GOP/s): %s; "
                "model cost %.3f GMAC per image\n\n",
                r.engine.c_str(), r.machine.c_str(), peaks.c_str(), r.macs_per_image / 1e9);
  out += buf;
  out +=
      "| variant | precision | batch | mean ms | median | min | max | std | ms/image | images/s "
      "| GFLOP/s | % of its peak |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const EngineBenchRow& row : r.rows) {
    const LatencyStats& s = row.batch_latency;
    std::snprintf(buf, sizeof(buf),
                  "| %s | %s | %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.1f | %.1f | %.0f%% "
                  "|\n",
                  row.variant.c_str(), row.precision.c_str(), row.batch, s.mean_ms, s.median_ms,
                  s.min_ms, s.max_ms,
                  s.stddev_ms, row.ms_per_image, row.images_per_s, row.gflops,
                  100.0 * row.fraction_of_peak);
    out += buf;
  }
  std::snprintf(buf, sizeof(buf),
                "\nDefault variant at the first precision: best %.1f images/s at batch %d; worst "
                "per-image time of any "
                "batch size vs batch 1: %.2fx\n",
                r.best_images_per_s, r.best_batch, r.worst_per_image_vs_batch1);
  out += buf;
  return out;
}

nlohmann::json LatencyJson(const LatencyStats& s) {
  return {{"iterations", s.count}, {"mean_ms", s.mean_ms}, {"median_ms", s.median_ms},
          {"min_ms", s.min_ms},    {"max_ms", s.max_ms},   {"stddev_ms", s.stddev_ms}};
}

nlohmann::json RowJson(const EngineBenchRow& row) {
  nlohmann::json j = {{"variant", row.variant},
                      {"size", row.size},
                      {"precision", row.precision},
                      {"batch", row.batch}};
  j.update(LatencyJson(row.batch_latency));
  j.update({{"macs_per_image", row.macs_per_image},
            {"ms_per_image", row.ms_per_image},
            {"images_per_s", row.images_per_s},
            {"gflops", row.gflops},
            {"peak_gflops", row.peak_gflops},
            {"fraction_of_peak", row.fraction_of_peak},
            {"memory_baseline_bytes", row.memory_baseline_bytes},
            {"memory_peak_bytes", row.memory_peak_bytes}});
  if (row.reference.measured) {
    const ReferenceComparison& ref = row.reference;
    nlohmann::json rj = LatencyJson(ref.latency);
    rj.update({{"ms_per_image", ref.ms_per_image},
               {"speedup", ref.speedup},
               {"fp32_ms_per_image", ref.fp32_ms_per_image},
               {"speedup_vs_fp32", ref.speedup_vs_fp32},
               {"speedup_best", ref.speedup_best},
               {"speedup_vs_fp32_best", ref.speedup_vs_fp32_best}});
    j["reference"] = rj;
  }
  return j;
}

}  // namespace

void FillRowRates(std::vector<double> samples_ms, double peak_gflops, EngineBenchRow& row) {
  row.batch_latency = Summarize(std::move(samples_ms));
  row.ms_per_image = row.batch_latency.mean_ms / row.batch;
  row.images_per_s = 1000.0 / row.ms_per_image;
  row.gflops = 2.0 * row.macs_per_image * row.batch / row.batch_latency.mean_ms / 1e6;
  row.peak_gflops = peak_gflops;
  row.fraction_of_peak = peak_gflops > 0 ? row.gflops / peak_gflops : 0;
}

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
  if (options.engine.model == engine::ModelKind::kMogFace) return RunMogFaceBench(options);
  return RunSsdBench(options);
}

std::string EngineBenchMarkdown(const EngineBenchReport& report) {
  return report.model == "mogface" ? MogFaceBenchMarkdown(report) : SsdMarkdown(report);
}

std::string EngineBenchJson(const EngineBenchReport& r) {
  nlohmann::json rows = nlohmann::json::array();
  for (const EngineBenchRow& row : r.rows) rows.push_back(RowJson(row));
  nlohmann::json peaks = nlohmann::json::object();
  for (const PrecisionPeak& p : r.peaks)
    peaks[p.precision] = {{"gflops", p.gflops}, {"batch", p.batch}};
  nlohmann::json j = {
      {"model", r.model},          {"engine", r.engine}, {"machine", r.machine},
      {"threads", r.threads},      {"peaks", peaks},     {"peak_gflops", r.peak_gflops},
      {"peak_batch", r.peak_batch}};
  if (r.model == "mogface") {
    j.update({{"reference_measured", r.reference_measured},
              {"reference", r.reference},
              {"fp32_speedup_min", r.fp32_speedup_min},
              {"fp32_speedup_max", r.fp32_speedup_max},
              {"bf16_speedup_vs_fp32_reference_min", r.bf16_speedup_min},
              {"bf16_speedup_vs_fp32_reference_max", r.bf16_speedup_max}});
  } else {
    j.update({{"macs_per_image", r.macs_per_image},
              {"best_images_per_s", r.best_images_per_s},
              {"best_batch", r.best_batch},
              {"worst_per_image_vs_batch1", r.worst_per_image_vs_batch1}});
  }
  j["rows"] = rows;
  return j.dump(2);
}

}  // namespace mogserve::bench
