// `mogserve eval compare`: the same images at two or more precisions, and what changes.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "eval/commands/eval_support.h"
#include "cli/input_files.h"
#include "common/file_util.h"
#include "eval/precision_compare.h"

namespace mogserve::cli::eval_cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct CompareFlags {
  std::vector<std::string> paths;
  std::string precisions = "fp32,bf16";
  std::string gt_path;
  double match_iou = 0.5;
  std::string json_path;
  RunFlags run;
};

// ---------------------------------------------------------------- eval compare

// tests/data/ground_truth.json: {"photo.jpg": [[x1, y1, x2, y2], ...], ...}; keys starting with
// '_' are comments.
StatusOr<std::map<std::string, std::vector<Detection>>> ReadGroundTruthJson(
    const std::string& path) {
  MOGSERVE_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ReadFileBytes(path));
  const json j = json::parse(bytes.begin(), bytes.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return InvalidData(path + ": expected a JSON object {\"photo.jpg\": [[x1, y1, x2, y2], ...]}");
  }
  std::map<std::string, std::vector<Detection>> gt;
  for (const auto& [name, boxes] : j.items()) {
    if (name.empty() || name[0] == '_') continue;
    if (!boxes.is_array()) return InvalidData(path + ": \"" + name + "\" is not a list of boxes");
    std::vector<Detection>& faces = gt[name];
    for (const json& b : boxes) {
      if (!b.is_array() || b.size() != 4 || !b[0].is_number() || !b[1].is_number() ||
          !b[2].is_number() || !b[3].is_number()) {
        return InvalidData(path + ": \"" + name + "\": a box must be [x1, y1, x2, y2], got " +
                           b.dump());
      }
      faces.push_back(
          {b[0].get<float>(), b[1].get<float>(), b[2].get<float>(), b[3].get<float>(), 1.0f});
    }
  }
  return gt;
}

struct PrecisionRun {
  std::string precision;
  std::string model;  // EngineInfo::Describe()
  eval::BoxCorners corners = eval::BoxCorners::kEdges;
  eval::DetectionsPerImage faces;  // per source, input order
  std::vector<bool> ok;
  double seconds = 0;
};

// One precision over every source; false (exit_code set) when the model cannot be loaded.
bool RunPrecision(const CompareFlags& flags, const std::string& precision,
                  const std::vector<pipeline::ImageSource>& sources, PrecisionRun& run,
                  int& exit_code) {
  RunFlags run_flags = flags.run;
  run_flags.options.precision = precision;
  std::optional<LoadedModel> model = LoadModel(run_flags, exit_code);
  if (!model) return false;
  run.precision = precision;
  run.model = model->engine->info().Describe();
  run.corners = CornersOf(model->engine->info());
  if (!flags.run.quiet) std::cerr << "eval compare: " << run.model << "\n";
  run.seconds =
      RunSources(*model, sources, "", 0, flags.run.quiet, [&](const pipeline::SourceResult& r) {
        run.ok.push_back(r.status.ok());
        run.faces.push_back(r.result.faces);
      });
  return true;
}

std::string Fixed(double v, int digits) {
  char s[48];
  std::snprintf(s, sizeof(s), "%.*f", digits, v);
  return s;
}
std::string Signed(double v, int digits) {
  return (v >= 0 ? "+" : "") + Fixed(v, digits);
}

void PrintRow(const std::string& name, const std::string& a, const std::string& b,
              const std::string& change) {
  std::printf("%-22s %12s %12s %12s\n", name.c_str(), a.c_str(), b.c_str(), change.c_str());
}

