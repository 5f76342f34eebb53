// Reports of a WIDER FACE evaluation: the AP table, the PR curves as CSV, and a plot of them
// drawn by gnuplot when it is installed (scripts/setup.sh installs gnuplot-nox).
#pragma once

#include <string>
#include <vector>

#include "eval/wider_evaluator.h"
#include "mogserve/status.h"

namespace mogserve::eval {

// The table printed after an evaluation:
//   subset   AP      faces   ...
std::string FormatApTable(const WiderEvalResult& result, const std::string& label);

// One subset's curve as CSV: threshold,precision,recall,true_positives,proposals (one row per
// threshold, 0.999 down to 0).
std::string PrCurveCsv(const WiderSubsetResult& subset);

struct PrCurveFiles {
  std::vector<std::string> written;  // every file written, plots included
  std::string plot_note;  // why no plot was drawn ("gnuplot not found in PATH", ...), or ""
};

// Writes dir/pr_curve_{easy,medium,hard}.csv and dir/pr_curves.gp (a gnuplot script), then runs
// gnuplot on the script when it is in PATH, which draws dir/pr_curves.png and dir/pr_curves.svg
// (recall on x, precision on y, AP in the legend). Fails only when the CSV or the script cannot
// be written; a missing or failing gnuplot is reported in plot_note.
StatusOr<PrCurveFiles> WritePrCurves(const std::string& dir, const WiderEvalResult& result,
                                     const std::string& label);

}  // namespace mogserve::eval
