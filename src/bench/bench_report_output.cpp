// bench_report.h: the guide comparison, the plots, report.md and report.json.
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "bench/bench_report.h"

namespace mogserve::bench {
namespace {

namespace fs = std::filesystem;

std::string Format(const char* format, double a, double b = 0, double c = 0) {
  char text[128];
  std::snprintf(text, sizeof(text), format, a, b, c);
  return text;
}

double MiB(int64_t bytes) {
  return bytes / 1048576.0;
}

const PipelineBenchRow* FindComparison(const BenchReport& r, const std::string& policy,
                                       const std::string& mode) {
  for (const PipelineBenchRow& row : r.comparison) {
    if (row.policy == policy && row.mode == mode) return &row;
  }
  return nullptr;
}

const StreamSearch* FindStreams(const BenchReport& r, const std::string& policy) {
  for (const StreamSearch& s : r.streams) {
    if (s.policy == policy) return &s;
  }
  return nullptr;
}

// "gnuplot" in PATH, or the path itself when it has a slash; "" when not executable.
std::string FindExecutable(const std::string& name) {
  if (name.empty()) return "";
  if (name.find('/') != std::string::npos) {
    return access(name.c_str(), X_OK) == 0 ? name : "";
  }
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs gnuplot on `script` in `dir`; the first line of its error output on failure.
bool RunGnuplot(const std::string& gnuplot, const std::string& dir, const std::string& script,
                std::string* error) {
  const std::string log = (fs::path(dir) / (script + ".log")).string();
  const std::string command = "cd " + Quote(dir) + " && " + Quote(gnuplot) + " " + Quote(script) +
                              " >" + Quote(log) + " 2>&1";
  const int status = std::system(command.c_str());
  std::ifstream f(log);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::error_code ec;
  fs::remove(log, ec);
  if (status == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0) return true;
  *error = text.empty() ? "exit status " + std::to_string(status) : text.substr(0, 300);
  return false;
}

struct Plot {
  std::string name;    // file stem
  std::string data;    // <name>.dat
  std::string script;  // gnuplot commands after the terminal and output
};

Plot CurvePlot(const BenchReport& r, std::vector<std::string>* policies) {
  Plot p;
  p.name = "latency_vs_throughput";
  std::string data, plot;
  int index = 0;
  for (const PipelineBenchRow& row : r.curve) {
    if (policies->empty() || policies->back() != row.policy) {
      if (!policies->empty()) data += "\n\n";
      policies->push_back(row.policy);
      data += "# " + row.policy + ": throughput_per_s p50_ms p99_ms load\n";
    }
    data +=
        Format("%.3f %.3f %.3f", row.throughput_per_s, row.latency.median_ms, row.latency.p99_ms) +
        Format(" %.3f\n", row.load);
  }
  for (const std::string& policy : *policies) {
    plot += std::string(index == 0 ? "plot " : ", \\\n     ") + "'" + p.name + ".dat' index " +
            std::to_string(index) + " using 1:2 with linespoints lw 2 lc " +
            std::to_string(index + 1) + " pt 7 title '" + policy + " p50', '" + p.name +
            ".dat' index " + std::to_string(index) + " using 1:3 with linespoints lw 2 dt 2 lc " +
            std::to_string(index + 1) + " pt 5 title '" + policy + " p99'";
    ++index;
  }
  p.data = data;
  p.script =
      "set title 'Throughput vs latency (open loop, offered-load sweep)'\n"
      "set xlabel 'achieved throughput (images/s)'\nset ylabel 'latency (ms)'\n"
      "set logscale y\nset grid\nset key top left\n" +
      plot + "\n";
  return p;
}

Plot BatchPlot(const BenchReport& r) {
  Plot p;
  p.name = "batch_sizes";
  std::vector<std::string> precisions;
  for (const BatchRow& row : r.batches) {
    if (precisions.empty() || precisions.back() != row.precision) {
      if (!precisions.empty()) p.data += "\n\n";
      precisions.push_back(row.precision);
      p.data += "# " + row.precision + ": batch ms_per_image images_per_s\n";
    }
    p.data += Format("%.0f %.4f %.3f\n", row.batch, row.ms_per_image, row.images_per_s);
  }
  std::string plot;
  for (size_t i = 0; i < precisions.size(); ++i) {
    plot += std::string(i == 0 ? "plot " : ", ") + "'" + p.name + ".dat' index " +
            std::to_string(i) + " using 1:2 with linespoints lw 2 pt 7 title '" + precisions[i] +
            "'";
  }
  p.script = "set title 'Time per image vs batch size (" +
             std::to_string(r.batches.empty() ? 0 : r.batches[0].images) +
             " images per row)'\nset xlabel 'batch size'\nset ylabel 'ms per image'\n"
             "set logscale x 2\nset yrange [0:*]\nset grid\n" +
             plot + "\n";
  return p;
}

Plot StreamsPlot(const BenchReport& r) {
  Plot p;
  p.name = "streams";
  std::string plot;
  for (size_t i = 0; i < r.streams.size(); ++i) {
    if (i > 0) p.data += "\n\n";
    p.data += "# " + r.streams[i].policy + ": streams p99_ms in_time_fraction\n";
    for (const StreamPoint& s : r.streams[i].tried) {
      p.data += Format("%.0f %.3f %.4f\n", s.streams, s.latency.p99_ms,
                       s.frames > 0 ? static_cast<double>(s.in_time) / s.frames : 0);
    }
    plot += std::string(i == 0 ? "plot " : ", ") + "'" + p.name + ".dat' index " +
            std::to_string(i) + " using 1:2 with linespoints lw 2 pt 7 title '" +
            r.streams[i].policy + " p99'";
  }
  plot += ", 200 with lines lc rgb 'red' dt 3 title '200 ms deadline'";
  p.script =
      "set title '25 FPS camera streams (latest-only): frame latency p99'\n"
      "set xlabel 'concurrent streams'\nset ylabel 'p99 latency (ms)'\nset xtics 1\n"
      "set yrange [0:*]\nset grid\n" +
      plot + "\n";
  return p;
}

std::string Escape(std::string s) {
  for (char& c : s) {
    if (c == '|') c = '/';
  }
  return s;
}

}  // namespace

namespace {

// What this run measured for each guide claim id; `g` arrives "not measured".
void MeasureReducedPrecision(const BenchReport& r, GuideRow& g) {
  g.measured = "not measured (only fp32 ran)";
  double fp32 = 0;
  const SingleImageRow* best = nullptr;
  for (const SingleImageRow& s : r.single) {
    if (s.precision == "fp32")
      fp32 = s.latency.mean_ms;
    else if (best == nullptr || s.latency.mean_ms < best->latency.mean_ms)
      best = &s;
  }
  if (fp32 > 0 && best != nullptr && best->latency.mean_ms > 0) {
    g.measured = best->precision + Format(": %.1f → %.1f ms", fp32, best->latency.mean_ms);
    g.measured_ratio = fp32 / best->latency.mean_ms;
  }
}

void MeasureBatchPerImage(const BenchReport& r, GuideRow& g) {
  g.measured = "not measured (no batch 32 and batch 1 rows)";
  double one = 0, big = 0;
  int big_batch = 0;
  const std::string precision = r.batches.empty() ? "" : r.batches[0].precision;
  for (const BatchRow& b : r.batches) {
    if (b.precision != precision) continue;
    if (b.batch == 1) one = b.ms_per_image;
    if (b.batch > big_batch) big_batch = b.batch, big = b.ms_per_image;
  }
  if (one > 0 && big > 0 && big_batch > 1) {
    g.claim = "Batch " + std::to_string(big_batch) + " vs 1, time per image (" + precision + ")";
    g.measured = Format("%.2f → %.2f ms/image", one, big);
    g.measured_ratio = one / big;
  }
}

void MeasureThroughput(const BenchReport& r, GuideRow& g) {
  const PipelineBenchRow* naive = FindComparison(r, "naive", "closed");
  const PipelineBenchRow* cont = FindComparison(r, "continuous", "closed");
  if (naive && cont && naive->throughput_per_s > 0) {
    g.measured = Format("%.1f → %.1f images/s (closed loop, %.0f clients)",
                        naive->throughput_per_s, cont->throughput_per_s, naive->concurrency);
    g.measured_ratio = cont->throughput_per_s / naive->throughput_per_s;
  }
}

void MeasureUtilisation(const BenchReport& r, GuideRow& g) {
  const PipelineBenchRow* naive = FindComparison(r, "naive", "closed");
  const PipelineBenchRow* cont = FindComparison(r, "continuous", "closed");
  if (naive && cont && naive->busy_ratio > 0) {
    g.measured = Format("CPU engine busy %.0f%% → %.0f%% (closed loop)", naive->busy_ratio * 100,
                        cont->busy_ratio * 100);
    g.measured_ratio = cont->busy_ratio / naive->busy_ratio;
  }
}

void MeasurePeakMemory(const BenchReport& r, GuideRow& g) {
  const PipelineBenchRow* naive = FindComparison(r, "naive", "closed");
  const PipelineBenchRow* cont = FindComparison(r, "continuous", "closed");
  if (!naive || !cont) return;
  // The engine allocator's peak in use (weights + activations) is what a policy changes; the
  // process's RSS also holds the caching allocator's free blocks from earlier sections.
  if (naive->engine_peak_bytes > 0 && cont->engine_peak_bytes > 0) {
    g.measured = Format("engine peak memory in use %.0f → %.0f MiB (closed loop)",
                        MiB(naive->engine_peak_bytes), MiB(cont->engine_peak_bytes));
    g.measured_ratio = static_cast<double>(cont->engine_peak_bytes) / naive->engine_peak_bytes;
  } else if (naive->peak_rss_bytes > 0 && cont->peak_rss_bytes > 0) {
    g.measured = Format("process peak RSS %.0f → %.0f MiB (closed loop)",
                        MiB(naive->peak_rss_bytes), MiB(cont->peak_rss_bytes));
    g.measured_ratio = static_cast<double>(cont->peak_rss_bytes) / naive->peak_rss_bytes;
  }
}

void MeasureVideoStreams(const BenchReport& r, GuideRow& g) {
  const StreamSearch* naive = FindStreams(r, "naive");
  const StreamSearch* best = nullptr;
  for (const StreamSearch& s : r.streams) {
    if (s.policy != "naive" &&
        (best == nullptr || s.max_realtime_streams > best->max_realtime_streams)) {
      best = &s;
    }
  }
  if (!naive || !best) return;
  g.measured = Format("naive %.0f → ", naive->max_realtime_streams) + best->policy +
               Format(" %.0f streams", best->max_realtime_streams);
  g.measured_ratio =
      naive->max_realtime_streams > 0
          ? static_cast<double>(best->max_realtime_streams) / naive->max_realtime_streams
          : 0;
  if (naive->max_realtime_streams == 0) g.measured += " (ratio undefined: naive served 0)";
}

void MeasureLatencyStddev(const BenchReport& r, GuideRow& g) {
  const PipelineBenchRow* naive = FindComparison(r, "naive", "open");
  const PipelineBenchRow* cont = FindComparison(r, "continuous", "open");
  if (naive && cont && naive->latency.stddev_ms > 0) {
    g.measured = Format("%.1f → %.1f ms (open loop, %.1f requests/s offered to both)",
                        naive->latency.stddev_ms, cont->latency.stddev_ms, naive->offered_per_s);
    g.measured_ratio = cont->latency.stddev_ms / naive->latency.stddev_ms;
  }
}

}  // namespace

std::vector<GuideRow> CompareWithGuide(const BenchReport& r,
                                       const std::vector<GuideClaim>& claims) {
  using Measure = void (*)(const BenchReport&, GuideRow&);
  static const std::map<std::string, Measure> kMeasures = {
      {"reduced_precision", MeasureReducedPrecision}, {"batch_per_image", MeasureBatchPerImage},
      {"throughput", MeasureThroughput},              {"utilisation", MeasureUtilisation},
      {"peak_memory", MeasurePeakMemory},             {"video_streams", MeasureVideoStreams},
      {"latency_stddev", MeasureLatencyStddev}};
  std::vector<GuideRow> rows;
  for (const GuideClaim& c : claims) {
    GuideRow g{c.claim, c.guide, c.ratio, "not measured", 0};
    // LoadGuideClaims accepts only the ids measured here.
    if (auto m = kMeasures.find(c.id); m != kMeasures.end()) m->second(r, g);
    rows.push_back(g);
  }
  return rows;
}

void WriteBenchReportPlots(const std::string& dir, const std::string& gnuplot,
                           BenchReport* report) {
  report->plots_generated = false;
  report->plot_files.clear();
  const std::string exe = FindExecutable(gnuplot);
  std::vector<std::string> policies;
  std::vector<Plot> plots = {BatchPlot(*report), CurvePlot(*report, &policies),
                             StreamsPlot(*report)};
  for (const Plot& p : plots) {
    std::ofstream(fs::path(dir) / (p.name + ".dat")) << p.data;
  }
  if (exe.empty()) {
    report->plots_note = "gnuplot not found (" + gnuplot +
                         "): plots skipped; their data is in batch_sizes.dat, "
                         "latency_vs_throughput.dat and streams.dat";
    return;
  }
  std::string error;
  for (const Plot& p : plots) {
    bool ok = false;
    for (const char* png : {"pngcairo size 960,600", "png size 960,600"}) {
      const std::string script = p.name + ".gp";
      std::ofstream(fs::path(dir) / script)
          << "set terminal " << png << "\nset output '" << p.name << ".png'\n"
          << p.script << "set terminal svg size 960,600 dynamic\nset output '" << p.name
          << ".svg'\nreplot\nunset output\n";
      if (RunGnuplot(exe, dir, script, &error)) {
        ok = true;
        break;
      }
    }
    if (!ok) {
      report->plots_note = "gnuplot (" + exe + ") failed on " + p.name + ".gp: " + error;
      return;
    }
    report->plot_files.push_back(p.name + ".png");
    report->plot_files.push_back(p.name + ".svg");
  }
  report->plots_generated = true;
  report->plots_note = "plotted with " + exe;
}

std::string BenchReportMarkdown(const BenchReport& r) {
  std::string md;
  char line[1024];
  md += "# mogserve benchmark report\n\n";
  md += "- Date: " + r.date + "\n- Command: `" + r.command + "`\n- Engine: " + r.engine +
        (r.simulated ? " — **simulated engine, not a model**" : "") + "\n- Pictures: " + r.images +
        "\n- Mode: " + (r.quick ? "quick (fewer runs, shorter points)" : "full") + "\n\n";

  md += "## 1. Single-image latency per precision\n\n";
  md +=
      "One photo end to end through the engine (letterboxed canvas, Forward, Postprocess), "
      "after warm-up.\n\n";
  md +=
      "| precision | runs | mean ms | median ms | min ms | max ms | stddev ms | speed-up vs fp32 "
      "|\n|---|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const SingleImageRow& s : r.single) {
    std::snprintf(line, sizeof(line), "| %s | %d | %.2f | %.2f | %.2f | %.2f | %.2f | %s |\n",
                  s.precision.c_str(), s.latency.count, s.latency.mean_ms, s.latency.median_ms,
                  s.latency.min_ms, s.latency.max_ms, s.latency.stddev_ms,
                  s.speedup_vs_fp32 > 0 ? Format("%.2fx", s.speedup_vs_fp32).c_str() : "-");
    md += line;
  }

