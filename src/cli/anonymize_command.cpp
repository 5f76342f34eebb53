// `mogserve anonymize INPUT... -o OUTPUT`: pictures with their faces hidden (image/anonymize.h),
// detected through the same pipeline as `detect`. One file in and -o not a folder (nor ending in
// '/'): that file; otherwise -o is a folder that receives each input under its path below the
// folder it was found in. Each output is written whole or not at all (a temporary renamed), in the
// format its extension names; EXIF orientation is applied to the pixels, and no metadata is carried
// over.
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <optional>
#include <set>

#include "api/detector_builder.h"
#include "cli/anonymize_video.h"
#include "cli/commands.h"
#include "cli/detect_in_order.h"
#include "cli/input_files.h"
#include "cli/output_file.h"
#include "cli/progress_bar.h"
#include "common/file_util.h"
#include "image/anonymize.h"
#include "image/decode.h"
#include "image/encode.h"
#include "json/result_json.h"

namespace mogserve::cli {
namespace {

namespace fs = std::filesystem;

struct AnonymizeFlags {
  std::vector<std::string> inputs;
  std::string output;
  std::string method = "blur";
  std::string shape = "ellipse";
  float box_scale = image::AnonymizeOptions{}.box_scale;
  int quality = 95;
  std::string json;  // JSON lines of what was covered ("-": stdout); empty: none
  bool quiet = false;
  double detect_fps = 0;  // videos
  bool no_track = false;  // videos
  BatchJobFlags job;
  DetectorOptions options;  // the model and input groups, --max-pixels, --decode-threads
};

// Where each input goes: `output` itself for one named file (unless `output` is a folder or ends
// in '/'), else output/<relative> (a second input landing on a taken name gets "_2", "_3", ...
// before its extension). Refuses an output that is one of the inputs.
class OutputPaths {
 public:
  OutputPaths(const AnonymizeFlags& flags, const std::vector<InputFile>& inputs)
      : root_(flags.output),
        single_(inputs.size() == 1 && flags.inputs.size() == 1 &&
                !fs::is_directory(flags.inputs[0]) && !fs::is_directory(flags.output) &&
                !flags.output.ends_with('/')) {}

  bool single() const { return single_; }

  fs::path For(const InputFile& in) {
    if (single_) return root_;
    fs::path target = root_ / in.relative;
    // A video comes out as H.264 in the same container, or in MP4 when that one cannot hold it.
    if (IsVideoInput(in.path) && !IsVideoOutput(target.string())) target.replace_extension(".mp4");
    const fs::path stem = target.parent_path() / target.stem();
    const std::string ext = target.extension().string();
    for (int n = 2; taken_.count(target) > 0; ++n)
      target = stem.string() + "_" + std::to_string(n) + ext;
    taken_.insert(target);
    return target;
  }

