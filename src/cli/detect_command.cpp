// `mogserve detect PATH...`: the offline batch job.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>

#include "cli/commands.h"
#include "cli/input_files.h"
#include "cli/output_file.h"
#include "cli/progress_bar.h"
#include "common/file_util.h"
#include "image/draw.h"
#include "image/encode.h"
#include "pipeline/offline_detector.h"
#include "pipeline/tta.h"
#include "scheduler/scheduler_config.h"
#include "server/result_json.h"

namespace mogserve::cli {
namespace {

namespace fs = std::filesystem;

struct DetectFlags {
  std::vector<std::string> paths;
  BatchJobFlags job;
  std::string annotate_dir;
  int decode_threads = 0;
  int64_t max_pixels = 50'000'000;
  bool timing = false;
  bool quiet = false;
  std::string tta;  // "", "paper", "hard", "flip"
  int tta_max_side = 0;
  EngineFlags engine;
  InputFlags input;
};

// DIR/relative with a .jpg extension; inputs that would land on the same file (x.png and x.jpg,
// or two named files a/x.jpg and b/x.jpg) get "_2", "_3", ... so none overwrites another.
fs::path AnnotationPath(const std::string& dir, const std::string& relative,
                        std::set<fs::path>& used) {
  fs::path target = fs::path(dir) / relative;
  target.replace_extension(".jpg");
  const fs::path stem = target.parent_path() / target.stem();
  for (int n = 2; used.count(target) > 0; ++n) {
    target = stem.string() + "_" + std::to_string(n) + ".jpg";
  }
  used.insert(target);
  return target;
}

Status WriteAnnotated(const std::string& path, const DetectResult& result, const fs::path& out) {
  MOGSERVE_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ReadFileBytes(path));
  MOGSERVE_ASSIGN_OR_RETURN(image::DecodedImage decoded, image::Decode(bytes));
  image::Image& img = decoded.image;
  const int thickness = std::max(2, std::max(img.width, img.height) / 400);
  const int text_scale = std::max(1, std::max(img.width, img.height) / 500);
  for (const Detection& d : result.faces) {
    image::DrawRect(img, d.x1, d.y1, d.x2, d.y2, {0, 255, 0}, thickness);
    char label[16];
    std::snprintf(label, sizeof(label), "%.2f", d.score);
    const int label_y = std::max(0, static_cast<int>(d.y1) - 9 * text_scale);
    image::DrawLabel(img, static_cast<int>(d.x1), label_y, label, {0, 0, 0}, {0, 255, 0},
                     text_scale);
  }
  MOGSERVE_ASSIGN_OR_RETURN(std::vector<uint8_t> jpeg, image::EncodeJpeg(img, 90));
  std::error_code ec;
  fs::create_directories(out.parent_path(), ec);
  std::ofstream f(out, std::ios::binary);
  f.write(reinterpret_cast<const char*>(jpeg.data()), static_cast<std::streamsize>(jpeg.size()));
  if (!f) return Internal("cannot write " + out.string());
  return Status::Ok();
}

// --tta: the paper's multi-scale + flip + box-voting test (pipeline/tta.h), one image at a time;
// for accuracy work, not throughput.
pipeline::TtaOptions ToTtaOptions(const DetectFlags& flags, const DetectOptions& detect) {
  pipeline::TtaOptions o = pipeline::TtaOptions::Named(flags.tta);
  o.max_side_px = flags.tta_max_side;
  o.max_faces = detect.max_faces;
  return o;
}

int RunDetect(const DetectFlags& flags) {
  std::vector<InputFile> inputs = CollectInputFiles(flags.paths);
  auto created = CreateEngineInstances(flags.engine, flags.job.instances);
  if (const int* code = std::get_if<int>(&created)) return *code;
  EngineInstances& engines = std::get<EngineInstances>(created);
  engine::Engine* engine = engines.all.front();
  auto buckets = ToShapeBuckets(flags.input, engine->info());
  if (!buckets.ok()) {
    std::cerr << "error: " << buckets.status().message() << "\n";
    return kExitUsage;
  }
  OutputFile output(flags.job.output);
  if (!output.ok()) return kExitUsage;
  std::ostream& out = output.stream();

  pipeline::OfflineOptions options;
  options.batch_size = flags.job.batch_size;
  options.decode_threads = flags.decode_threads;
  auto policy = scheduler::ParsePolicy(flags.job.policy);
  if (!policy.ok()) {
    std::cerr << "error: --" << policy.status().message() << "\n";
    return kExitUsage;
  }
  options.policy = *policy;
  options.buckets = *buckets;
  options.detect = ToDetectOptions(flags.input, engine->default_detect_options());
  options.decode.max_pixels = flags.max_pixels;
  if (!flags.tta.empty() && engine->info().fixed_side > 0) {
    std::cerr << "error: --tta needs --model mogface (the SSD takes one fixed input size)\n";
    return kExitUsage;
  }

  std::vector<pipeline::ImageSource> sources;
  std::map<std::string, std::string> relative_of;
  for (const InputFile& in : inputs) {
    relative_of[in.path] = in.relative;
    sources.push_back({in.path, in.path, {}});
  }
  const bool tty = isatty(STDERR_FILENO) && !flags.quiet;
  ProgressBar bar(static_cast<int64_t>(sources.size()), "img", tty);
  std::set<fs::path> annotated;  // output files written so far
  int64_t done = 0, failed = 0, faces = 0;
  auto extra = [&] {
    return "faces " + std::to_string(faces) + "  failed " + std::to_string(failed);
  };
  const auto start = std::chrono::steady_clock::now();
  auto on_result = [&](const pipeline::SourceResult& r) {
    ++done;
    Status status = r.status;
    if (status.ok() && !flags.annotate_dir.empty()) {
      status = WriteAnnotated(r.id, r.result,
                              AnnotationPath(flags.annotate_dir, relative_of[r.id], annotated));
    }
    if (status.ok()) {
      faces += static_cast<int64_t>(r.result.faces.size());
      nlohmann::json line = server::ResultToJson(r.result, flags.timing);
      line["path"] = r.id;
      out << server::ToJsonLine(line) << "\n";
    } else {
      ++failed;
      nlohmann::json line = server::ErrorToJson(status);
      line["path"] = r.id;
      out << server::ToJsonLine(line) << "\n";
      if (tty) std::cerr << "\r\033[K";
      std::cerr << "error: " << r.id << ": " << status.message() << "\n";
    }
    bar.Update(done, extra());
  };
  double mean_batch = 1;
  if (flags.tta.empty()) {
    pipeline::OfflineDetector detector(engines.all, options);
    detector.Run(std::move(sources), on_result);
    mean_batch = detector.stats().mean_batch_size;
  } else {
    const pipeline::TtaOptions tta = ToTtaOptions(flags, options.detect);
    for (const pipeline::ImageSource& source : sources) {
      on_result(pipeline::DetectSourceWithTta(*engine, source, options.decode, tta,
                                              options.detect.score_threshold));
    }
  }
  out.flush();
  bar.Finish(extra());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!flags.quiet) {
    std::fprintf(stderr,
                 "%lld images, %lld faces, %lld failed in %.2f s (%.1f images/s, mean batch "
                 "%.1f)\n",
                 static_cast<long long>(done), static_cast<long long>(faces),
                 static_cast<long long>(failed), seconds, seconds > 0 ? done / seconds : 0.0,
                 mean_batch);
  }
  if (!out) {
    std::cerr << "error: writing the results failed\n";
    return kExitFatal;
  }
  return failed > 0 ? kExitSomeFailed : kExitOk;
}

}  // namespace