  md += "\n## 2. Batch size per precision\n\n";
  md +=
      "| precision | batch | images | total ms | ms/image | images/s | speed-up vs batch 1 | "
      "peak engine memory MiB |\n|---|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const BatchRow& b : r.batches) {
    std::snprintf(line, sizeof(line), "| %s | %d | %d | %.1f | %.3f | %.1f | %s | %.1f |\n",
                  b.precision.c_str(), b.batch, b.images, b.total_ms, b.ms_per_image,
                  b.images_per_s,
                  b.speedup_vs_batch1 > 0 ? Format("%.2fx", b.speedup_vs_batch1).c_str() : "-",
                  MiB(b.peak_memory_bytes));
    md += line;
  }
  md += "\n![ms per image vs batch size](batch_sizes.png)\n";

  std::snprintf(line, sizeof(line),
                "\nSections 3-5 run the pipeline in-process on the %s engine. The engine alone "
                "(the warm-up): **%.1f images/s** at batch %d, %.1f images/s at batch 1. The "
                "pipeline (section 3's closed loops, pre- and post-processing included): "
                "**%.1f images/s** at best, %.1f with the naive policy; the open loops below "
                "are fractions of these. Settings: %s.\n",
                r.load_precision.c_str(), r.capacity_per_s, r.capacity_batch,
                r.naive_capacity_per_s, r.pipeline_capacity_per_s, r.naive_pipeline_per_s,
                r.load_settings.c_str());
  md += line;

