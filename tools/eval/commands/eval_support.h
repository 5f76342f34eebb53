// Pieces `mogserve eval widerface` and `mogserve eval compare` share: the detection flags, model
// loading and one pass over a list of images. Internal to src/cli/.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "eval/wider_predictions.h"
#include "pipeline/offline_detector.h"

namespace mogserve::cli::eval_cli {

// Flags both subcommands share: how detection runs.
struct RunFlags {
  int batch_size = 8;
  int decode_threads = 0;
  bool quiet = false;
  DetectorOptions options;  // the model and input groups of the option table, and max_pixels
};

// --batch-size, --decode-threads, --max-pixels, -q, the model and the input flags.
void AddRunFlags(CLI::App& app, RunFlags& flags);

// How the model's (x1, y1, x2, y2) are meant, for the WIDER width.
eval::BoxCorners CornersOf(const engine::EngineInfo& info);

// A loaded engine plus the options derived from it and the flags.
struct LoadedModel {
  std::unique_ptr<engine::Engine> engine;
  pipeline::OfflineOptions options;
};
// Loads the model; on failure prints the error and sets `exit_code`.
std::optional<LoadedModel> LoadModel(const RunFlags& flags, int& exit_code);

// Runs `sources` through the offline pipeline (or, with `tta` "paper", "hard" or "flip", the TTA
// plan one image at a time) with a progress bar on stderr; `on_result` sees every result in
// input order. Returns the seconds taken.
double RunSources(LoadedModel& model, std::vector<pipeline::ImageSource> sources,
                  const std::string& tta, int tta_max_side, bool quiet,
                  const std::function<void(const pipeline::SourceResult&)>& on_result);

// The end of an eval run: `report` (indented) written to `json_path` when one was given, all or
// nothing; the exit code: kExitFatal when it cannot be written (after printing why), else
// kExitSomeFailed when `failed` images failed, else kExitOk.
int FinishEvalRun(const std::string& json_path, const nlohmann::json& report, int64_t failed);

// Adds `compare` to the `eval` command; the runner runs it.
CommandRunner RegisterCompare(CLI::App& eval);

}  // namespace mogserve::cli::eval_cli
