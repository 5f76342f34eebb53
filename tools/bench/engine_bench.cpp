#include "bench/engine_bench.h"

#include <algorithm>
#include <cstdio>

#include "api/serving_stack.h"
#include "bench/forward_timer.h"
#include "bench/mogface_bench.h"
#include "bench/onnxruntime_bench.h"
#include "bench/reference_bench.h"
#include "common/cpu_info.h"
#include "common/fma_peak.h"
#include "engine/caching_cpu_allocator.h"
#include "engine/conv_peak.h"
#include "model/ssd_mobilenet_v1.h"

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
  MOGSERVE_ASSIGN_OR_RETURN(std::unique_ptr<engine::Engine> engine,
                            api::LoadEngine(options.model, eo));
  if (v.caching_allocator && !engine::CachingCpuAllocatorInstalled()) {
    return Internal("the caching allocator did not install");
  }
  const int max_batch = *std::max_element(options.batch_sizes.begin(), options.batch_sizes.end());
  // A fixed square (the SSD, BlazeFace, SCRFD), else --sizes (YuNet runs at any padded size).
  const int fixed = engine->info().fixed_side;
  const std::vector<int> sides = fixed > 0 ? std::vector<int>{fixed} : options.sizes;
  if (&v == &kDefaultVariant) report.engine = engine->info().Describe();
  for (int side : sides) {
    const auto canvases = NoiseCanvases(max_batch, side, side);
    report.macs_per_image = static_cast<double>(engine->MacsPerImage(side, side));
    for (int batch : options.batch_sizes) {
      EngineBenchRow row;
      row.variant = v.name;
      row.size = side;
      row.precision = engine->info().precision;
      row.batch = batch;
      row.macs_per_image = report.macs_per_image;
      MOGSERVE_RETURN_IF_ERROR(TimeRow(*engine, canvases, options, report.peak_gflops, row));
      std::fprintf(stderr, "  %-34s %4d batch %2d: %8.2f ms/batch  %7.2f ms/img  %6.1f GFLOP/s\n",
                   v.name, side, batch, row.batch_latency.mean_ms, row.ms_per_image, row.gflops);
      report.rows.push_back(row);
    }
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
      // sets the thread count
      MOGSERVE_RETURN_IF_ERROR(api::LoadEngine(options.model, probe).status());
    }
    std::fprintf(stderr, "measuring the %s 3x3 convolution peak (%d threads)...\n", name,
                 report.threads);
    MOGSERVE_ASSIGN_OR_RETURN(const engine::ConvPeak peak,
                              engine::MeasureConv3x3Peak(2.0, precisions[i]));
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

// The latency columns, under `prefix` ("" or "reference."): JSON and CSV always; Markdown only
// the row's own (not the reference's), median and std where `median_md` says.
void AddLatencyColumns(ResultTable& t, const std::string& prefix, unsigned median_md) {
  const unsigned data = kInJson | kInCsv;
  const unsigned md = prefix.empty() ? unsigned{kInMarkdown} : 0u;
  const int decimals = prefix.empty() ? 2 : 1;
  t.AddColumn({prefix + "iterations", "", 0, 1, "", false, data})
      .AddColumn({prefix + "mean_ms", "mean ms", decimals, 1, "", false, data | md})
      .AddColumn({prefix + "median_ms", "median", decimals, 1, "", false, data | (md & median_md)})
      .AddColumn({prefix + "min_ms", "min", decimals, 1, "", false, data | md})
      .AddColumn({prefix + "max_ms", "max", decimals, 1, "", false, data | md})
      .AddColumn({prefix + "stddev_ms", "std", decimals, 1, "", false, data | (md & median_md)});
}

void AppendLatency(std::vector<Cell>& row, const LatencyStats& s) {
  row.insert(row.end(),
             {int64_t{s.count}, s.mean_ms, s.median_ms, s.min_ms, s.max_ms, s.stddev_ms});
}

// The SSD's rows carry no size: its input is fixed.
int RowSize(const EngineBenchRow& row) {
  return row.size > 0 ? row.size : model::kSsdInputSize;
}

