// `mogserve eval widerface` (the official WIDER FACE protocol, tools/eval/), the `eval` command's
// registration, and the pieces both eval subcommands share (eval_support.h). `eval compare` is
// in eval_compare_command.cpp.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/commands.h"
#include "eval/commands/eval_support.h"
#include "common/file_util.h"
#include "cli/progress_bar.h"
#include "common/clock.h"
#include "eval/pr_curve_report.h"
#include "eval/wider_evaluator.h"
#include "eval/wider_predictions.h"
#include "pipeline/offline_detector.h"
#include "pipeline/tta.h"

namespace mogserve::cli {
namespace eval_cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

}  // namespace

void AddRunFlags(CLI::App& app, RunFlags& flags) {
  app.add_option("--batch-size", flags.batch_size, "Images per forward pass")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--decode-threads", flags.decode_threads,
                 "Threads decoding images ahead of the engine (0 = half the cores, at least 1)")
      ->check(CLI::Range(0, 256))
      ->capture_default_str();
  AddOptionFlag(app, flags.options, "--max-pixels");
  app.add_flag("-q,--quiet", flags.quiet, "No progress bar and no summary on stderr");
  AddOptionFlags(app, flags.options, {opt::Group::kModel, opt::Group::kInput});
}

// The model's box corners (ModelSpec::inclusive_corners): MogFace's are inclusive (x2 = the last
// pixel, as it was trained and as its WIDER writer assumes: w = x2 - x1 + 1); the SSD's are
// continuous edges (w = x2 - x1).
eval::BoxCorners CornersOf(const engine::EngineInfo& info) {
  return info.spec->inclusive_corners ? eval::BoxCorners::kInclusive : eval::BoxCorners::kEdges;
}

// Loads the model; on failure prints the error and returns the exit code in `exit_code`.
std::optional<LoadedModel> LoadModel(const RunFlags& flags, int& exit_code) {
  auto setup = ToEngineSetup(flags.options);
  if (!setup.ok()) {
    std::cerr << "error: " << setup.status().message() << "\n";
    exit_code = kExitUsage;
    return std::nullopt;
  }
  auto engine = api::LoadEngine(setup->model, setup->engine);
  if (!engine.ok()) {
    std::cerr << "error: cannot start the engine: " << engine.status().ToString() << "\n";
    exit_code = engine.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFatal;
    return std::nullopt;
  }
  auto buckets = ToShapeBuckets(flags.options, (*engine)->info());
  if (!buckets.ok()) {
    std::cerr << "error: " << buckets.status().message() << "\n";
    exit_code = kExitUsage;
    return std::nullopt;
  }
  LoadedModel m;
  m.options.batch_size = flags.batch_size;
  m.options.decode_threads = flags.decode_threads;
  m.options.buckets = *buckets;
  m.options.detect =
      opt::ApplyDetectOverrides(flags.options, (*engine)->model()->default_detect_options());
  m.options.decode.max_pixels = flags.options.max_pixels;
  m.engine = std::move(*engine);
  return m;
}

// Runs `sources` through the offline pipeline (or TTA, one at a time) with a progress bar.
// Returns the seconds taken.
double RunSources(LoadedModel& model, std::vector<pipeline::ImageSource> sources,
                  const std::string& tta, int tta_max_side, bool quiet,
                  const std::function<void(const pipeline::SourceResult&)>& on_result) {
  const bool tty = isatty(STDERR_FILENO) && !quiet;
  ProgressBar bar(static_cast<int64_t>(sources.size()), "img", tty);
  int64_t done = 0, faces = 0, failed = 0;
  auto extra = [&] {
    return "faces " + std::to_string(faces) + "  failed " + std::to_string(failed);
  };
  auto handle = [&](const pipeline::SourceResult& r) {
    ++done;
    if (r.status.ok()) {
      faces += static_cast<int64_t>(r.result.faces.size());
    } else {
      ++failed;
      if (tty) std::cerr << "\r\033[K";
      std::cerr << "error: " << r.id << ": " << r.status.message() << "\n";
    }
    on_result(r);
    bar.Update(done, extra());
  };
  const auto start = SteadyClock::now();
  if (tta.empty()) {
    pipeline::OfflineDetector detector(*model.engine, model.options);
    detector.Run(std::move(sources), handle);
  } else {
    pipeline::TtaOptions o = pipeline::TtaOptions::Named(tta);
    o.max_side_px = tta_max_side;
    o.max_faces = model.options.detect.max_faces;
    o.min_face_size = model.options.detect.min_face_size;
    for (const pipeline::ImageSource& s : sources) {
      handle(pipeline::DetectSourceWithTta(*model.engine, *model.engine->model(), s,
                                           model.options.decode, o,
                                           model.options.detect.score_threshold));
    }
  }
  bar.Finish(extra());
  return MillisecondsSince(start) / 1000.0;
}