 private:
  const fs::path root_;
  const bool single_;
  std::set<fs::path> taken_;
};

// Whether `a` and `b` name the same file (both existing), or the same path.
bool SameFile(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  return fs::equivalent(a, b, ec) || fs::weakly_canonical(a, ec) == fs::weakly_canonical(b, ec);
}

// The picture read again, upright, its faces covered, encoded as `out`'s extension asks and
// written whole or not at all.
Status WriteAnonymized(const std::string& path, const DetectResult& result, const fs::path& out,
                       const image::AnonymizeOptions& options, int quality) {
  MOGSERVE_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ReadFileBytes(path));
  MOGSERVE_ASSIGN_OR_RETURN(image::DecodedImage decoded, image::Decode(bytes));
  image::AnonymizeFaces(decoded.image, result.faces, options);
  MOGSERVE_ASSIGN_OR_RETURN(
      std::vector<uint8_t> encoded,
      image::Encode(decoded.image, image::FormatOfExtension(out.string()), quality));
  std::error_code ec;
  if (out.has_parent_path()) fs::create_directories(out.parent_path(), ec);
  return WriteFileBytes(out.string(), encoded);
}

StatusOr<image::AnonymizeOptions> ToAnonymizeOptions(const AnonymizeFlags& flags) {
  image::AnonymizeOptions o;
  MOGSERVE_ASSIGN_OR_RETURN(o.method, image::ParseAnonymizeMethod("--method", flags.method));
  MOGSERVE_ASSIGN_OR_RETURN(o.shape, image::ParseAnonymizeShape("--shape", flags.shape));
  o.box_scale = flags.box_scale;
  return o;
}

// The inputs and their outputs, checked before any model loads: every output's extension is an
// image format, and none is an input.
Status CheckOutputs(const AnonymizeFlags& flags, const std::vector<InputFile>& inputs,
                    OutputPaths& paths, std::vector<fs::path>* outputs) {
  if (inputs.empty()) {
    return InvalidArgument(
        "no pictures (.jpg, .jpeg, .jpe, .png, .webp) or videos (.mp4, .mov, .mkv, .m4v, .avi, "
        ".webm, .ts) found");
  }
  for (const InputFile& in : inputs) {
    fs::path out = paths.For(in);
    if (IsVideoInput(in.path)) {
      if (!IsVideoOutput(out.string())) {
        return InvalidArgument("-o " + out.string() + ": " + in.path +
                               " is a video; it is written as .mp4, .mov or .mkv (H.264)");
      }
    } else if (image::FormatOfExtension(out.string()) == image::ImageFormat::kUnknown) {
      return InvalidArgument(
          "-o " + out.string() +
          ": unknown picture format; the extension names it: .jpg, .jpeg, .jpe, .png or .webp");
    }
    if (SameFile(in.path, out)) {
      return InvalidArgument("-o " + out.string() + " is the input " + in.path +
                             "; anonymized pictures never overwrite their originals");
    }
    outputs->push_back(std::move(out));
  }
  if (!paths.single() && fs::exists(flags.output) && !fs::is_directory(flags.output)) {
    return InvalidArgument("-o " + flags.output +
                           ": several inputs (or a folder) need a folder, and this is a file");
  }
  return Status::Ok();
}

// Inputs done, faces covered, failures (each named on stderr).
struct Tally {
  int64_t done = 0, failed = 0, faces = 0;
  void Add(const std::string& path, size_t covered, const Status& status, bool tty) {
    ++done;
    faces += static_cast<int64_t>(covered);
    if (status.ok()) return;
    ++failed;
    if (tty) std::cerr << "\r\033[K";
    std::cerr << "error: " << path << ": " << status.message() << "\n";
  }
  std::string Text() const {
    return "faces " + std::to_string(faces) + "  failed " + std::to_string(failed);
  }
};

StatusOr<DetectResult> Covered(const Status& written, const DetectResult& result) {
  if (!written.ok()) return written;
  return result;
}

// A picture's JSON line: detect's, with the output written, or the error.
void WriteLine(std::ostream* lines, const std::string& path, const StatusOr<DetectResult>& r,
               const fs::path& out) {
  if (lines == nullptr) return;
  nlohmann::json line = r.ok() ? ResultToJson(*r, false) : nlohmann::json::object();
  if (!r.ok()) line["error"] = ErrorToJson(r.status())["error"];
  line["path"] = path;
  if (r.ok()) line["output"] = out.string();
  *lines << ToJsonLine(line) << "\n";
}

// A video's last JSON line (after its frames' lines): what was written, or the error.
void WriteVideoLine(std::ostream* lines, const std::string& path,
                    const StatusOr<VideoAnonymizeReport>& r, const fs::path& out) {
  if (lines == nullptr) return;
  nlohmann::json line = {{"path", path}};
  if (r.ok()) {
    line["output"] = out.string();
    line["frames"] = r->frames;
    line["detected_frames"] = r->detected;
    line["faces"] = r->faces;
  } else {
    line["error"] = ErrorToJson(r.status())["error"];
  }
  *lines << ToJsonLine(line) << "\n";
}

void PrintVideoSummary(const std::string& in, const std::string& out,
                       const VideoAnonymizeReport& r) {
  const double per_frame_ms = r.frames > 0 ? 1000.0 / static_cast<double>(r.frames) : 0;
  std::fprintf(stderr,
               "%s -> %s: %lld frames (%lld detected), %lld faces covered in %.1f s (%.1f "
               "frames/s); ms a frame: decode %.2f, convert %.2f, waiting for detection %.2f, "
               "cover %.2f, encode %.2f\n",
               in.c_str(), out.c_str(), static_cast<long long>(r.frames),
               static_cast<long long>(r.detected), static_cast<long long>(r.faces), r.seconds,
               r.seconds > 0 ? static_cast<double>(r.frames) / r.seconds : 0.0,
               r.decode_s * per_frame_ms, r.convert_s * per_frame_ms,
               r.detect_wait_s * per_frame_ms, r.cover_s * per_frame_ms, r.encode_s * per_frame_ms);
}

int RunAnonymize(const AnonymizeFlags& flags) {
  const StatusOr<image::AnonymizeOptions> anonymize = ToAnonymizeOptions(flags);
  if (!anonymize.ok()) return PrintError(anonymize.status().message(), kExitUsage);
  const std::vector<InputFile> inputs = CollectInputFiles(flags.inputs, /*with_videos=*/true);
  OutputPaths paths(flags, inputs);
  std::vector<fs::path> outputs;
  if (const Status checked = CheckOutputs(flags, inputs, paths, &outputs); !checked.ok()) {
    return PrintError(checked.message(), kExitUsage);
  }
  std::optional<OutputFile> json;
  if (!flags.json.empty()) {
    json.emplace(flags.json == "-" ? "" : flags.json);
    if (!json->ok()) return kExitUsage;
  }
  DetectorOptions options = BatchJobOptions(flags.options, flags.job);
  const int window = flags.job.batch_size * 3;
  options.queue_capacity = std::max<int64_t>(options.queue_capacity, window);
  auto opened = api::DetectorBuilder::Open(options, ImageJobOptionNames());
  if (!opened.ok()) {
    return PrintError(
        opened.status().message(),
        opened.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFatal);
  }
  Detector& detector = **opened;

  const bool tty = isatty(STDERR_FILENO) && !flags.quiet;
  std::ostream* lines = json ? &json->stream() : nullptr;
  std::vector<InputFile> pictures;
  std::vector<fs::path> picture_outputs;  // pictures[i]'s
  std::vector<size_t> videos;             // indices into inputs
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (IsVideoInput(inputs[i].path)) {
      videos.push_back(i);
    } else {
      pictures.push_back(inputs[i]);
      picture_outputs.push_back(outputs[i]);
    }
  }
  Tally tally;
  if (!pictures.empty()) {
    ProgressBar bar(static_cast<int64_t>(pictures.size()), "img", tty);
    size_t next = 0;
    DetectInOrder(detector, pictures, window,
                  [&](const std::string& path, StatusOr<DetectResult> r) {
                    const fs::path& out = picture_outputs[next++];  // results come in order
                    if (r.ok())
                      r = Covered(WriteAnonymized(path, *r, out, *anonymize, flags.quality), *r);
                    tally.Add(path, r.ok() ? r->faces.size() : 0, r.status(), tty);
                    WriteLine(lines, path, r, out);
                    bar.Update(tally.done, tally.Text());
                  });
    bar.Finish(tally.Text());
  }
  VideoAnonymizeOptions video;
  video.cover = *anonymize;
  video.detect_fps = flags.detect_fps;
  video.track = !flags.no_track;
  for (size_t i : videos) {
    const std::string& path = inputs[i].path;
    std::optional<ProgressBar> bar;  // once the video's frame count is known
    StatusOr<VideoAnonymizeReport> r = AnonymizeVideo(
        detector, path, outputs[i].string(), video, lines, [&](int64_t frames, int64_t expected) {
          if (!bar) bar.emplace(expected, "frames", tty && expected > 0);
          bar->Update(frames, path);
        });
    if (bar) bar->Finish(path);
    tally.Add(path, r.ok() ? r->faces : 0, r.status(), tty);
    WriteVideoLine(lines, path, r, outputs[i]);
    if (r.ok() && !flags.quiet) PrintVideoSummary(path, outputs[i].string(), *r);
  }
  detector.Shutdown();
  if (!flags.quiet) {
    std::fprintf(stderr, "%lld inputs, %lld faces covered, %lld failed\n",
                 static_cast<long long>(tally.done), static_cast<long long>(tally.faces),
                 static_cast<long long>(tally.failed));
  }
  if (json) {
    json->stream().flush();
    if (!json->stream()) return PrintError("writing --json " + flags.json + " failed", kExitFatal);
  }
  return tally.failed > 0 ? kExitSomeFailed : kExitOk;
}

}  // namespace