// The "FP32 / BF16 / change" table of one candidate against the reference.
void PrintComparison(const PrecisionRun& ref, const PrecisionRun& cand,
                     const eval::DetectionDiff& d, const eval::GroundTruthScore* ref_gt,
                     const eval::GroundTruthScore* cand_gt) {
  PrintRow("", ref.precision, cand.precision, "change");
  PrintRow("images", std::to_string(d.images), std::to_string(d.images), "");
  PrintRow("faces", std::to_string(d.reference_faces), std::to_string(d.candidate_faces),
           Signed(static_cast<double>(d.candidate_faces - d.reference_faces), 0));
  PrintRow("matched (IoU >= match)", "", std::to_string(d.matched), "");
  PrintRow("lost / gained", "", std::to_string(d.lost) + " / " + std::to_string(d.gained), "");
  PrintRow("mean / min IoU", "", Fixed(d.mean_iou, 4) + " / " + Fixed(d.min_iou, 4), "");
  PrintRow("mean |dscore|", "", Fixed(d.mean_abs_score_diff, 5), "");
  PrintRow("max |dscore|", "", Fixed(d.max_abs_score_diff, 5), "");
  if (ref_gt != nullptr && cand_gt != nullptr) {
    PrintRow("AP50 (ground truth)", Fixed(ref_gt->ap, 4), Fixed(cand_gt->ap, 4),
             Signed(cand_gt->ap - ref_gt->ap, 4));
    PrintRow("recall (ground truth)", Fixed(ref_gt->recall, 4), Fixed(cand_gt->recall, 4),
             Signed(cand_gt->recall - ref_gt->recall, 4));
  }
  PrintRow("seconds", Fixed(ref.seconds, 2), Fixed(cand.seconds, 2),
           ref.seconds > 0 ? Signed(100.0 * (cand.seconds / ref.seconds - 1), 0) + "%" : "");
}

// The precisions to compare: at least two, the first is the reference.
StatusOr<std::vector<std::string>> ParsePrecisionList(const CompareFlags& flags) {
  std::vector<std::string> list;
  std::stringstream ss(flags.precisions);
  for (std::string p; std::getline(ss, p, ',');) {
    if (!engine::ParsePrecision(p).ok()) {
      return InvalidArgument("--precision: '" + p + "' is not one of fp32, bf16, fp16, tf32, int8");
    }
    list.push_back(p);
  }
  if (list.size() < 2) {
    return InvalidArgument(
        "--precision needs two or more precisions, the reference first "
        "(e.g. fp32,bf16)");
  }
  return list;
}

// The images every run detected in: one that failed in any run leaves the comparison (it failed
// for a reason that is not the precision: unreadable, too large).
std::vector<size_t> KeptImages(const std::vector<PrecisionRun>& runs, size_t sources) {
  std::vector<size_t> kept;
  for (size_t s = 0; s < sources; ++s) {
    bool all_ok = true;
    for (const PrecisionRun& r : runs) all_ok = all_ok && r.ok[s];
    if (all_ok) kept.push_back(s);
  }
  return kept;
}

// The kept images the ground-truth file names (by file name), and their faces.
struct GroundTruthSubset {
  std::vector<size_t> kept;  // indices into the kept images
  eval::DetectionsPerImage faces;
};
GroundTruthSubset MatchGroundTruth(const std::map<std::string, std::vector<Detection>>& gt,
                                   const std::vector<pipeline::ImageSource>& sources,
                                   const std::vector<size_t>& kept, const std::string& gt_path) {
  GroundTruthSubset out;
  for (size_t k = 0; k < kept.size(); ++k) {
    auto it = gt.find(fs::path(sources[kept[k]].path).filename().string());
    if (it == gt.end()) continue;
    out.kept.push_back(k);
    out.faces.push_back(it->second);
  }
  if (out.kept.size() < kept.size()) {
    std::cerr << "note: " << kept.size() - out.kept.size() << " of " << kept.size()
              << " images are not in " << gt_path << " and are left out of AP/recall\n";
  }
  return out;
}

json DiffJson(const eval::DetectionDiff& d) {
  return {{"reference_faces", d.reference_faces},
          {"faces", d.candidate_faces},
          {"matched", d.matched},
          {"lost", d.lost},
          {"gained", d.gained},
          {"mean_iou", d.mean_iou},
          {"min_iou", d.min_iou},
          {"mean_abs_score_diff", d.mean_abs_score_diff},
          {"max_abs_score_diff", d.max_abs_score_diff}};
}

