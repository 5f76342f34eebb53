// `mogserve detect PATH...`: the offline batch job.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>

#include "api/detector_builder.h"
#include "cli/commands.h"
#include "cli/detect_in_order.h"
#include "cli/input_files.h"
#include "cli/output_file.h"
#include "cli/progress_bar.h"
#include "common/file_util.h"
#include "image/align.h"
#include "image/draw.h"
#include "image/encode.h"
#include "model/model_registry.h"
#include "pipeline/offline_detector.h"  // SourceResult (--tta)
#include "pipeline/tta.h"

namespace mogserve::cli {
namespace {

namespace fs = std::filesystem;

struct DetectFlags {
  std::vector<std::string> paths;
  BatchJobFlags job;
  std::string annotate_dir;
  std::string crops_dir;
  int crop_size = 112;
  bool timing = false;
  bool quiet = false;
  std::string tta;  // "", "paper", "hard", "flip"
  int tta_max_side = 0;
  // The model and input groups of the option table, --max-pixels and --decode-threads.
  DetectorOptions options;
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

// Face `face` of the picture whose AnnotationPath in the crops folder is `base` (unique per
// input): <base without extension>_<face index>.jpg, faces in score order from 0.
fs::path CropPath(const fs::path& base, size_t face) {
  return base.parent_path() / (base.stem().string() + "_" + std::to_string(face) + ".jpg");
}

// Each face with its five points warped onto the ArcFace template (image/align.h), written as
// CropPath(base, k) (JPEG, quality 95; written whole or not at all). Faces without points have
// none.
Status WriteCrops(const image::Image& picture, const DetectResult& result, const fs::path& base,
                  int size) {
  for (size_t k = 0; k < result.faces.size(); ++k) {
    const Detection& d = result.faces[k];
    if (d.landmarks.size() != static_cast<size_t>(kNumLandmarks)) continue;
    MOGSERVE_ASSIGN_OR_RETURN(const image::Image crop,
                              image::AlignFace(picture, d.landmarks, size));
    MOGSERVE_ASSIGN_OR_RETURN(const std::vector<uint8_t> jpeg, image::EncodeJpeg(crop, 95));
    const fs::path out = CropPath(base, k);
    std::error_code ec;
    fs::create_directories(out.parent_path(), ec);
    MOGSERVE_RETURN_IF_ERROR(WriteFileBytes(out.string(), jpeg));
  }
  return Status::Ok();
}

Status WriteAnnotated(image::Image img, const DetectResult& result, const fs::path& out) {
  const int thickness = std::max(2, std::max(img.width, img.height) / 400);
  const int text_scale = std::max(1, std::max(img.width, img.height) / 500);
  for (const Detection& d : result.faces) {
    image::DrawRect(img, d.x1, d.y1, d.x2, d.y2, {0, 255, 0}, thickness);
    char label[16];
    std::snprintf(label, sizeof(label), "%.2f", d.score);
    const int label_y = std::max(0, static_cast<int>(d.y1) - 9 * text_scale);
    image::DrawLabel(img, static_cast<int>(d.x1), label_y, label, {0, 0, 0}, {0, 255, 0},
                     text_scale);
    for (const Point& p : d.landmarks) {
      image::DrawDot(img, p.x, p.y, 1.5f * thickness, {255, 0, 0});
    }
  }
  MOGSERVE_ASSIGN_OR_RETURN(std::vector<uint8_t> jpeg, image::EncodeJpeg(img, 90));
  std::error_code ec;
  fs::create_directories(out.parent_path(), ec);
  return WriteFileBytes(out.string(), jpeg);
}

// The picture again (the pipeline keeps none), upright, for --annotate and --crops.
StatusOr<image::Image> ReadPicture(const std::string& path) {
  MOGSERVE_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ReadFileBytes(path));
  MOGSERVE_ASSIGN_OR_RETURN(image::DecodedImage decoded, image::Decode(bytes));
  return std::move(decoded.image);
}

// --tta: the paper's multi-scale + flip + box-voting test (pipeline/tta.h), one image at a time;
// for accuracy work, not throughput.
pipeline::TtaOptions ToTtaOptions(const DetectFlags& flags, const DetectOptions& detect) {
  pipeline::TtaOptions o = pipeline::TtaOptions::Named(flags.tta);
  o.max_side_px = flags.tta_max_side;
  o.max_faces = detect.max_faces;
  o.min_face_size = detect.min_face_size;
  return o;
}

// Requests in flight at most: batch x instances x (2 batches prefetched + 1 running).
int64_t Window(const DetectFlags& flags) {
  const int instances = flags.job.instances > 0 ? flags.job.instances
                                                : engine::DefaultInstances(flags.options.device);
  return int64_t{flags.job.batch_size} * instances * 3;
}

// The serving stack's options for `detect`: a batch job's, with the decode threads and pixel
// limit, and a queue that holds the whole reorder window.
DetectorOptions ToDetectorOptions(const DetectFlags& flags) {
  DetectorOptions o = BatchJobOptions(flags.options, flags.job);
  o.queue_capacity = std::max<int64_t>(o.queue_capacity, Window(flags));
  return o;
}

// Prints a start-up error and returns its exit code (a bad flag is a usage error).
int StartupError(const Status& status) {
  std::cerr << "error: " << status.message() << "\n";
  return status.code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFatal;
}

// --tta: one image at a time on one engine, outside the pipeline.
int RunTta(const DetectFlags& flags, const std::vector<InputFile>& inputs,
           const std::function<void(const std::string&, StatusOr<DetectResult>)>& on_result) {
  auto created = CreateEngineInstances(flags.options, 1);
  if (const int* code = std::get_if<int>(&created)) return *code;
  const EngineInstances& instances = std::get<EngineInstances>(created);
  engine::Engine& engine = *instances.all.front();
  if (engine.info().fixed_side > 0) {
    std::cerr << "error: --tta needs a model that takes any input size (mogface, an ONNX YuNet); "
              << engine.info().model << " takes one fixed square\n";
    return kExitUsage;
  }
  const DetectOptions detect =
      opt::ApplyDetectOverrides(flags.options, engine.model()->default_detect_options());
  image::DecodeOptions decode;
  decode.max_pixels = flags.options.max_pixels;
  const pipeline::TtaOptions tta = ToTtaOptions(flags, detect);
  for (const InputFile& in : inputs) {
    const pipeline::SourceResult r =
        pipeline::DetectSourceWithTta(engine, *engine.model(), {in.path, in.path, {}}, decode, tta,
                                      detect.score_threshold, instances.face_stage.get());
    if (r.status.ok()) {
      on_result(r.id, r.result);
    } else {
      on_result(r.id, r.status);
    }
  }
  return kExitOk;
}

// Writes each result's JSON line (and its annotated copy), counts, and keeps the progress bar.
class ResultWriter {
 public:
  ResultWriter(const DetectFlags& flags, const std::vector<InputFile>& inputs, std::ostream& out)
      : flags_(flags),
        out_(out),
        tty_(isatty(STDERR_FILENO) && !flags.quiet),
        bar_(static_cast<int64_t>(inputs.size()), "img", tty_) {
    for (const InputFile& in : inputs) relative_of_[in.path] = in.relative;
  }

