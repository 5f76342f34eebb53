#include "eval/pr_curve_report.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include "common/subprocess.h"

namespace mogserve::eval {
namespace {

namespace fs = std::filesystem;

Status WriteText(const fs::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f.write(text.data(), static_cast<std::streamsize>(text.size()));
  f.close();
  if (!f) return Internal("cannot write " + path.string());
  return Status::Ok();
}

std::string GnuplotEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

// Draws the three curves into pr_curves.svg and pr_curves.png (pngcairo when gnuplot has it,
// else the libgd png terminal). Paths are relative: gnuplot runs in the report folder.
std::string GnuplotScript(const WiderEvalResult& result, const std::string& label) {
  std::string plot = "plot";
  for (int s = 0; s < kWiderSubsets; ++s) {
    const WiderSubsetResult& r = result.subsets[s];
    char title[160];
    std::snprintf(title, sizeof(title), "%s %s (AP %.4f)", GnuplotEscape(label).c_str(),
                  WiderSubsetName(r.subset), r.ap);
    plot += std::string(s > 0 ? ", \\\n    " : " ") + "'pr_curve_" + WiderSubsetName(r.subset) +
            ".csv' using 3:2 with lines linewidth 2 title \"" + title + "\"";
  }
  return "# PR curves of a WIDER FACE evaluation (mogserve eval widerface).\n"
         "set datafile separator ','\n"
         "set key autotitle columnhead\n"
         "set xrange [0:1]\nset yrange [0:1]\n"
         "set xlabel 'Recall'\nset ylabel 'Precision'\nset grid\n"
         "set key left bottom\n"
         "set title 'WIDER FACE val'\n"
         "set terminal svg size 800,600 dynamic\nset output 'pr_curves.svg'\n" +
         plot + "\n" +
         "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
         "  set terminal pngcairo size 800,600\n} else {\n  set terminal png size 800,600\n}\n"
         "set output 'pr_curves.png'\nreplot\nset output\n";
}

}  // namespace

std::string FormatApTable(const WiderEvalResult& result, const std::string& label) {
  std::string out = "WIDER FACE val, " + label + "\n";
  char line[200];
  std::snprintf(line, sizeof(line), "%-8s %8s %8s %12s %10s\n", "subset", "AP", "faces", "recall@0",
                "prec@0");
  out += line;
  for (const WiderSubsetResult& r : result.subsets) {
    std::snprintf(line, sizeof(line), "%-8s %8.4f %8lld %12.4f %10.4f\n", WiderSubsetName(r.subset),
                  r.ap, static_cast<long long>(r.faces), r.recall.empty() ? 0.0 : r.recall.back(),
                  r.precision.empty() ? 0.0 : r.precision.back());
    out += line;
  }
  return out;
}

std::string PrCurveCsv(const WiderSubsetResult& subset) {
  std::string csv = "threshold,precision,recall,true_positives,proposals\n";
  char line[160];
  for (size_t t = 0; t < subset.thresholds.size(); ++t) {
    std::snprintf(line, sizeof(line), "%.3f,%.6f,%.6f,%lld,%lld\n", subset.thresholds[t],
                  subset.precision[t], subset.recall[t],
                  static_cast<long long>(subset.true_positives[t]),
                  static_cast<long long>(subset.proposals[t]));
    csv += line;
  }
  return csv;
}

StatusOr<PrCurveFiles> WritePrCurves(const std::string& dir, const WiderEvalResult& result,
                                     const std::string& label) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!fs::is_directory(dir, ec)) return Internal("cannot create the folder " + dir);
  PrCurveFiles files;
  for (const WiderSubsetResult& r : result.subsets) {
    const fs::path csv =
        fs::path(dir) / (std::string("pr_curve_") + WiderSubsetName(r.subset) + ".csv");
    MOGSERVE_RETURN_IF_ERROR(WriteText(csv, PrCurveCsv(r)));
    files.written.push_back(csv.string());
  }
  const fs::path script = fs::path(dir) / "pr_curves.gp";
  MOGSERVE_RETURN_IF_ERROR(WriteText(script, GnuplotScript(result, label)));
  files.written.push_back(script.string());

  // gnuplot runs in the report folder (the script's paths are relative), its output discarded.
  SubprocessOptions options;
  options.cwd = fs::absolute(dir, ec).string();
  options.out = Redirect::Null();
  options.err = Redirect::Null();
  Subprocess gnuplot;
  const Status started = gnuplot.Start({"gnuplot", "pr_curves.gp"}, options);
  if (started.code() == StatusCode::kNotFound) {
    files.plot_note =
        "gnuplot not found in PATH (scripts/setup.sh installs gnuplot-nox); run "
        "`gnuplot pr_curves.gp` in " +
        dir + " to draw the plot";
    return files;
  }
  const ExitStatus ended = started.ok() ? gnuplot.Wait() : ExitStatus{};
  for (const char* plot : {"pr_curves.svg", "pr_curves.png"}) {
    const fs::path p = fs::path(dir) / plot;
    if (fs::exists(p, ec)) files.written.push_back(p.string());
  }
  if (!started.ok()) {
    files.plot_note = "gnuplot did not start (" + started.message() + ") on " + script.string();
  } else if (!ended.ok()) {
    files.plot_note = "gnuplot failed (" + ended.Describe() + ") on " + script.string();
  }
  return files;
}

}  // namespace mogserve::eval