CommandRunner RegisterDetectCommand(CLI::App& app) {
  auto flags = std::make_shared<DetectFlags>();
  app.add_option("paths", flags->paths, "Image files and folders (searched recursively)")
      ->required();
  AddBatchJobFlags(app, flags->job, "images");
  app.add_option("--annotate", flags->annotate_dir,
                 "Write each image with its boxes and scores drawn into this folder (JPEG)");
  app.add_option(
         "--decode-threads", flags->decode_threads,
         "Threads reading and decoding images ahead of the engine (0 = half the cores, at least 1)")
      ->check(CLI::Range(0, 256))
      ->capture_default_str();
  app.add_option("--max-pixels", flags->max_pixels,
                 "Refuse images with more pixels than this (checked before decoding)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40))
      ->capture_default_str();
  app.add_flag("--timing", flags->timing, "Add per-image timings to each JSON line");
  app.add_option("--tta", flags->tta,
                 "MogFace test-time augmentation, one image at a time, for accuracy work: paper "
                 "(the paper's multi-scale + flip + box voting, about 11 passes), hard (its "
                 "WIDER-hard setting), flip (original + mirrored only)")
      ->check(CLI::IsMember({"paper", "hard", "flip"}));
  app.add_option("--tta-max-side", flags->tta_max_side,
                 "Cap each TTA pass's long side in pixels (0 = as the paper: up to 2.6x)")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  app.add_flag("-q,--quiet", flags->quiet, "No progress bar and no summary on stderr");
  AddEngineFlags(app, flags->engine);
  AddInputFlags(app, flags->input);
  return [flags] { return RunDetect(*flags); };
}

}  // namespace mogserve::cli