CommandRunner RegisterAnonymizeCommand(CLI::App& app) {
  auto flags = std::make_shared<AnonymizeFlags>();
  app.add_option("inputs", flags->inputs,
                 "Pictures, videos (.mp4 .mov .mkv .m4v .avi .webm .ts) and folders (searched "
                 "recursively)")
      ->required();
  app.add_option("-o,--output", flags->output,
                 "Where the anonymized pictures go: a file for one picture (its extension picks "
                 "the format: .jpg, .png, .webp), else a folder (each input's format kept; for "
                 "one picture, an existing folder or a path ending in /)")
      ->required();
  app.add_option("--method", flags->method,
                 "How faces are hidden: blur (strong, relative to the face's size), pixelate "
                 "(8 cells across the face), fill (black)")
      ->check(CLI::IsMember({"blur", "pixelate", "fill"}))
      ->capture_default_str();
  app.add_option("--shape", flags->shape, "The covered shape: ellipse or box")
      ->check(CLI::IsMember({"ellipse", "box"}))
      ->capture_default_str();
  app.add_option("--box-scale", flags->box_scale,
                 "The covered region: each face's box scaled by this about its centre "
                 "(forehead, hair and ears identify too)")
      ->check(CLI::Range(1.0, 3.0))
      ->capture_default_str();
  app.add_option("--quality", flags->quality, "JPEG and WebP quality of the outputs")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  app.add_option("--json", flags->json,
                 "Write one JSON line per input of the faces covered and the output written "
                 "(\"-\": stdout)");
  app.add_option("--detect-fps", flags->detect_fps,
                 "Videos: detect at most this many frames per second of video; the tracker "
                 "covers the frames between at the faces' predicted places (0 = every frame)")
      ->check(CLI::Range(0.0, 1000.0))
      ->capture_default_str();
  app.add_flag("--no-track", flags->no_track,
               "Videos: cover only the faces found on each frame (no tracker carrying a face "
               "over the frames the detector misses it on; needs --detect-fps 0)");
  app.add_option("--batch-size", flags->job.batch_size, "Pictures per batch")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--decode-threads", flags->options.decode_threads,
                 "Threads reading and decoding pictures ahead of the engine (0 = half the cores, "
                 "at least 1)")
      ->check(CLI::Range(0, 256))
      ->capture_default_str();
  AddOptionFlag(app, flags->options, "--max-pixels");
  app.add_flag("-q,--quiet", flags->quiet, "No progress bar and no summary on stderr");
  AddOptionFlags(app, flags->options, {opt::Group::kModel, opt::Group::kInput});
  return [flags] { return RunAnonymize(*flags); };
}

}  // namespace mogserve::cli
