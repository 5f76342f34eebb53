// bench_report.h: report.md, report.json and report.csv, as ResultTables, one per section.
#include <cstdio>
#include <utility>

#include "bench/bench_report.h"

namespace mogserve::bench {
namespace {

constexpr unsigned kData = kInJson | kInCsv;
constexpr double kMiB = 1.0 / (1 << 20);

std::string Printf(const char* format, double a, double b = 0, double c = 0, double d = 0,
                   double e = 0) {
  char text[1024];
  std::snprintf(text, sizeof(text), format, a, b, c, d, e);
  return text;
}

// A section: its heading, the paragraph under it and where its rows go in the JSON ("": none).
ResultTable Section(std::string title, std::string intro, std::string rows_key) {
  ResultTable t;
  t.title = std::move(title);
  t.intro = std::move(intro);
  t.rows_key = std::move(rows_key);
  return t;
}

// A LatencyStats as nine columns under "latency." (JSON and CSV: every statistic).
void AddLatencyColumns(ResultTable& t, unsigned mean_md, unsigned median_md, unsigned min_max_md,
                       unsigned p95_md, unsigned stddev_md, int decimals) {
  t.AddColumn({"latency.count", "runs", 0, 1, "", false, kData | min_max_md})
      .AddColumn({"latency.mean_ms", "mean ms", decimals, 1, "", false, kData | mean_md})
      .AddColumn({"latency.median_ms", decimals == 2 ? "median ms" : "p50 ms", decimals, 1, "",
                  false, kData | median_md})
      .AddColumn({"latency.min_ms", "min ms", decimals, 1, "", false, kData | min_max_md})
      .AddColumn({"latency.max_ms", "max ms", decimals, 1, "", false, kData | min_max_md})
      .AddColumn({"latency.p90_ms", "", decimals, 1, "", false, kData})
      .AddColumn({"latency.p95_ms", "p95 ms", decimals, 1, "", false, kData | p95_md})
      .AddColumn({"latency.p99_ms", "p99 ms", decimals, 1, "", false, kData | p95_md})
      .AddColumn({"latency.stddev_ms", "stddev ms", decimals, 1, "", false, kData | stddev_md});
}

void AppendLatency(std::vector<Cell>& row, const LatencyStats& l) {
  row.insert(row.end(), {int64_t{l.count}, l.mean_ms, l.median_ms, l.min_ms, l.max_ms, l.p90_ms,
                         l.p95_ms, l.p99_ms, l.stddev_ms});
}

ResultTable Header(const BenchReport& r) {
  ResultTable t;
  t.intro = "# mogserve benchmark report";
  t.rows_key.clear();
  t.AddField({"date", "Date", r.date})
      .AddField({"command", "Command", "`" + r.command + "`", 1, kInMarkdown})
      .AddField({"command", "", r.command, 1, kInJson})
      .AddField({"engine", "Engine",
                 r.engine + (r.simulated ? " — **simulated engine, not a model**" : ""), 1,
                 kInMarkdown})
      .AddField({"engine", "", r.engine, 1, kInJson})
      .AddField({"images", "Pictures", r.images})
      .AddField(
          {"mode", "Mode", r.quick ? "quick (fewer runs, shorter points)" : "full", 1, kInMarkdown})
      .AddField({"simulated", "", r.simulated, 1, kInJson})
      .AddField({"quick", "", r.quick, 1, kInJson})
      .AddField({"canvas_side", "", int64_t{r.canvas_side}, 1, kInJson})
      .AddField({"photos", "", int64_t{r.photos}, 1, kInJson});
  return t;
}

ResultTable SingleImage(const BenchReport& r) {
  ResultTable t =
      Section("1. Single-image latency per precision",
              "One photo end to end through the engine (letterboxed canvas, Forward, Postprocess), "
              "after warm-up.",
              "single_image");
  t.AddColumn({"precision"});
  AddLatencyColumns(t, kInMarkdown, kInMarkdown, kInMarkdown, 0, kInMarkdown, 2);
  t.AddColumn({"speedup_vs_fp32", "speed-up vs fp32", 2, 1, "x", true});
  for (const SingleImageRow& s : r.single) {
    std::vector<Cell> row;
    row.emplace_back(s.precision);
    AppendLatency(row, s.latency);
    row.emplace_back(s.speedup_vs_fp32);
    t.AddRow(std::move(row));
  }
  return t;
}

ResultTable BatchSizes(const BenchReport& r) {
  ResultTable t = Section("2. Batch size per precision", "", "batch_sizes");
  t.AddField({"load.precision", "", r.load_precision, 1, kInJson})
      .AddField({"load.capacity_per_s", "", r.capacity_per_s, 1, kInJson})
      .AddField({"load.capacity_batch", "", int64_t{r.capacity_batch}, 1, kInJson})
      .AddField({"load.naive_capacity_per_s", "", r.naive_capacity_per_s, 1, kInJson})
      .AddField({"load.pipeline_capacity_per_s", "", r.pipeline_capacity_per_s, 1, kInJson})
      .AddField({"load.naive_pipeline_per_s", "", r.naive_pipeline_per_s, 1, kInJson})
      .AddField({"load.knee_batch", "", int64_t{r.knee_batch}, 1, kInJson})
      .AddField({"load.settings", "", r.load_settings, 1, kInJson});
  t.AddColumn({"precision"})
      .AddColumn({"batch"})
      .AddColumn({"images"})
      .AddColumn({"total_ms", "total ms"})
      .AddColumn({"ms_per_image", "ms/image", 3})
      .AddColumn({"images_per_s", "images/s"})
      .AddColumn({"speedup_vs_batch1", "speed-up vs batch 1", 2, 1, "x", true})
      .AddColumn({"peak_memory_bytes", "peak engine memory MiB", 1, kMiB});
  for (const BatchRow& b : r.batches) {
    t.AddRow({b.precision, int64_t{b.batch}, int64_t{b.images}, b.total_ms, b.ms_per_image,
              b.images_per_s, b.speedup_vs_batch1, int64_t{b.peak_memory_bytes}});
  }
  t.notes.push_back("![ms per image vs batch size](batch_sizes.png)");
  t.notes.push_back(
      "Sections 3-5 run the pipeline in-process on the " + r.load_precision +
      " engine. The engine alone (the warm-up): " +
      Printf("**%.1f images/s** at batch %.0f, %.1f images/s at batch 1. ", r.capacity_per_s,
             r.capacity_batch, r.naive_capacity_per_s) +
      Printf("The pipeline (section 3's closed loops, pre- and post-processing included): "
             "**%.1f images/s** at best, %.1f with the naive policy; ",
             r.pipeline_capacity_per_s, r.naive_pipeline_per_s) +
      "the open loops below are fractions of these. Settings: " + r.load_settings + ".");
  return t;
}

// Sections 3 and 4: one row per load point; `comparison` picks section 3's Markdown columns.
ResultTable LoadPoints(const std::vector<PipelineBenchRow>& rows, bool comparison) {
  const unsigned s3 = comparison ? unsigned{kInMarkdown} : 0u;
  const unsigned s4 = comparison ? 0u : unsigned{kInMarkdown};
  ResultTable t;
  t.AddColumn({"policy"})
      .AddColumn({"mode", "loop", 0, 1, "", false, kData | s3})
      .AddColumn({"who", "clients / offered/s", 0, 1, "", false, s3})
      .AddColumn({"concurrency", "", 0, 1, "", false, kData})
      .AddColumn({"load", "load", 2, 1, "", false, kData | s4})
      .AddColumn({"offered_per_s", "offered/s", 1, 1, "", false, kData | s4})
      .AddColumn({"window_s", "window s", 2, 1, "", false, kData | s3})
      .AddColumn({"done", "images"})
      .AddColumn({"rejected", "", 0, 1, "", false, kData})
      .AddColumn({"throughput_per_s", "images/s"});
  AddLatencyColumns(t, s3, kInMarkdown, 0, kInMarkdown, s3, 1);
  t.AddColumn({"mean_batch_size", "mean batch", 2, 1, "", false, kData | s4})
      .AddColumn({"busy_ratio", "engine busy", 0, 100, "%"})
      .AddColumn({"engine_peak_bytes", "engine peak MiB", 1, kMiB, "", false, kData | s3})
      .AddColumn({"peak_rss_bytes", "peak RSS MiB", 1, kMiB, "", false, kData | s3})
      .AddColumn({"rejected_shown", "rejected", 0, 1, "", false, kInMarkdown});
  for (const PipelineBenchRow& row : rows) {
    std::vector<Cell> cells = {
        row.policy,
        row.mode,
        row.mode == "closed" ? std::to_string(row.concurrency) : Printf("%.1f", row.offered_per_s),
        int64_t{row.concurrency},
        row.load,
        row.offered_per_s,
        row.window_s,
        int64_t{row.done},
        int64_t{row.rejected},
        row.throughput_per_s};
    AppendLatency(cells, row.latency);
    cells.insert(cells.end(), {row.mean_batch_size, row.busy_ratio, int64_t{row.engine_peak_bytes},
                               int64_t{row.peak_rss_bytes}, int64_t{row.rejected}});
    t.AddRow(std::move(cells));
  }
  return t;
}

ResultTable Comparison(const BenchReport& r) {
  ResultTable t = LoadPoints(r.comparison, true);
  t.title = "3. Traditional (naive) vs optimised (continuous batching + pipeline)";
  t.intro = Printf(
      "Same offered load for both: a closed loop of clients, and an open loop of the same "
      "Poisson arrivals at %.1f requests/s (a fraction of what naive sustains in the closed "
      "loop). Engine peak = the most memory the engine's allocator had in use during the point "
      "(weights + activations); peak RSS is the whole process, including the caching "
      "allocator's free blocks kept from earlier sections, so only the engine peak compares "
      "policies.",
      r.comparison_offered_per_s);
  t.rows_key = "traditional_vs_optimised.rows";
  t.AddField(
      {"traditional_vs_optimised.offered_per_s", "", r.comparison_offered_per_s, 1, kInJson});
  return t;
}

ResultTable Curve(const BenchReport& r) {
  ResultTable t = LoadPoints(r.curve, false);
  t.title = "4. Throughput vs latency per policy";
  t.rows_key = "throughput_vs_latency";
  t.notes.push_back("![throughput vs latency](latency_vs_throughput.png)");
  return t;
}

ResultTable StreamSummary(const BenchReport& r) {
  ResultTable t =
      Section("5. Simulated 25 FPS camera streams",
              "Each stream submits a frame every 40 ms (frames cycle through the pictures), "
              "latest-only, stream priority. A stream is served in real time when >= 95% of its "
              "frames are answered within 200 ms and every other frame was superseded (none late, "
              "rejected or failed). Stream counts are tried from 1 up until one misses.",
              "");
  t.AddColumn({"policy"}).AddColumn({"max_realtime_streams", "most streams in real time"});
  for (const StreamSearch& s : r.streams) t.AddRow({s.policy, int64_t{s.max_realtime_streams}});
  return t;
}

ResultTable StreamPoints(const BenchReport& r) {
  ResultTable t;
  t.rows_key = "streams.policies";
  t.group_columns = 2;
  t.nest_key = "tried";
  t.AddField({"streams.fps", "", int64_t{25}, 1, kInJson})
      .AddField({"streams.deadline_ms", "", int64_t{200}, 1, kInJson})
      .AddField({"streams.required_in_time", "", 0.95, 2, kInJson});
  t.AddColumn({"policy"})
      .AddColumn({"max_realtime_streams", "", 0, 1, "", false, kData})
      .AddColumn({"streams"})
      .AddColumn({"seconds", "", 1, 1, "", false, kData})
      .AddColumn({"frames"})
      .AddColumn({"answered"})
      .AddColumn({"in_time", "within 200 ms"})
      .AddColumn({"late"})
      .AddColumn({"superseded"})
      .AddColumn({"rejected"})
      .AddColumn({"failed"});
  AddLatencyColumns(t, 0, kInMarkdown, 0, 0, 0, 1);
  t.columns[t.columns.size() - 2].shown |= kInMarkdown;  // p99 (p95 only in JSON and CSV)
  t.AddColumn({"realtime_streams", "streams in real time"})
      .AddColumn({"all_realtime", "", 0, 1, "", false, kData});
  for (const StreamSearch& s : r.streams) {
    for (const StreamPoint& p : s.tried) {
      std::vector<Cell> row = {s.policy,
                               int64_t{s.max_realtime_streams},
                               int64_t{p.streams},
                               p.seconds,
                               int64_t{p.frames},
                               int64_t{p.answered},
                               int64_t{p.in_time},
                               int64_t{p.late},
                               int64_t{p.superseded},
                               int64_t{p.rejected},
                               int64_t{p.failed}};
      AppendLatency(row, p.latency);
      row.insert(row.end(), {int64_t{p.realtime_streams}, p.all_realtime});
      t.AddRow(std::move(row));
    }
  }
  t.notes.push_back("![camera streams](streams.png)");
  return t;
}

ResultTable Machine(const BenchReport& r) {
  const MachineInfo& m = r.machine;
  ResultTable t = Section("6. Machine", "", "");
  t.AddField(
       {"machine.cpu", "CPU", m.cpu + ", " + std::to_string(m.cores) + " cores", 1, kInMarkdown})
      .AddField({"machine.cpu", "", m.cpu, 1, kInJson})
      .AddField({"machine.cores", "", int64_t{m.cores}, 1, kInJson})
      .AddField({"machine.memory", "Memory", Printf("%.1f GiB", m.memory_bytes / 1073741824.0), 1,
                 kInMarkdown})
      .AddField({"machine.memory_bytes", "", int64_t{m.memory_bytes}, 1, kInJson})
      .AddField({"machine.gpu", "GPU", m.gpu})
      .AddField({"machine.torch", "Libraries", m.torch_version})
      .AddField({"machine.compiler", "Compiler", m.compiler})
      .AddField({"plots.note", "Plots", r.plots_note, 1, kInMarkdown})
      .AddField({"machine.command", "Command", "`" + r.command + "`", 1, kInMarkdown})
      .AddField({"machine.command", "", r.command, 1, kInJson});
  return t;
}

ResultTable Guide(const BenchReport& r) {
  ResultTable t = Section(
      "Original deployment guide (GPU) vs measured here",
      "The guide's numbers are for MogFace on a GPU; ours are from **this machine** (above), a "
      "different machine and possibly a different model, so compare the ratios, not the "
      "absolute values.",
      "guide_comparison");
  t.AddColumn({"claim"})
      .AddColumn({"guide", "guide (GPU)"})
      .AddColumn({"guide_ratio", "guide ratio", 2, 1, "x"})
      .AddColumn({"measured", "measured here"})
      .AddColumn({"measured_ratio", "measured ratio", 2, 1, "x", true});
  for (const GuideRow& g : r.guide) {
    t.AddRow({g.claim, g.guide, g.guide_ratio, g.measured, g.measured_ratio});
  }
  t.notes.push_back(
      "Ratios are new / old (speed-ups: old time / new time; memory and standard deviation: "
      "new / old, lower is better).");
  return t;
}

ResultTable Plots(const BenchReport& r) {
  ResultTable t = Section("Plots", "", "");
  t.AddField({"plots.generated", "", r.plots_generated, 1, kInJson})
      .AddField({"plots.note", "", r.plots_note, 1, kInJson})
      .AddField({"plots.files", "", r.plot_files, 1, kInJson});
  if (r.plots_generated) {
    std::string links;
    for (const std::string& f : r.plot_files) links += "- [" + f + "](" + f + ")\n";
    if (!links.empty()) links.pop_back();
    t.notes.push_back(links);
  } else {
    t.notes.push_back("Plots skipped: " + r.plots_note);
  }
  return t;
}

}  // namespace

std::vector<ResultTable> BenchReportTables(const BenchReport& r) {
  return {Header(r),        SingleImage(r),  BatchSizes(r), Comparison(r), Curve(r),
          StreamSummary(r), StreamPoints(r), Machine(r),    Guide(r),      Plots(r)};
}

}  // namespace mogserve::bench