// --onnxruntime: ONNX Runtime on the same network at every (size, batch) of the rows; a failure
// is reported in the report, not an error (the engine's rows stand).
void AddOnnxRuntime(const EngineBenchOptions& options, EngineBenchReport& report) {
  const model::ModelSource& source = options.model.source;
  OnnxRuntimeBenchOptions o;
  o.model = options.model.spec;
  o.variant = source.synthetic_weights;
  o.seed = source.synthetic_seed;
  o.weights = source.weights;
  o.ssd_model_dir = source.model_dir;
  for (const EngineBenchRow& row : report.rows) {
    if (std::find(o.sizes.begin(), o.sizes.end(), RowSize(row)) == o.sizes.end())
      o.sizes.push_back(RowSize(row));
    if (std::find(o.batch_sizes.begin(), o.batch_sizes.end(), row.batch) == o.batch_sizes.end())
      o.batch_sizes.push_back(row.batch);
  }
  o.threads = report.threads;
  o.min_seconds = std::max(options.min_seconds, 1.0);
  o.min_runs = std::max(options.min_iterations, 3);
  o.python = ResolveReferencePython(options.reference_python);
  StatusOr<OnnxRuntimeRun> run = RunOnnxRuntimeBench(o);
  if (!run.ok()) {
    report.onnxruntime = "not measured: " + run.status().message();
    std::fprintf(stderr, "onnxruntime: %s\n", report.onnxruntime.c_str());
    return;
  }
  report.onnxruntime_measured = true;
  report.onnxruntime = "onnxruntime-node " + run->version + ", CPU execution provider, FP32, " +
                       std::to_string(o.threads) + " threads (median pass)";
  for (EngineBenchRow& row : report.rows) {
    for (const OnnxRuntimeRow& ort : run->rows) {
      if (ort.size != RowSize(row) || ort.batch != row.batch) continue;
      row.onnxruntime_ms_per_image = ort.ms_per_image;
      // Medians on both sides: a busy machine disturbs them least.
      const double ours = row.batch_latency.median_ms / row.batch;
      row.speedup_vs_onnxruntime = ours > 0 ? ort.ms_per_image / ours : 0;
    }
  }
}

}  // namespace

Status TimeRow(engine::Engine& engine, const std::vector<std::vector<uint8_t>>& canvases,
               const EngineBenchOptions& options, double peak_gflops, EngineBenchRow& row) {
  engine.ResetPeakMemory();
  row.memory_baseline_bytes = engine.Memory().in_use_bytes;
  MOGSERVE_ASSIGN_OR_RETURN(
      std::vector<double> samples,
      TimeForward(engine, BatchOf(canvases, row.batch, row.size, row.size), options.warmup,
                  options.min_iterations, options.min_seconds));
  row.memory_peak_bytes = engine.Memory().peak_in_use_bytes;
  FillRowRates(std::move(samples), peak_gflops, row);
  return Status::Ok();
}

void FillRowRates(std::vector<double> samples_ms, double peak_gflops, EngineBenchRow& row) {
  row.batch_latency = Summarize(std::move(samples_ms));
  row.ms_per_image = row.batch_latency.mean_ms / row.batch;
  row.images_per_s = 1000.0 / row.ms_per_image;
  row.gflops = 2.0 * row.macs_per_image * row.batch / row.batch_latency.mean_ms / 1e6;
  row.peak_gflops = peak_gflops;
  row.fraction_of_peak = peak_gflops > 0 ? row.gflops / peak_gflops : 0;
}

std::string DescribeMachine() {
  const std::string& model = HostCpu().model_name;
  return (model.empty() ? std::string("unknown CPU") : model) + ", " +
         std::to_string(AvailableCores()) + " cores";
}

