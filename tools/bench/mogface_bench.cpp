#include "bench/mogface_bench.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <optional>
#include <tuple>

#include "api/serving_stack.h"
#include "bench/forward_timer.h"
#include "bench/reference_bench.h"
#include "engine/conv_peak.h"

namespace mogserve::bench {
namespace {

constexpr double kPeakSeconds = 2.0;

using RowKey = std::tuple<int, std::string, int>;  // size, precision, batch

// The Python reference's side of the run: where it is and what it loads.
struct ReferencePlan {
  bool enabled = false;
  ReferenceBenchOptions options;
  std::optional<ScratchDir> scratch;  // holds the exported synthetic weights
  std::string weights_label;          // for the report
};

// Checks the interpreter and exports the weights; on any problem says why in
// report.reference and leaves the plan disabled.
void PrepareReference(const EngineBenchOptions& options, EngineBenchReport& report,
                      ReferencePlan& plan) {
  if (!options.reference) {
    report.reference = "not requested (--reference)";
    return;
  }
  ReferenceBenchOptions& ro = plan.options;
  ro.python = ResolveReferencePython(options.reference_python);
  ro.script = ResolveReferenceScript(options.reference_script);
  if (Status s = CheckReferencePython(ro.python); !s.ok()) {
    report.reference = "not measured: " + s.message();
    return;
  }
  const model::ModelSource& source = options.model.source;
  if (source.synthetic_weights.empty()) {
    ro.weights = source.weights;  // the reference reads .pt/.pth/.safetensors itself
    plan.weights_label = source.weights;
  } else {
    plan.scratch.emplace();
    plan.weights_label = "the engine's synthetic " + source.synthetic_weights + " weights (seed " +
                         std::to_string(source.synthetic_seed) + "), exported as safetensors";
    ro.weights = plan.scratch->path() + "/synthetic.safetensors";
    std::fprintf(stderr, "exporting the synthetic weights for the reference to %s\n",
                 ro.weights.c_str());
    if (Status s =
            WriteSyntheticWeights(source.synthetic_weights, source.synthetic_seed, ro.weights);
        !s.ok()) {
      report.reference = "not measured: " + s.ToString();
      return;
    }
  }
  ro.batch_sizes = options.batch_sizes;
  // On a GPU the reference runs on the same kind of device (its PyTorch's CUDA), channels-last.
  const StatusOr<engine::DeviceSpec> device = engine::ParseDevice(options.engine.device);
  ro.device = device.ok() ? device->backend : "cpu";
  for (engine::Precision p : options.precisions) ro.precisions.push_back(engine::PrecisionName(p));
  ro.warmup = options.warmup;
  ro.min_iterations = options.min_iterations;
  ro.min_seconds = options.min_seconds;
  plan.enabled = true;
}

// One engine of `precision`: its peak (first time) and a row per batch size at size x size.
Status RunEngineRows(const EngineBenchOptions& options, int size, engine::Precision precision,
                     EngineBenchReport& report) {
  engine::EngineOptions eo = options.engine;
  eo.precision = precision;
  const char* name = engine::PrecisionName(precision);
  std::fprintf(stderr, "loading mogface (%s)...\n", name);
  MOGSERVE_ASSIGN_OR_RETURN(std::unique_ptr<engine::Engine> engine,
                            api::LoadEngine(options.model, eo));
  const engine::EngineInfo& info = engine->info();
  if (size % info.multiple != 0) {
    return InvalidArgument("--sizes: " + std::to_string(size) + " is not a multiple of " +
                           std::to_string(info.multiple));
  }
  if (report.engine.empty()) report.engine = info.Describe() + ", weights " + info.weights;
  report.threads = info.threads;
  auto peak = std::find_if(report.peaks.begin(), report.peaks.end(),
                           [&](const PrecisionPeak& p) { return p.precision == name; });
  if (peak == report.peaks.end()) {
    std::fprintf(stderr, "measuring the %s 3x3 convolution peak (%d threads)...\n", name,
                 info.threads);
    MOGSERVE_ASSIGN_OR_RETURN(const engine::ConvPeak measured,
                              engine::MeasureConv3x3Peak(kPeakSeconds, precision));
    std::fprintf(stderr, "  peak %.1f GFLOP/s (batch %d)\n", measured.gflops, measured.batch);
    report.peaks.push_back({name, measured.gflops, measured.batch});
    peak = report.peaks.end() - 1;
  }
  const int max_batch = *std::max_element(options.batch_sizes.begin(), options.batch_sizes.end());
  const auto canvases = NoiseCanvases(max_batch, size, size);
  for (int batch : options.batch_sizes) {
    EngineBenchRow row;
    row.variant = "mogface " + info.variant;
    row.size = size;
    row.precision = name;
    row.batch = batch;
    row.macs_per_image = static_cast<double>(engine->MacsPerImage(size, size));
    MOGSERVE_RETURN_IF_ERROR(TimeRow(*engine, canvases, options, peak->gflops, row));
    std::fprintf(stderr,
                 "  mogface %s %dx%d %s batch %d: %9.1f ms/batch %8.1f ms/img %6.1f GFLOP/s "
                 "(%.0f%% of peak), peak memory %.0f MiB\n",
                 info.variant.c_str(), size, size, name, batch, row.batch_latency.mean_ms,
                 row.ms_per_image, row.gflops, 100.0 * row.fraction_of_peak,
                 static_cast<double>(row.memory_peak_bytes) / (1 << 20));
    report.rows.push_back(std::move(row));
  }
  return Status::Ok();
}

// Runs the reference at `size`; on failure says so in the report and disables it.
void RunReferenceAt(int size, ReferencePlan& plan, EngineBenchReport& report,
                    std::map<RowKey, LatencyStats>& reference_rows) {
  plan.options.sizes = {size};
  plan.options.threads = report.threads;
  std::fprintf(stderr, "timing the Python reference (%s) at %dx%d...\n",
               plan.options.script.c_str(), size, size);
  auto run = RunReferenceBench(plan.options);
  if (!run.ok()) {
    report.reference = "failed: " + run.status().ToString();
    std::fprintf(stderr, "warning: reference %s; continuing without it\n",
                 report.reference.c_str());
    plan.enabled = false;
    return;
  }
  for (const ReferenceRow& r : run->rows)
    reference_rows[{r.size, r.precision, r.batch}] = r.latency;
  report.reference_measured = true;
  report.reference = plan.options.script + ", PyTorch " + run->torch_version + " eager, " +
                     run->memory_format + ", " + std::to_string(run->threads) +
                     " threads; BF16 = " + run->bf16_mode + "; weights: " + plan.weights_label;
}

// Attaches the reference's timings to the rows and summarises the speedups.
void CompareWithReference(const std::map<RowKey, LatencyStats>& reference_rows,
                          EngineBenchReport& report) {
  bool first_fp32 = true, first_bf16 = true;
  for (EngineBenchRow& row : report.rows) {
    const auto same = reference_rows.find({row.size, row.precision, row.batch});
    const auto fp32 = reference_rows.find({row.size, "fp32", row.batch});
    ReferenceComparison& ref = row.reference;
    if (same != reference_rows.end()) {
      ref.measured = true;
      ref.latency = same->second;
      ref.ms_per_image = same->second.mean_ms / row.batch;
      ref.speedup = ref.ms_per_image / row.ms_per_image;
      ref.speedup_best = same->second.min_ms / row.batch_latency.min_ms;
    }
    if (fp32 == reference_rows.end()) continue;
    ref.measured = true;
    ref.fp32_ms_per_image = fp32->second.mean_ms / row.batch;
    ref.speedup_vs_fp32 = ref.fp32_ms_per_image / row.ms_per_image;
    ref.speedup_vs_fp32_best = fp32->second.min_ms / row.batch_latency.min_ms;
    double& lo = row.precision == "fp32" ? report.fp32_speedup_min : report.bf16_speedup_min;
    double& hi = row.precision == "fp32" ? report.fp32_speedup_max : report.bf16_speedup_max;
    bool& first = row.precision == "fp32" ? first_fp32 : first_bf16;
    lo = first ? ref.speedup_vs_fp32 : std::min(lo, ref.speedup_vs_fp32);
    hi = first ? ref.speedup_vs_fp32 : std::max(hi, ref.speedup_vs_fp32);
    first = false;
  }
}

}  // namespace

StatusOr<EngineBenchReport> RunMogFaceBench(const EngineBenchOptions& options) {
  if (options.sizes.empty()) return InvalidArgument("--sizes: no input sizes to measure");
  if (options.precisions.empty()) return InvalidArgument("--precisions: no precisions to measure");
  EngineBenchReport report;
  report.model = "mogface";
  report.machine = DescribeMachine();
  ReferencePlan plan;
  PrepareReference(options, report, plan);
  if (options.reference && !plan.enabled) {
    std::fprintf(stderr, "note: the Python reference is %s; continuing without it\n",
                 report.reference.c_str());
  }
  std::map<RowKey, LatencyStats> reference_rows;
  for (int size : options.sizes) {
    for (engine::Precision precision : options.precisions)
      MOGSERVE_RETURN_IF_ERROR(RunEngineRows(options, size, precision, report));
    if (plan.enabled) RunReferenceAt(size, plan, report, reference_rows);
  }
  for (const PrecisionPeak& p : report.peaks) {
    if (p.precision == "fp32") {
      report.peak_gflops = p.gflops;
      report.peak_batch = p.batch;
    }
  }
  CompareWithReference(reference_rows, report);
  return report;
}

}  // namespace mogserve::bench