  md += "\n## 3. Traditional (naive) vs optimised (continuous batching + pipeline)\n\n";
  std::snprintf(line, sizeof(line),
                "Same offered load for both: a closed loop of clients, and an open loop of the "
                "same Poisson arrivals at %.1f requests/s (a fraction of what naive sustains in "
                "the closed loop). Engine peak = "
                "the most memory the engine's allocator had in use during the point (weights + "
                "activations); peak RSS is the whole process, including the caching allocator's "
                "free blocks kept from earlier sections, so only the engine peak compares "
                "policies.\n\n",
                r.comparison_offered_per_s);
  md += line;
  md +=
      "| policy | loop | clients / offered/s | window s | images | images/s | mean ms | p50 ms "
      "| p95 ms | p99 ms | stddev ms | engine busy | engine peak MiB | peak RSS MiB | rejected "
      "|\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const PipelineBenchRow& row : r.comparison) {
    std::snprintf(
        line, sizeof(line),
        "| %s | %s | %s | %.2f | %lld | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.0f%% | %.1f "
        "| %.1f | %lld |\n",
        row.policy.c_str(), row.mode.c_str(),
        row.mode == "closed" ? std::to_string(row.concurrency).c_str()
                             : Format("%.1f", row.offered_per_s).c_str(),
        row.window_s, static_cast<long long>(row.done), row.throughput_per_s, row.latency.mean_ms,
        row.latency.median_ms, row.latency.p95_ms, row.latency.p99_ms, row.latency.stddev_ms,
        row.busy_ratio * 100, MiB(row.engine_peak_bytes), MiB(row.peak_rss_bytes),
        static_cast<long long>(row.rejected));
    md += line;
  }

  md += "\n## 4. Throughput vs latency per policy\n\n";
  md +=
      "| policy | load | offered/s | images | images/s | p50 ms | p95 ms | p99 ms | mean batch | "
      "engine busy | rejected |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const PipelineBenchRow& row : r.curve) {
    std::snprintf(
        line, sizeof(line),
        "| %s | %.2f | %.1f | %lld | %.1f | %.1f | %.1f | %.1f | %.2f | %.0f%% | %lld |\n",
        row.policy.c_str(), row.load, row.offered_per_s, static_cast<long long>(row.done),
        row.throughput_per_s, row.latency.median_ms, row.latency.p95_ms, row.latency.p99_ms,
        row.mean_batch_size, row.busy_ratio * 100, static_cast<long long>(row.rejected));
    md += line;
  }
  md += "\n![throughput vs latency](latency_vs_throughput.png)\n";

  md += "\n## 5. Simulated 25 FPS camera streams\n\n";
  md +=
      "Each stream submits a frame every 40 ms (frames cycle through the pictures), "
      "latest-only, stream priority. A stream is served in real time when >= 95% of its "
      "frames are answered within 200 ms and every other frame was superseded (none late, "
      "rejected or failed). Stream counts are tried from 1 up until one misses.\n\n";
  md += "| policy | most streams in real time |\n|---|---:|\n";
  for (const StreamSearch& s : r.streams) {
    md += "| " + s.policy + " | " + std::to_string(s.max_realtime_streams) + " |\n";
  }
  md +=
      "\n| policy | streams | frames | answered | within 200 ms | late | superseded | rejected "
      "| failed | p50 ms | p99 ms | streams in real time |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const StreamSearch& s : r.streams) {
    for (const StreamPoint& p : s.tried) {
      std::snprintf(line, sizeof(line),
                    "| %s | %d | %lld | %lld | %lld | %lld | %lld | %lld | %lld | %.1f | %.1f | "
                    "%d |\n",
                    s.policy.c_str(), p.streams, static_cast<long long>(p.frames),
                    static_cast<long long>(p.answered), static_cast<long long>(p.in_time),
                    static_cast<long long>(p.late), static_cast<long long>(p.superseded),
                    static_cast<long long>(p.rejected), static_cast<long long>(p.failed),
                    p.latency.median_ms, p.latency.p99_ms, p.realtime_streams);
      md += line;
    }
  }
  md += "\n![camera streams](streams.png)\n";

  md += "\n## 6. Machine\n\n";
  std::snprintf(line, sizeof(line), "- CPU: %s, %d cores\n- Memory: %.1f GiB\n",
                r.machine.cpu.c_str(), r.machine.cores, r.machine.memory_bytes / 1073741824.0);
  md += line;
  md += "- GPU: " + r.machine.gpu + "\n- Libraries: " + r.machine.torch_version +
        "\n- Compiler: " + r.machine.compiler + "\n- Plots: " + r.plots_note + "\n- Command: `" +
        r.command + "`\n";

  md += "\n## Original deployment guide (GPU) vs measured here\n\n";
  md +=
      "The guide's numbers are for MogFace on a GPU; ours are from **this machine** (above), "
      "a different machine and possibly a different model, so compare the ratios, not the "
      "absolute values.\n\n";
  md +=
      "| claim | guide (GPU) | guide ratio | measured here | measured ratio |\n"
      "|---|---|---:|---|---:|\n";
  for (const GuideRow& g : r.guide) {
    md += "| " + Escape(g.claim) + " | " + Escape(g.guide) + " | " +
          Format("%.2fx", g.guide_ratio) + " | " + Escape(g.measured) + " | " +
          (g.measured_ratio > 0 ? Format("%.2fx", g.measured_ratio) : std::string("-")) + " |\n";
  }
  md +=
      "\nRatios are new / old (speed-ups: old time / new time; memory and standard deviation: "
      "new / old, lower is better).\n";

  md += "\n## Plots\n\n";
  if (r.plots_generated) {
    for (const std::string& f : r.plot_files) md += "- [" + f + "](" + f + ")\n";
  } else {
    md += "Plots skipped: " + r.plots_note + "\n";
  }
  return md;
}