StatusOr<EngineBenchReport> RunEngineBench(const EngineBenchOptions& options) {
  if (options.batch_sizes.empty()) return InvalidArgument("no batch sizes to measure");
  std::fprintf(stderr, "measuring the machine's FP32 FMA peak...\n");
  const FmaPeak machine = MeasureFmaPeak(options.engine.cpu.threads, 1.0);
  std::fprintf(stderr, "  %.1f GFLOP/s (%s, %d threads)\n", machine.gflops, machine.isa.c_str(),
               machine.threads);
  MOGSERVE_ASSIGN_OR_RETURN(EngineBenchReport report,
                            options.model.spec->weights == model::ModelSpec::Weights::kCheckpoint
                                ? RunMogFaceBench(options)
                                : RunSsdBench(options));
  report.cpu = std::string(IsaLevelName(HostCpu().Level())) + ": " + HostCpu().Describe();
  report.machine_fp32_peak_gflops = machine.gflops;
  report.machine_peak_isa = machine.isa;
  for (EngineBenchRow& row : report.rows) {
    row.fraction_of_machine_peak = machine.gflops > 0 ? row.gflops / machine.gflops : 0;
  }
  if (options.onnxruntime) AddOnnxRuntime(options, report);
  return report;
}

std::vector<ResultTable> EngineBenchTables(const EngineBenchReport& r) {
  const bool mogface = r.model == "mogface";
  ResultTable t;
  t.AddField({"model", "", r.model})
      .AddField({"engine", "Engine", r.engine})
      .AddField({"machine", "Machine", r.machine})
      .AddField({"cpu", "CPU", r.cpu})
      .AddField({"threads", "", int64_t{r.threads}})
      .AddField({"machine_fp32_peak_gflops",
                 "Machine FP32 peak (FMA loop, " + r.machine_peak_isa + "), GFLOP/s",
                 r.machine_fp32_peak_gflops, 1})
      .AddField({"machine_peak_isa", "", r.machine_peak_isa});
  for (const PrecisionPeak& p : r.peaks) {
    t.AddField({"peaks." + p.precision + ".gflops",
                "Measured 3x3-conv peak, " + p.precision + ", GFLOP/s (int8: GOP/s)", p.gflops});
    t.AddField({"peaks." + p.precision + ".batch", "", int64_t{p.batch}});
  }
  t.AddField({"peak_gflops", "", r.peak_gflops})
      .AddField({"peak_batch", "", int64_t{r.peak_batch}});
  t.AddField({"onnxruntime_measured", "", r.onnxruntime_measured});
  if (!r.onnxruntime.empty()) t.AddField({"onnxruntime", "ONNX Runtime", r.onnxruntime});
  if (mogface) {
    t.AddField({"reference_measured", "", r.reference_measured})
        .AddField({"reference", "Reference", r.reference})
        .AddField({"fp32_speedup_min", "", r.fp32_speedup_min, 2})
        .AddField({"fp32_speedup_max", "", r.fp32_speedup_max, 2})
        .AddField({"bf16_speedup_vs_fp32_reference_min", "", r.bf16_speedup_min, 2})
        .AddField({"bf16_speedup_vs_fp32_reference_max", "", r.bf16_speedup_max, 2});
    if (r.reference_measured) {
      char note[256];
      std::snprintf(note, sizeof(note),
                    "Against the eager FP32 reference (mean pass times): FP32 %.2f×–%.2f× "
                    "(target ≥ 1.3×), BF16 %.2f×–%.2f× (target ≥ 2.5×)",
                    r.fp32_speedup_min, r.fp32_speedup_max, r.bf16_speedup_min, r.bf16_speedup_max);
      t.notes.push_back(note);
    }
  } else {
    t.AddField({"macs_per_image", "Model cost, MAC per image", r.macs_per_image, 0})
        .AddField({"best_images_per_s", "Default variant at the first precision: best images/s",
                   r.best_images_per_s})
        .AddField({"best_batch", "... at batch", int64_t{r.best_batch}})
        .AddField({"worst_per_image_vs_batch1",
                   "Worst per-image time of any batch size vs batch 1 (x)",
                   r.worst_per_image_vs_batch1, 2});
  }
  const unsigned data = kInJson | kInCsv;
  const unsigned ssd_md = mogface ? data : kEverywhere;
  const unsigned mogface_md = mogface ? kEverywhere : data;
  // Sizes and costs show where the rows have several (MogFace; an ONNX file at --sizes).
  const bool sized = mogface || std::any_of(r.rows.begin(), r.rows.end(), [&](const auto& row) {
                       return row.size != r.rows.front().size;
                     });
  const unsigned sized_md = sized ? kEverywhere : data;
  t.AddColumn({"variant", "", 0, 1, "", false, ssd_md})
      .AddColumn({"size", "", 0, 1, "", false, sized_md})
      .AddColumn({"precision"})
      .AddColumn({"batch"});
  AddLatencyColumns(t, "", mogface ? 0u : unsigned{kInMarkdown});
  t.AddColumn({"macs_per_image", "GMAC/image", 2, 1e-9, "", false, sized_md})
      .AddColumn({"ms_per_image", "ms/image", mogface ? 1 : 2})
      .AddColumn({"images_per_s", "images/s", mogface ? 2 : 1})
      .AddColumn({"gflops", "GFLOP/s"})
      .AddColumn({"peak_gflops", "", 1, 1, "", false, data})
      .AddColumn(
          {"fraction_of_peak", mogface ? "% of conv peak" : "% of its conv peak", 0, 100, "%"})
      .AddColumn({"fraction_of_machine_peak", "% of FP32 machine peak", 0, 100, "%"})
      .AddColumn({"memory_baseline_bytes", "model MiB", 0, 1.0 / (1 << 20), "", false, mogface_md})
      .AddColumn({"memory_peak_bytes", "peak MiB", 0, 1.0 / (1 << 20), "", false, mogface_md});
  AddLatencyColumns(t, "reference.", 0u);
  t.AddColumn({"reference.ms_per_image", "ref ms/image", 1, 1, "", false, mogface_md})
      .AddColumn({"reference.speedup", "× ref", 2, 1, "×", false, mogface_md})
      .AddColumn({"reference.fp32_ms_per_image", "", 1, 1, "", false, data})
      .AddColumn({"reference.speedup_vs_fp32", "× FP32 ref", 2, 1, "×", false, mogface_md})
      .AddColumn({"reference.speedup_best", "", 2, 1, "", false, data})
      .AddColumn({"reference.speedup_vs_fp32_best", "× FP32 ref, best pass", 2, 1, "×", false,
                  mogface_md});
  const unsigned ort_md = r.onnxruntime_measured ? kEverywhere : data;
  t.AddColumn({"onnxruntime_ms_per_image", "ORT ms/image", mogface ? 1 : 2, 1, "", false, ort_md})
      .AddColumn({"speedup_vs_onnxruntime", "× ORT FP32", 2, 1, "×", false, ort_md});
  for (const EngineBenchRow& row : r.rows) {
    std::vector<Cell> cells = {row.variant, int64_t{row.size}, row.precision, int64_t{row.batch}};
    AppendLatency(cells, row.batch_latency);
    cells.insert(cells.end(), {row.macs_per_image, row.ms_per_image, row.images_per_s, row.gflops,
                               row.peak_gflops, row.fraction_of_peak, row.fraction_of_machine_peak,
                               int64_t{row.memory_baseline_bytes}, int64_t{row.memory_peak_bytes}});
    const ReferenceComparison& ref = row.reference;
    if (ref.measured) {
      AppendLatency(cells, ref.latency);
      cells.insert(cells.end(), {ref.ms_per_image, ref.speedup, ref.fp32_ms_per_image,
                                 ref.speedup_vs_fp32, ref.speedup_best, ref.speedup_vs_fp32_best});
    } else {
      cells.resize(cells.size() + 12);  // not measured: left out of JSON, "-" in Markdown
    }
    if (row.onnxruntime_ms_per_image > 0) {
      cells.insert(cells.end(), {row.onnxruntime_ms_per_image, row.speedup_vs_onnxruntime});
    } else {
      cells.resize(cells.size() + 2);
    }
    t.AddRow(std::move(cells));
  }
  return {t};
}

}  // namespace mogserve::bench