int FinishEvalRun(const std::string& json_path, const json& report, int64_t failed) {
  if (!json_path.empty()) {
    if (const Status s = WriteTextFile(json_path, report.dump(2) + "\n"); !s.ok()) {
      std::cerr << "error: --json: " << s.message() << "\n";
      return kExitFatal;
    }
  }
  return failed > 0 ? kExitSomeFailed : kExitOk;
}

}  // namespace eval_cli

namespace {

namespace fs = std::filesystem;
using eval_cli::AddRunFlags;
using eval_cli::CornersOf;
using eval_cli::LoadedModel;
using eval_cli::LoadModel;
using eval_cli::RunFlags;
using eval_cli::RunSources;
using eval_cli::FinishEvalRun;
using nlohmann::json;

struct WiderFlags {
  std::string gt_dir;
  std::string images_dir;
  std::string predictions_dir;  // evaluate these instead of running a model
  std::string predictions_out;  // default: <out>/predictions
  std::string out_dir = "widerface_eval";
  std::string label;
  std::string json_path;
  std::string tta;
  int tta_max_side = 0;
  RunFlags run;
};

// ---------------------------------------------------------------- eval widerface

// The thresholds of the MogFace paper's WIDER test (shared/specs/widerface_eval.md, "Reference
// test-time settings"): score >= 0.01 so the PR curve reaches low precision, top 5000 before NMS,
// NMS 0.3, at most 750 faces. The SSD keeps its own NMS (0.5) with the same floor and cap.
DetectOptions WiderDetectDefaults(const engine::Engine& engine) {
  DetectOptions d = engine.model()->default_detect_options();
  d.score_threshold = 0.01f;
  d.max_faces = 750;
  const model::ModelSpec& spec = *engine.info().spec;
  if (spec.wider_nms_iou > 0) d.nms_iou = spec.wider_nms_iou;
  if (spec.wider_top_k > 0) d.top_k = spec.wider_top_k;
  return d;
}

// Detects every val image into prediction files under `dir`. Returns the failed count, or -1
// when the model could not be loaded (exit_code set).
int64_t PredictWider(const WiderFlags& flags, const eval::WiderGroundTruth& gt,
                     const std::string& dir, std::string& label, json& report, int& exit_code) {
  // Load once with the model defaults, then apply the WIDER defaults under the user's flags.
  std::optional<LoadedModel> model = LoadModel(flags.run, exit_code);
  if (!model) return -1;
  const DetectOptions defaults = WiderDetectDefaults(*model->engine);
  model->options.detect = opt::ApplyDetectOverrides(flags.run.options, defaults);
  if (!flags.tta.empty() && model->engine->info().fixed_side > 0) {
    std::cerr << "error: --tta needs --model mogface (the SSD takes one fixed input size)\n";
    exit_code = kExitUsage;
    return -1;
  }
  const engine::EngineInfo& info = model->engine->info();
  if (label.empty()) {
    label = info.model + (info.variant.empty() ? "" : " " + info.variant) + " " + info.precision +
            (flags.tta.empty() ? "" : " tta-" + flags.tta);
  }
  const eval::BoxCorners corners = CornersOf(info);
  std::vector<pipeline::ImageSource> sources;
  std::vector<std::pair<size_t, size_t>> where;  // (event, image) of each source
  for (size_t e = 0; e < gt.events.size(); ++e) {
    for (size_t i = 0; i < gt.events[e].images.size(); ++i) {
      const std::string relative = gt.events[e].name + "/" + gt.events[e].images[i].name;
      sources.push_back(
          {relative, (fs::path(flags.images_dir) / (relative + ".jpg")).string(), {}});
      where.emplace_back(e, i);
    }
  }
  if (!flags.run.quiet) {
    std::cerr << "eval widerface: " << info.Describe() << ", " << model->options.buckets.Describe()
              << ", score > " << model->options.detect.score_threshold << ", NMS "
              << model->options.detect.nms_iou << ", " << sources.size() << " images\n";
  }
  int64_t failed = 0, written = 0;
  size_t index = 0;
  Status write_error;
  const double seconds =
      RunSources(*model, std::move(sources), flags.tta, flags.tta_max_side, flags.run.quiet,
                 [&](const pipeline::SourceResult& r) {
                   const auto [e, i] = where[index++];
                   if (!r.status.ok()) {
                     ++failed;
                     return;
                   }
                   std::vector<eval::WiderDetection> dets;
                   for (const Detection& d : r.result.faces)
                     dets.push_back(eval::ToWiderDetection(d, corners));
                   const std::string& name = gt.events[e].images[i].name;
                   const fs::path path = fs::path(dir) / gt.events[e].name / (name + ".txt");
                   Status s = eval::WritePredictionFile(path.string(), name, dets);
                   if (!s.ok() && write_error.ok()) write_error = s;
                   if (s.ok()) ++written;
                 });
  if (!write_error.ok()) {
    std::cerr << "error: " << write_error.message() << "\n";
    exit_code = kExitFatal;
    return -1;
  }
  const double rate = seconds > 0 ? static_cast<double>(index) / seconds : 0.0;
  if (!flags.run.quiet) {
    std::fprintf(stderr, "%zu images (%lld failed) in %.2f s: %.2f images/s; predictions in %s\n",
                 index, static_cast<long long>(failed), seconds, rate, dir.c_str());
  }
  report["model"] = info.Describe();
  report["detect_seconds"] = seconds;
  report["images_per_second"] = rate;
  report["failed_images"] = failed;
  return failed;
}

void PrintReadReport(const eval::PredictionReadReport& r, const std::string& dir) {
  auto list = [](const std::vector<std::string>& items) {
    std::string s;
    for (size_t i = 0; i < items.size() && i < 5; ++i) s += "\n  " + items[i];
    if (items.size() > 5) s += "\n  ... and " + std::to_string(items.size() - 5) + " more";
    return s;
  };
  if (!r.missing.empty()) {
    std::cerr << "warning: " << r.missing.size() << " prediction files missing in " << dir
              << " (those images count as having no detections, as MATLAB's read_pred.m does):"
              << list(r.missing) << "\n";
  }
  if (!r.invalid.empty()) {
    std::cerr << "warning: " << r.invalid.size()
              << " prediction files are invalid and count as having no detections:"
              << list(r.invalid) << "\n";
  }
}

int RunWider(WiderFlags flags) {
  if (flags.images_dir.empty() == flags.predictions_dir.empty()) {
    std::cerr << "error: give either --images (run a model) or --predictions (evaluate existing "
                 "prediction files), not both and not neither\n";
    return kExitUsage;
  }
  auto gt = eval::LoadWiderGroundTruth(flags.gt_dir);
  if (!gt.ok()) {
    std::cerr << "error: --gt: " << gt.status().message() << "\n";
    return gt.status().code() == StatusCode::kNotFound ? kExitUsage : kExitFatal;
  }
  json report;
  int64_t failed = 0;
  std::string dir = flags.predictions_dir;
  if (dir.empty()) {
    dir = flags.predictions_out.empty() ? (fs::path(flags.out_dir) / "predictions").string()
                                        : flags.predictions_out;
    int exit_code = kExitOk;
    failed = PredictWider(flags, *gt, dir, flags.label, report, exit_code);
    if (failed < 0) return exit_code;
  } else if (flags.label.empty()) {
    flags.label = fs::path(dir).filename().string();
    if (flags.label.empty()) flags.label = fs::path(dir).parent_path().filename().string();
  }
  eval::PredictionReadReport read;
  auto predictions = eval::ReadWiderPredictions(dir, *gt, &read);
  if (!predictions.ok()) {
    std::cerr << "error: --predictions: " << predictions.status().message() << "\n";
    return kExitUsage;
  }
  PrintReadReport(read, dir);
  const int64_t detections = predictions->detection_count();
  auto result = eval::EvaluateWider(*gt, std::move(*predictions));
  if (!result.ok()) {
    std::cerr << "error: " << result.status().message() << "\n";
    return kExitFatal;
  }
  for (const std::string& w : result->warnings) std::cerr << "warning: " << w << "\n";
  std::cout << eval::FormatApTable(*result, flags.label) << std::flush;
  auto files = eval::WritePrCurves(flags.out_dir, *result, flags.label);
  if (!files.ok()) {
    std::cerr << "error: " << files.status().message() << "\n";
    return kExitFatal;
  }
  if (!files->plot_note.empty()) std::cerr << "note: " << files->plot_note << "\n";
  if (!flags.run.quiet) std::cerr << "PR curves: " << flags.out_dir << "/pr_curve_*.csv\n";

  report["label"] = flags.label;
  report["predictions"] = dir;
  report["images"] = gt->image_count();
  report["detections"] = detections;
  report["missing_files"] = read.missing.size();
  report["invalid_files"] = read.invalid.size();
  report["score_min"] = result->scores.min;
  report["score_max"] = result->scores.max;
  for (const eval::WiderSubsetResult& s : result->subsets) {
    report["ap"][eval::WiderSubsetName(s.subset)] = s.ap;
    report["faces"][eval::WiderSubsetName(s.subset)] = s.faces;
  }
  report["files"] = files->written;
  return FinishEvalRun(flags.json_path, report, failed);
}

void RegisterWider(CLI::App& eval, std::shared_ptr<WiderFlags> flags) {
  CLI::App* app = eval.add_subcommand(
      "widerface",
      "WIDER FACE val AP (Easy/Medium/Hard) by the official protocol; PR curves as CSV and, with "
      "gnuplot, PNG/SVG. Detection defaults for accuracy work: --score-threshold 0.01, "
      "--max-faces 750, MogFace --nms-iou 0.3 --top-k 5000 (the MogFace test's), "
      "--input-policy modelscope (original size)");
  app->add_option("--gt", flags->gt_dir,
                  "Folder with wider_face_val.mat and wider_{easy,medium,hard}_val.mat")
      ->required();
  app->add_option("--images", flags->images_dir,
                  "WIDER_val/images: run the model on <event>/<image>.jpg");
  app->add_option("--predictions", flags->predictions_dir,
                  "Evaluate existing prediction files (<event>/<image>.txt, any detector) "
                  "instead of running a model");
  app->add_option("--predictions-out", flags->predictions_out,
                  "Where --images writes its prediction files (default: <out>/predictions)");
  app->add_option("--out", flags->out_dir, "Folder for the PR curves (CSV, gnuplot script, plots)")
      ->capture_default_str();
  app->add_option("--label", flags->label, "Name in the table and the plot legend");
  app->add_option("--json", flags->json_path, "Also write the results as JSON to this file");
  app->add_option("--tta", flags->tta,
                  "MogFace test-time augmentation (paper, hard, flip), one image at a time")
      ->check(CLI::IsMember({"paper", "hard", "flip"}));
  app->add_option("--tta-max-side", flags->tta_max_side,
                  "Cap each TTA pass's long side in pixels (0 = as the paper)")
      ->check(CLI::Range(0, 100000));
  flags->run.options.input_policy = "modelscope";
  AddRunFlags(*app, flags->run);
}

}  // namespace

CommandRunner RegisterEvalCommand(CLI::App& app) {
  app.require_subcommand(1);
  auto wider = std::make_shared<WiderFlags>();
  RegisterWider(app, wider);
  CLI::App* wider_app = app.get_subcommand("widerface");
  CommandRunner compare = eval_cli::RegisterCompare(app);
  return [&app, wider_app, wider, compare] {
    return app.got_subcommand(wider_app) ? RunWider(*wider) : compare();
  };
}

}  // namespace mogserve::cli