  void Write(const std::string& path, StatusOr<DetectResult> result) {
    ++done_;
    const bool drawn = !flags_.annotate_dir.empty();
    const bool cropped = !flags_.crops_dir.empty() && result.ok() && !result->faces.empty();
    if (result.ok() && (drawn || cropped)) {
      StatusOr<image::Image> picture = ReadPicture(path);
      Status written = picture.status();
      if (written.ok() && cropped) {
        written = WriteCrops(*picture, *result,
                             AnnotationPath(flags_.crops_dir, relative_of_[path], cropped_),
                             flags_.crop_size);
      }
      if (written.ok() && drawn) {
        written =
            WriteAnnotated(std::move(*picture), *result,
                           AnnotationPath(flags_.annotate_dir, relative_of_[path], annotated_));
      }
      if (!written.ok()) result = written;
    }
    out_ << FormatJsonLine(path, result, flags_.timing) << "\n";
    if (result.ok()) {
      faces_ += static_cast<int64_t>(result->faces.size());
    } else {
      ++failed_;
      if (tty_) std::cerr << "\r\033[K";
      std::cerr << "error: " << path << ": " << result.status().message() << "\n";
    }
    bar_.Update(done_, Extra());
  }

  void Finish(double seconds, double mean_batch) {
    bar_.Finish(Extra());
    if (flags_.quiet) return;
    std::fprintf(stderr,
                 "%lld images, %lld faces, %lld failed in %.2f s (%.1f images/s, mean batch "
                 "%.1f)\n",
                 static_cast<long long>(done_), static_cast<long long>(faces_),
                 static_cast<long long>(failed_), seconds, seconds > 0 ? done_ / seconds : 0.0,
                 mean_batch);
  }

