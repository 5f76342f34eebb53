// bench_report.h: the guide comparison, the plots, report.md and report.json.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "bench/bench_report.h"
#include "common/subprocess.h"

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

// Runs gnuplot on `script` in `dir` (the script names its outputs relative to it); false with
// the first 300 bytes of what it printed (or how it ended) in *error.
bool RunGnuplot(const std::string& gnuplot, const std::string& dir, const std::string& script,
                std::string* error) {
  SubprocessOptions options;
  options.cwd = dir;
  options.out = Redirect::Pipe();
  options.err = Redirect::ToStdout();
  auto run = RunSubprocess({gnuplot, script}, options, std::chrono::minutes(2));
  if (!run.ok()) {
    *error = run.status().message();
    return false;
  }
  if (run->status.ok()) return true;
  *error = run->out.empty() ? run->status.Describe() : run->out.substr(0, 300);
  return false;
}

struct Plot {
  std::string name;    // file stem
  std::string data;    // <name>.dat
  std::string script;  // gnuplot commands after the terminal and output
};

// Opens the data block of `key` (blocks are separated by two blank lines, gnuplot's `index`)
// when the rows move on to a new one.
void NextBlock(const std::string& key, const char* columns, std::vector<std::string>* blocks,
               std::string* data) {
  if (!blocks->empty() && blocks->back() == key) return;
  if (!blocks->empty()) *data += "\n\n";
  blocks->push_back(key);
  *data += "# " + key + ": " + columns + "\n";
}

Plot CurvePlot(const BenchReport& r, std::vector<std::string>* policies) {
  Plot p;
  p.name = "latency_vs_throughput";
  std::string data, plot;
  int index = 0;
  for (const PipelineBenchRow& row : r.curve) {
    NextBlock(row.policy, "throughput_per_s p50_ms p99_ms load", policies, &data);
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

// gnuplot's plot command for one line per data block of `name`.dat (column 2 over column 1).
std::string LinesPlot(const std::string& name, const std::vector<std::string>& titles) {
  std::string plot;
  for (size_t i = 0; i < titles.size(); ++i) {
    plot += std::string(i == 0 ? "plot " : ", ") + "'" + name + ".dat' index " +
            std::to_string(i) + " using 1:2 with linespoints lw 2 pt 7 title '" + titles[i] + "'";
  }
  return plot;
}

Plot BatchPlot(const BenchReport& r) {
  Plot p;
  p.name = "batch_sizes";
  std::vector<std::string> precisions;
  for (const BatchRow& row : r.batches) {
    NextBlock(row.precision, "batch ms_per_image images_per_s", &precisions, &p.data);
    p.data += Format("%.0f %.4f %.3f\n", row.batch, row.ms_per_image, row.images_per_s);
  }
  const std::string plot = LinesPlot(p.name, precisions);
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
  std::vector<std::string> titles;
  for (size_t i = 0; i < r.streams.size(); ++i) {
    if (i > 0) p.data += "\n\n";
    p.data += "# " + r.streams[i].policy + ": streams p99_ms in_time_fraction\n";
    for (const StreamPoint& s : r.streams[i].tried) {
      p.data += Format("%.0f %.3f %.4f\n", s.streams, s.latency.p99_ms,
                       s.frames > 0 ? static_cast<double>(s.in_time) / s.frames : 0);
    }
    titles.push_back(r.streams[i].policy + " p99");
  }
  const std::string plot = LinesPlot(p.name, titles) +
                           ", 200 with lines lc rgb 'red' dt 3 title '200 ms deadline'";
  p.script =
      "set title '25 FPS camera streams (latest-only): frame latency p99'\n"
      "set xlabel 'concurrent streams'\nset ylabel 'p99 latency (ms)'\nset xtics 1\n"
      "set yrange [0:*]\nset grid\n" +
      plot + "\n";
  return p;
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
    g.measured = Format("%.1f → %.1f images/s (closed loop, %.0f clients)", naive->throughput_per_s,
                        cont->throughput_per_s, naive->concurrency);
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
      {"reduced_precision", MeasureReducedPrecision},
      {"batch_per_image", MeasureBatchPerImage},
      {"throughput", MeasureThroughput},
      {"utilisation", MeasureUtilisation},
      {"peak_memory", MeasurePeakMemory},
      {"video_streams", MeasureVideoStreams},
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

}  // namespace mogserve::bench
