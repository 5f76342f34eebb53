// End-to-end tests of `mogserve anonymize` on pictures: the real binary and the embedded SSD on
// the real photos of tests/data, each output read back with the project's decoder and searched
// again by `mogserve detect`.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>

#include "e2e_support.h"
#include "image/anonymize.h"
#include "image/decode.h"

namespace mogserve::e2e {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kPhotoCount = 10;
constexpr float kBoxScale = 1.3f;  // anonymize's default --box-scale

ProcessResult RunAnonymize(std::vector<std::string> args) {
  args.insert(args.begin(), {"anonymize", "--model-dir", TestModelDir(), "-q"});
  return RunMogserve(args);
}

image::DecodedImage DecodeFile(const fs::path& path) {
  auto decoded = image::Decode(ReadBytes(path));
  EXPECT_TRUE(decoded.ok()) << path << ": " << decoded.status().ToString();
  return decoded.ok() ? std::move(*decoded) : image::DecodedImage{};
}

// PSNR in dB of `b` against `a` over the pixels no face of `faces` covers (box shape: a bound of
// the ellipse), and whether those pixels are all equal. Both pictures the same size.
std::pair<double, bool> UncoveredPsnr(const image::Image& a, const image::Image& b,
                                      const std::vector<Detection>& faces) {
  double sq = 0;
  int64_t n = 0;
  bool equal = true;
  std::vector<image::CoverRegion> regions;
  for (const Detection& f : faces)
    regions.push_back(image::RegionOf(f, kBoxScale, a.width, a.height));
  for (int y = 0; y < a.height; ++y) {
    for (int x = 0; x < a.width; ++x) {
      bool covered = false;
      for (const auto& g : regions)
        covered = covered || image::Covers(g, image::AnonymizeShape::kBox, x, y);
      if (covered) continue;
      for (int c = 0; c < 3; ++c) {
        const double d = static_cast<double>(a.pixel(x, y)[c]) - b.pixel(x, y)[c];
        sq += d * d;
        equal = equal && d == 0;
      }
      ++n;
    }
  }
  const double mse = sq / (3.0 * static_cast<double>(n));
  return {mse > 0 ? 10 * std::log10(255.0 * 255.0 / mse) : 99.0, equal};
}

// A folder in, a folder out: every photo written under its own name and format, the same size;
// the detector finds none of the faces it found before (none of its faces above 0.5 overlaps one
// of them), and outside the covered regions the picture is the original's: PNG exactly, JPEG up to
// re-encoding at quality 95.
TEST(AnonymizeE2E, AFolderComesOutWithEveryFaceHiddenAndTheRestKept) {
  TempDir dir;
  const fs::path out = dir.path() / "out";
  const ProcessResult r =
      RunAnonymize({PhotosDir().string(), "-o", out.string(), "--json", dir / "covered.jsonl"});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  const std::vector<json> covered = ParseJsonLines(ReadText(dir.path() / "covered.jsonl"));
  ASSERT_EQ(covered.size(), static_cast<size_t>(kPhotoCount));
  const ProcessResult again = RunDetect({out.string()});
  ASSERT_EQ(again.exit_code, 0) << again.Describe();
  std::map<std::string, std::vector<Detection>> found_after;
  for (const json& line : ParseJsonLines(again.out)) {
    found_after[fs::path(line.at("path").get<std::string>()).filename().string()] = FacesOf(line);
  }
  int faces = 0;
  for (const json& line : covered) {
    const fs::path input = line.at("path").get<std::string>();
    SCOPED_TRACE(input.string());
    const fs::path output = line.at("output").get<std::string>();
    EXPECT_EQ(output, out / input.filename());
    const image::DecodedImage before = DecodeFile(input), after = DecodeFile(output);
    EXPECT_EQ(after.format, before.format);
    ASSERT_EQ(after.width, before.width);
    ASSERT_EQ(after.height, before.height);
    const std::vector<Detection> hidden = FacesOf(line);
    faces += static_cast<int>(hidden.size());
    for (const Detection& h : hidden) {
      for (const Detection& f : found_after[input.filename().string()]) {
        EXPECT_LT(IoU(h, f), 0.3) << "a face at " << h.x1 << "," << h.y1 << " is still found";
      }
    }
    const auto [psnr, equal] = UncoveredPsnr(before.image, after.image, hidden);
    if (before.format == image::ImageFormat::kPng) {
      EXPECT_TRUE(equal) << "PSNR " << psnr;
    } else {
      EXPECT_GT(psnr, 35) << "outside the faces";
    }
  }
  EXPECT_GT(faces, 20);
}

// One file to one file: the format is the output's extension; pixelate and fill cover the face.
TEST(AnonymizeE2E, OneFileBecomesTheFileNamedInTheFormatItsExtensionNames) {
  TempDir dir;
  for (const std::string method : {"pixelate", "fill"}) {
    SCOPED_TRACE(method);
    const std::string out = dir / (method + ".png");
    const ProcessResult r = RunAnonymize(
        {PhotoPath("grace_hopper.jpg").string(), "-o", out, "--method", method, "--json", "-"});
    ASSERT_EQ(r.exit_code, 0) << r.Describe();
    const std::vector<json> lines = ParseJsonLines(r.out);
    ASSERT_EQ(lines.size(), 1u);
    const std::vector<Detection> faces = FacesOf(lines[0]);
    ASSERT_EQ(faces.size(), 1u);
    const image::DecodedImage after = DecodeFile(out);
    EXPECT_EQ(after.format, image::ImageFormat::kPng);
    const ProcessResult again = RunDetect({out});
    ASSERT_EQ(again.exit_code, 0) << again.Describe();
    EXPECT_EQ(ParseJsonLines(again.out).at(0).at("faces").size(), 0u) << again.out;
    const Detection& f = faces[0];
    const uint8_t* centre =
        after.image.pixel(static_cast<int>((f.x1 + f.x2) / 2), static_cast<int>((f.y1 + f.y2) / 2));
    if (method == "fill") {
      EXPECT_EQ(centre[0] + centre[1] + centre[2], 0);
    }
  }
}

// Refused before any model loads, nothing written: an output format no extension names, an
// output that is the input, several inputs into one file.
TEST(AnonymizeE2E, BadOutputsAreRefusedAndTheInputIsNeverOverwritten) {
  TempDir dir;
  const std::string photo = dir / "photo.jpg";
  fs::copy_file(PhotoPath("grace_hopper.jpg"), photo);
  const std::vector<uint8_t> original = ReadBytes(photo);

  ProcessResult r = RunAnonymize({photo, "-o", dir / "photo.gif"});
  EXPECT_EQ(r.exit_code, 2) << r.Describe();
  EXPECT_TRUE(Contains(r.err, "photo.gif: unknown picture format; the extension names it: .jpg"))
      << r.err;
  EXPECT_FALSE(fs::exists(dir / "photo.gif"));

  r = RunAnonymize({photo, "-o", photo});
  EXPECT_EQ(r.exit_code, 2) << r.Describe();
  EXPECT_TRUE(Contains(r.err, "never overwrite their originals")) << r.err;
  EXPECT_EQ(ReadBytes(photo), original);

  WriteBytes(dir.path() / "taken.txt", {'x'});
  r = RunAnonymize({photo, PhotoPath("coffee.png").string(), "-o", dir / "taken.txt"});
  EXPECT_EQ(r.exit_code, 2) << r.Describe();
  EXPECT_TRUE(Contains(r.err, "need a folder, and this is a file")) << r.err;

  r = RunAnonymize({photo, "-o", dir / "x.jpg", "--method", "smudge"});
  EXPECT_EQ(r.exit_code, 2) << r.Describe();
  EXPECT_TRUE(Contains(r.err, "--method: smudge not in {blur,pixelate,fill}")) << r.err;
}

// A picture that cannot be read fails alone (exit 1, its error in the JSON lines, no output file
// for it, not even a partial one); the others are written.
TEST(AnonymizeE2E, ABrokenPictureFailsAloneAndLeavesNoOutput) {
  TempDir dir;
  const fs::path in = dir.path() / "in";
  fs::create_directories(in);
  fs::copy_file(PhotoPath("grace_hopper.jpg"), in / "a.jpg");
  std::vector<uint8_t> cut = ReadBytes(PhotoPath("sample1.jpg"));
  cut.resize(cut.size() / 3);
  WriteBytes(in / "b.jpg", cut);
  const ProcessResult r =
      RunAnonymize({in.string(), "-o", dir / "out", "--json", dir / "covered.jsonl"});
  EXPECT_EQ(r.exit_code, 1) << r.Describe();
  EXPECT_TRUE(Contains(r.err, "b.jpg")) << r.err;
  const std::vector<json> lines = ParseJsonLines(ReadText(dir.path() / "covered.jsonl"));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_TRUE(lines[0].contains("output")) << lines[0].dump();
  EXPECT_TRUE(lines[1].contains("error")) << lines[1].dump();
  EXPECT_FALSE(lines[1].contains("output")) << lines[1].dump();
  EXPECT_TRUE(fs::exists(dir.path() / "out" / "a.jpg"));
  int files = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir.path() / "out"))
    files += e.is_regular_file();
  EXPECT_EQ(files, 1);
}

}  // namespace
}  // namespace mogserve::e2e