  int64_t failed() const { return failed_; }

 private:
  std::string Extra() const {
    return "faces " + std::to_string(faces_) + "  failed " + std::to_string(failed_);
  }

  const DetectFlags& flags_;
  std::ostream& out_;
  const bool tty_;
  ProgressBar bar_;
  std::map<std::string, std::string> relative_of_;
  std::set<fs::path> annotated_;  // output files written so far
  std::set<fs::path> cropped_;    // the crops' bases (AnnotationPath) taken so far
  int64_t done_ = 0, failed_ = 0, faces_ = 0;
};

// --crops needs five points a face: refused at start when nothing gives them.
Status CheckCrops(const DetectFlags& flags) {
  if (flags.crops_dir.empty()) return Status::Ok();
  MOGSERVE_RETURN_IF_ERROR(image::ArcFaceTemplate(flags.crop_size).status());
  const std::string& l = flags.options.landmarks;
  const auto spec = model::FindModel(flags.options.model);
  const auto choice = api::ParseLandmarks(l);
  // An unknown model or --landmarks is refused when the detector is built, naming the option.
  if (!spec.ok() || !choice.ok()) return Status::Ok();
  if (!api::GivesLandmarks(*choice, **spec)) {
    return InvalidArgument("--crops: aligned crops need five landmarks a face, which --landmarks " +
                           l + " turns off; use --landmarks auto (the default) or 68");
  }
  return Status::Ok();
}

int RunDetect(const DetectFlags& flags) {
  if (const Status crops = CheckCrops(flags); !crops.ok()) {
    return PrintError(crops.message(), kExitUsage);
  }
  const std::vector<InputFile> inputs = CollectInputFiles(flags.paths);
  std::unique_ptr<Detector> detector;
  if (flags.tta.empty()) {
    auto opened = api::DetectorBuilder::Open(ToDetectorOptions(flags), ImageJobOptionNames());
    if (!opened.ok()) return StartupError(opened.status());
    detector = std::move(opened).value();
    const DetectorInfo& info = detector->info();
    if (!info.precision_choice.empty() && !flags.quiet) {
      std::cerr << "precision auto: " << info.precision_choice << "\n";
    }
  }
  OutputFile output(flags.job.output);
  if (!output.ok()) return kExitUsage;
  std::ostream& out = output.stream();
  ResultWriter writer(flags, inputs, out);
  auto on_result = [&](const std::string& path, StatusOr<DetectResult> r) {
    writer.Write(path, std::move(r));
  };

  const auto start = std::chrono::steady_clock::now();
  double mean_batch = 1;
  if (detector) {
    DetectInOrder(*detector, inputs, static_cast<int>(Window(flags)), on_result);
    detector->Shutdown();
    mean_batch = detector->stats().mean_batch_size;
  } else if (const int code = RunTta(flags, inputs, on_result); code != kExitOk) {
    return code;
  }
  out.flush();
  writer.Finish(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                mean_batch);
  if (!out) {
    std::cerr << "error: writing the results failed\n";
    return kExitFatal;
  }
  return writer.failed() > 0 ? kExitSomeFailed : kExitOk;
}

}  // namespace

CommandRunner RegisterDetectCommand(CLI::App& app) {
  auto flags = std::make_shared<DetectFlags>();
  app.add_option("paths", flags->paths, "Image files and folders (searched recursively)")
      ->required();
  AddBatchJobFlags(app, flags->job, "images");
  app.add_option("--annotate", flags->annotate_dir,
                 "Write each image with its boxes, scores and landmarks drawn into this folder "
                 "(JPEG)");
  app.add_option("--crops", flags->crops_dir,
                 "Write each face aligned to the ArcFace template (its five landmarks warped onto "
                 "insightface's arcface_dst) into this folder: <image name>_<face index>.jpg");
  app.add_option("--crop-size", flags->crop_size,
                 "Side of the aligned crops in pixels: a multiple of 112 or 128, as insightface's "
                 "templates")
      ->check(CLI::Range(16, 4096))
      ->capture_default_str();
  app.add_option(
         "--decode-threads", flags->options.decode_threads,
         "Threads reading and decoding images ahead of the engine (0 = half the cores, at least 1)")
      ->check(CLI::Range(0, 256))
      ->capture_default_str();
  AddOptionFlag(app, flags->options, "--max-pixels");
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
  AddOptionFlags(app, flags->options, {opt::Group::kModel, opt::Group::kInput});
  return [flags] { return RunDetect(*flags); };
}

}  // namespace mogserve::cli
