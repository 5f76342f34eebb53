// `mogserve anonymize` on a video file end to end: the real binary and the embedded SSD on the
// test clip with an audio track (make_clip.sh's clip_audio.mp4), the output checked with ffprobe
// and ffmpeg, and its covering checked against `detect-video` on every frame of the input.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>

#include "clips.h"
#include "e2e_support.h"
#include "image/anonymize.h"
#include "image/decode.h"

namespace mogserve::e2e {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using video::testing::ClipPath;

// A whole clip detected (or rewritten) per run: ten seconds alone, far more on a machine busy
// with the other tests (a run beside the TSan build took over two minutes).
ProcessOptions Patient() {
  ProcessOptions o;
  o.timeout = std::chrono::minutes(10);
  return o;
}

std::string Ffprobe() {
  std::string ffmpeg = MOGSERVE_FFMPEG;
  return ffmpeg.substr(0, ffmpeg.size() - 6) + "ffprobe";  // beside ffmpeg
}

// One stream's packets (or frames) as ffprobe lists them: "pts_time,size" lines (empty ones
// left out).
std::vector<std::string> Probe(const std::string& file, const std::string& stream,
                               const std::string& entries, const std::string& what = "packet") {
  const ProcessResult r =
      RunProcess(Ffprobe(), {"-v", "error", "-select_streams", stream, "-show_entries",
                             what + "=" + entries, "-of", "csv=p=0", file});
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  std::vector<std::string> lines = SplitLines(r.out);
  std::erase(lines, std::string());  // the empty line ffprobe's csv writes for side data
  return lines;
}

// Per frame, the faces `detect-video` finds on every frame of the input (the SSD, threshold
// 0.5): what a covering must hide.
std::map<int, std::vector<Detection>> ReferenceFaces() {
  const ProcessResult r = RunMogserve({"detect-video", "--model-dir", TestModelDir(), "-q",
                                       "--landmarks", "model", ClipPath("clip_audio.mp4")},
                                      Patient());
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  std::map<int, std::vector<Detection>> faces;
  for (const json& line : ParseJsonLines(r.out)) faces[line.at("frame").get<int>()] = FacesOf(line);
  return faces;
}

// The share of reference faces covered (a covered face with IoU >= 0.5), and the frames where
// one was not.
std::pair<double, std::vector<int>> Coverage(const std::map<int, std::vector<Detection>>& want,
                                             const std::map<int, std::vector<Detection>>& got) {
  int64_t faces = 0, covered = 0;
  std::vector<int> missed;
  for (const auto& [frame, list] : want) {
    const auto it = got.find(frame);
    for (const Detection& f : list) {
      ++faces;
      bool hit = false;
      for (const Detection& g : it == got.end() ? std::vector<Detection>{} : it->second) {
        hit = hit || IoU(f, g) >= 0.5f;
      }
      covered += hit ? 1 : 0;
      if (!hit && (missed.empty() || missed.back() != frame)) missed.push_back(frame);
    }
  }
  return {faces > 0 ? static_cast<double>(covered) / faces : 0, missed};
}

struct AnonymizeRun {
  ProcessResult process;
  std::map<int, std::vector<Detection>> covered;  // the JSON lines' faces per frame
  json summary;                                   // the video's last line
};

AnonymizeRun Anonymize(const TempDir& dir, const std::string& out, std::vector<std::string> flags) {
  std::vector<std::string> args = {"anonymize",
                                   "--model-dir",
                                   TestModelDir(),
                                   "-q",
                                   "--landmarks",
                                   "model",
                                   ClipPath("clip_audio.mp4"),
                                   "-o",
                                   dir / out,
                                   "--json",
                                   dir / (out + ".jsonl")};
  args.insert(args.end(), flags.begin(), flags.end());
  AnonymizeRun run{RunMogserve(args, Patient()), {}, {}};
  for (const json& line : ParseJsonLines(ReadText(dir.path() / (out + ".jsonl")))) {
    if (line.contains("frame")) {
      run.covered[line.at("frame").get<int>()] = FacesOf(line);
    } else {
      run.summary = line;
    }
  }
  return run;
}

// Detecting every frame: every face the detector finds on a frame is covered on that frame (a
// missed one fails), every frame is written with its own timestamp, and the audio packets are the
// input's, byte for byte in size and time; the title stays.
TEST(AnonymizeVideo, EveryFrameKeepsItsTimeTheAudioAndEveryFaceIsCovered) {
  TempDir dir;
  const AnonymizeRun run = Anonymize(dir, "out.mp4", {});
  ASSERT_EQ(run.process.exit_code, 0) << run.process.Describe();
  EXPECT_EQ(run.summary.value("frames", 0), video::testing::kClipFrames) << run.summary.dump();
  EXPECT_EQ(run.summary.value("detected_frames", 0), video::testing::kClipFrames);
  const std::string in = ClipPath("clip_audio.mp4"), out = dir / "out.mp4";
  EXPECT_EQ(Probe(out, "v:0", "pts_time", "frame"), Probe(in, "v:0", "pts_time", "frame"));
  EXPECT_EQ(Probe(out, "v:0", "pts_time", "frame").size(), 250u);
  const std::vector<std::string> audio = Probe(in, "a:0", "pts_time,dts_time,size");
  EXPECT_GT(audio.size(), 400u);
  EXPECT_EQ(Probe(out, "a:0", "pts_time,dts_time,size"), audio);
  const ProcessResult title = RunProcess(
      Ffprobe(), {"-v", "error", "-show_entries", "format_tags=title", "-of", "csv=p=0", out});
  EXPECT_EQ(title.out, "mogserve test clip\n");
  const auto [coverage, missed] = Coverage(ReferenceFaces(), run.covered);
  EXPECT_EQ(coverage, 1.0) << "frames with a face left bare: " << json(missed).dump();
}

// --detect-fps 5: the detector on one frame in five, the tracker covering the frames between at
// the faces' predicted places. The share of the faces detect-video finds on every frame that
// are covered is printed and must reach 95 % (the bar for tracking between detections).
TEST(AnonymizeVideo, DetectingFiveFramesASecondStillCoversTheFaces) {
  TempDir dir;
  const AnonymizeRun run = Anonymize(dir, "out.mkv", {"--detect-fps", "5", "--method", "pixelate"});
  ASSERT_EQ(run.process.exit_code, 0) << run.process.Describe();
  EXPECT_EQ(run.summary.value("frames", 0), video::testing::kClipFrames);
  EXPECT_EQ(run.summary.value("detected_frames", 0), 50);
  EXPECT_EQ(Probe(dir / "out.mkv", "v:0", "pts_time", "frame").size(), 250u);
  const auto [coverage, missed] = Coverage(ReferenceFaces(), run.covered);
  std::printf(
      "[ coverage ] --detect-fps 5: %.4f of the faces found on every frame covered; "
      "frames with one bare: %s\n",
      coverage, json(missed).dump().c_str());
  EXPECT_GE(coverage, 0.95);
}

// Outside the covered regions a frame is the input's up to re-encoding (H.264 at crf 18): PSNR
// over those pixels, frames decoded by ffmpeg as PNG.
TEST(AnonymizeVideo, OutsideTheFacesTheFrameIsTheInputsUpToReencoding) {
  TempDir dir;
  const AnonymizeRun run = Anonymize(dir, "out.mov", {});
  ASSERT_EQ(run.process.exit_code, 0) << run.process.Describe();
  for (int frame : {12, 137, 230}) {
    SCOPED_TRACE("frame " + std::to_string(frame));
    const auto png = [&](const std::string& file, const std::string& name) {
      const ProcessResult r =
          RunProcess(MOGSERVE_FFMPEG, {"-nostdin", "-v", "error", "-y", "-i", file, "-vf",
                                       "select=eq(n\\," + std::to_string(frame) + ")", "-frames:v",
                                       "1", dir / name});
      EXPECT_EQ(r.exit_code, 0) << r.Describe();
      auto decoded = image::Decode(ReadBytes(dir.path() / name));
      EXPECT_TRUE(decoded.ok());
      return decoded.ok() ? std::move(decoded->image) : image::Image{};
    };
    const image::Image a = png(ClipPath("clip_audio.mp4"), "in.png");
    const image::Image b = png(dir / "out.mov", "out.png");
    ASSERT_EQ(a.width, b.width);
    std::vector<image::CoverRegion> regions;
    for (const Detection& f : run.covered.at(frame)) {
      regions.push_back(image::RegionOf(f, 1.3f, a.width, a.height));
    }
    double sq = 0;
    int64_t n = 0, changed = 0;
    for (int y = 0; y < a.height; ++y) {
      for (int x = 0; x < a.width; ++x) {
        bool in = false;
        for (const auto& g : regions)
          in = in || image::Covers(g, image::AnonymizeShape::kBox, x, y);
        for (int c = 0; c < 3; ++c) {
          const double d = static_cast<double>(a.pixel(x, y)[c]) - b.pixel(x, y)[c];
          if (in) {
            changed += std::abs(d) > 12 ? 1 : 0;
          } else {
            sq += d * d;
            ++n;
          }
        }
      }
    }
    const double psnr = 10 * std::log10(255.0 * 255 * n / sq);
    std::printf("[ psnr ] frame %d: %.2f dB outside the %zu covered faces\n", frame, psnr,
                regions.size());
    EXPECT_GT(psnr, 36);
    if (!regions.empty()) {
      EXPECT_GT(changed, 0) << "the faces look untouched";
    }
  }
}

// Failures leave nothing behind: an output extension no H.264 container has is refused before
// work (exit 2, no file); an input that is not a video fails alone (exit 1), with no output file
// and no temporary left in the folder.
TEST(AnonymizeVideo, BadOutputsAndBrokenVideosLeaveNoFile) {
  TempDir dir;
  ProcessResult r = RunMogserve({"anonymize", "--model-dir", TestModelDir(), "-q",
                                 ClipPath("clip_audio.mp4"), "-o", dir / "out.avi"});
  EXPECT_EQ(r.exit_code, 2) << r.Describe();
  EXPECT_TRUE(Contains(r.err, "is a video; it is written as .mp4, .mov or .mkv")) << r.err;
  const fs::path in = dir.path() / "in";
  fs::create_directories(in);
  std::vector<uint8_t> cut = ReadBytes(ClipPath("clip_audio.mp4"));
  cut.resize(2000);  // the header only
  WriteBytes(in / "broken.mp4", cut);
  r = RunMogserve(
      {"anonymize", "--model-dir", TestModelDir(), "-q", in.string(), "-o", dir / "out"});
  EXPECT_EQ(r.exit_code, 1) << r.Describe();
  EXPECT_TRUE(Contains(r.err, "broken.mp4")) << r.err;
  int files = 0;
  if (fs::exists(dir.path() / "out")) {
    for (const auto& e : fs::recursive_directory_iterator(dir.path() / "out"))
      files += e.is_regular_file();
  }
  EXPECT_EQ(files, 0);
}

}  // namespace
}  // namespace mogserve::e2e