int RunCompare(const CompareFlags& flags) {
  auto precisions = ParsePrecisionList(flags);
  if (!precisions.ok()) {
    std::cerr << "error: " << precisions.status().message() << "\n";
    return kExitUsage;
  }
  std::optional<std::map<std::string, std::vector<Detection>>> gt;
  if (!flags.gt_path.empty()) {
    auto read = ReadGroundTruthJson(flags.gt_path);
    if (!read.ok()) {
      std::cerr << "error: --gt: " << read.status().message() << "\n";
      return kExitUsage;
    }
    gt = std::move(*read);
  }
  std::vector<pipeline::ImageSource> sources;
  for (const InputFile& in : CollectInputFiles(flags.paths))
    sources.push_back({in.path, in.path, {}});
  std::vector<PrecisionRun> runs(precisions->size());
  for (size_t i = 0; i < runs.size(); ++i) {
    int exit_code = kExitOk;
    if (!RunPrecision(flags, (*precisions)[i], sources, runs[i], exit_code)) return exit_code;
  }
  const std::vector<size_t> kept = KeptImages(runs, sources.size());
  const size_t failed = sources.size() - kept.size();
  auto select = [&](const PrecisionRun& r) {
    eval::DetectionsPerImage out;
    for (size_t s : kept) out.push_back(r.faces[s]);
    return out;
  };
  const GroundTruthSubset truth =
      gt ? MatchGroundTruth(*gt, sources, kept, flags.gt_path) : GroundTruthSubset{};
  auto score = [&](const PrecisionRun& r) -> StatusOr<eval::GroundTruthScore> {
    eval::DetectionsPerImage dets;
    const eval::DetectionsPerImage all = select(r);
    for (size_t k : truth.kept) dets.push_back(all[k]);
    return eval::ScoreAgainstGroundTruth(truth.faces, dets, r.corners);
  };

  json report;
  report["model"] = runs[0].model;
  report["images"] = kept.size();
  report["failed_images"] = failed;
  report["reference"] = runs[0].precision;
  std::vector<std::optional<eval::GroundTruthScore>> scores(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) {
    json& r = report["runs"][runs[i].precision];
    r["seconds"] = runs[i].seconds;
    if (!gt) continue;
    auto s = score(runs[i]);
    if (!s.ok()) {
      std::cerr << "error: " << s.status().message() << "\n";
      return kExitFatal;
    }
    scores[i] = *s;
    r["ap"] = s->ap;
    r["recall"] = s->recall;
    r["gt_faces"] = s->faces;
  }
  std::cout << "eval compare: " << runs[0].model << " vs " << runs.size() - 1
            << " other precision(s), " << kept.size() << " images\n";
  for (size_t i = 1; i < runs.size(); ++i) {
    auto diff = eval::CompareDetections(select(runs[0]), select(runs[i]), flags.match_iou);
    if (!diff.ok()) {
      std::cerr << "error: " << diff.status().message() << "\n";
      return kExitFatal;
    }
    PrintComparison(runs[0], runs[i], *diff, scores[0] ? &*scores[0] : nullptr,
                    scores[i] ? &*scores[i] : nullptr);
    report["diff"][runs[i].precision] = DiffJson(*diff);
    if (i + 1 < runs.size()) std::cout << "\n";
  }
  std::cout << std::flush;
  return FinishEvalRun(flags.json_path, report, failed);
}

void AddCompare(CLI::App& eval, std::shared_ptr<CompareFlags> flags) {
  CLI::App* app = eval.add_subcommand(
      "compare",
      "Run the same images at two or more precisions and report what changes: faces matched, "
      "lost and gained, box IoU, score differences, and with --gt the AP50/recall difference");
  app->add_option("paths", flags->paths, "Image files and folders (searched recursively)")
      ->required();
  app->add_option("--gt", flags->gt_path,
                  "Ground truth as tests/data/ground_truth.json: {\"photo.jpg\": [[x1, y1, x2, "
                  "y2], ...]}");
  app->add_option("--match-iou", flags->match_iou,
                  "A face in both runs is one pair when their boxes overlap by this IoU")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app->add_option("--json", flags->json_path, "Also write the results as JSON to this file");
  AddRunFlags(*app, flags->run);
  // The list replaces the model group's single --precision.
  app->remove_option(app->get_option("--precision"));
  app->add_option("--precision", flags->precisions,
                  "Precisions to run, the reference first: on cpu fp32,bf16 (MogFace on CPUs "
                  "with AVX512-BF16); on cuda any of fp32, tf32, fp16, "
                  "bf16 for both models")
      ->capture_default_str();
}

}  // namespace

CommandRunner RegisterCompare(CLI::App& eval) {
  auto flags = std::make_shared<CompareFlags>();
  AddCompare(eval, flags);
  return [flags] { return RunCompare(*flags); };
}

}  // namespace mogserve::cli::eval_cli