std::string BenchReportJson(const BenchReport& r) {
  using nlohmann::json;
  const auto latency = [](const LatencyStats& l) {
    return json{{"count", l.count},   {"mean_ms", l.mean_ms}, {"median_ms", l.median_ms},
                {"min_ms", l.min_ms}, {"max_ms", l.max_ms},   {"stddev_ms", l.stddev_ms},
                {"p90_ms", l.p90_ms}, {"p95_ms", l.p95_ms},   {"p99_ms", l.p99_ms}};
  };
  const auto load_row = [&latency](const PipelineBenchRow& row) {
    return json{{"policy", row.policy},
                {"mode", row.mode},
                {"concurrency", row.concurrency},
                {"load", row.load},
                {"offered_per_s", row.offered_per_s},
                {"window_s", row.window_s},
                {"done", row.done},
                {"rejected", row.rejected},
                {"throughput_per_s", row.throughput_per_s},
                {"latency", latency(row.latency)},
                {"mean_batch_size", row.mean_batch_size},
                {"busy_ratio", row.busy_ratio},
                {"engine_peak_bytes", row.engine_peak_bytes},
                {"peak_rss_bytes", row.peak_rss_bytes}};
  };
  json j;
  j["date"] = r.date;
  j["command"] = r.command;
  j["engine"] = r.engine;
  j["simulated"] = r.simulated;
  j["quick"] = r.quick;
  j["canvas_side"] = r.canvas_side;
  j["images"] = r.images;
  j["photos"] = r.photos;
  json single = json::array();
  for (const SingleImageRow& s : r.single) {
    single.push_back({{"precision", s.precision},
                      {"latency", latency(s.latency)},
                      {"speedup_vs_fp32", s.speedup_vs_fp32}});
  }
  j["single_image"] = single;
  json batches = json::array();
  for (const BatchRow& b : r.batches) {
    batches.push_back({{"precision", b.precision},
                       {"batch", b.batch},
                       {"images", b.images},
                       {"total_ms", b.total_ms},
                       {"ms_per_image", b.ms_per_image},
                       {"images_per_s", b.images_per_s},
                       {"speedup_vs_batch1", b.speedup_vs_batch1},
                       {"peak_memory_bytes", b.peak_memory_bytes}});
  }
  j["batch_sizes"] = batches;
  j["load"] = {{"precision", r.load_precision},
               {"capacity_per_s", r.capacity_per_s},
               {"capacity_batch", r.capacity_batch},
               {"naive_capacity_per_s", r.naive_capacity_per_s},
               {"pipeline_capacity_per_s", r.pipeline_capacity_per_s},
               {"naive_pipeline_per_s", r.naive_pipeline_per_s},
               {"knee_batch", r.knee_batch},
               {"settings", r.load_settings}};
  json comparison = json::array();
  for (const PipelineBenchRow& row : r.comparison) comparison.push_back(load_row(row));
  j["traditional_vs_optimised"] = {{"offered_per_s", r.comparison_offered_per_s},
                                   {"rows", comparison}};
  json curve = json::array();
  for (const PipelineBenchRow& row : r.curve) curve.push_back(load_row(row));
  j["throughput_vs_latency"] = curve;
  json streams = json::array();
  for (const StreamSearch& s : r.streams) {
    json tried = json::array();
    for (const StreamPoint& p : s.tried) {
      tried.push_back({{"streams", p.streams},
                       {"seconds", p.seconds},
                       {"frames", p.frames},
                       {"answered", p.answered},
                       {"in_time", p.in_time},
                       {"late", p.late},
                       {"superseded", p.superseded},
                       {"rejected", p.rejected},
                       {"failed", p.failed},
                       {"latency", latency(p.latency)},
                       {"realtime_streams", p.realtime_streams},
                       {"all_realtime", p.all_realtime}});
    }
    streams.push_back(
        {{"policy", s.policy}, {"max_realtime_streams", s.max_realtime_streams}, {"tried", tried}});
  }
  j["streams"] = {
      {"fps", 25}, {"deadline_ms", 200}, {"required_in_time", 0.95}, {"policies", streams}};
  j["machine"] = {{"cpu", r.machine.cpu},
                  {"cores", r.machine.cores},
                  {"memory_bytes", r.machine.memory_bytes},
                  {"gpu", r.machine.gpu},
                  {"torch", r.machine.torch_version},
                  {"compiler", r.machine.compiler},
                  {"command", r.command}};
  json guide = json::array();
  for (const GuideRow& g : r.guide) {
    guide.push_back({{"claim", g.claim},
                     {"guide", g.guide},
                     {"guide_ratio", g.guide_ratio},
                     {"measured", g.measured},
                     {"measured_ratio", g.measured_ratio}});
  }
  j["guide_comparison"] = guide;
  j["plots"] = {{"generated", r.plots_generated}, {"note", r.plots_note}, {"files", r.plot_files}};
  return j.dump(2) + "\n";
}

}  // namespace mogserve::bench
