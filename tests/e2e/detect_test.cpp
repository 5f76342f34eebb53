// End-to-end tests of `mogserve detect`: the real binary over its command line, on the real
// photos in tests/data, checked against tests/data/ground_truth.json.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <random>

#include "e2e_support.h"
#include "image/decode.h"
#include "image/encode.h"

namespace mogserve::e2e {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kPhotoCount = 10;

struct Box {
  double x1, y1, x2, y2;
};

Box BoxOf(const json& face) {
  const json& b = face.at("box");
  return {b.at(0).get<double>(), b.at(1).get<double>(), b.at(2).get<double>(),
          b.at(3).get<double>()};
}

double Iou(const Box& a, const Box& b) {
  const double w = std::max(0.0, std::min(a.x2, b.x2) - std::max(a.x1, b.x1));
  const double h = std::max(0.0, std::min(a.y2, b.y2) - std::max(a.y1, b.y1));
  const double inter = w * h;
  const double uni = (a.x2 - a.x1) * (a.y2 - a.y1) + (b.x2 - b.x1) * (b.y2 - b.y1) - inter;
  return uni > 0 ? inter / uni : 0.0;
}

// tests/data/ground_truth.json without its comment: file name -> boxes.
std::map<std::string, std::vector<Box>> LoadGroundTruth() {
  const json gt = json::parse(ReadText(TestDataDir() / "ground_truth.json"));
  std::map<std::string, std::vector<Box>> out;
  for (const auto& [name, boxes] : gt.items()) {
    if (name.front() == '_') continue;
    std::vector<Box>& v = out[name];
    for (const json& b : boxes) v.push_back(BoxOf(json{{"box", b}}));
  }
  return out;
}

// The size of the upright picture, as the project's decoder sees it.
std::pair<int, int> ImageSize(const fs::path& path) {
  const std::vector<uint8_t> bytes = ReadBytes(path);
  auto decoded = image::Decode(bytes);
  EXPECT_TRUE(decoded.ok()) << path << ": " << decoded.status().ToString();
  if (!decoded.ok()) return {0, 0};
  return {decoded->width, decoded->height};
}

// A result line is well-formed: path, width, height, faces; every face a box inside the image
// and a score above `min_score`.
void ExpectWellFormedResult(const json& line, double min_score = 0.5) {
  SCOPED_TRACE(line.dump());
  for (const char* key : {"path", "width", "height", "faces"}) {
    EXPECT_TRUE(line.contains(key)) << "missing key " << key;
  }
  EXPECT_FALSE(line.contains("error"));
  if (!line.contains("faces") || !line.contains("width") || !line.contains("height")) return;
  const double width = line["width"].get<double>();
  const double height = line["height"].get<double>();
  ASSERT_TRUE(line["faces"].is_array());
  for (const json& face : line["faces"]) {
    ASSERT_TRUE(face.at("box").is_array());
    ASSERT_EQ(face["box"].size(), 4u);
    const Box b = BoxOf(face);
    EXPECT_LE(0.0, b.x1);
    EXPECT_LT(b.x1, b.x2);
    EXPECT_LE(b.x2, width);
    EXPECT_LE(0.0, b.y1);
    EXPECT_LT(b.y1, b.y2);
    EXPECT_LE(b.y2, height);
    const double score = face.at("score").get<double>();
    EXPECT_GT(score, min_score);
    EXPECT_LE(score, 1.0);
  }
}

// Results of one run keyed by file name (the last path component).
std::map<std::string, json> ByFileName(const std::vector<json>& lines) {
  std::map<std::string, json> out;
  for (const json& line : lines)
    out[fs::path(line.at("path").get<std::string>()).filename()] = line;
  return out;
}

bool StartsWith(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// The summary line ("N images, M faces, K failed in ...") of a detect run's stderr.
std::string SummaryLine(const std::string& err) {
  for (const std::string& line : SplitLines(err)) {
    if (line.find(" images, ") != std::string::npos) return line;
  }
  return "";
}

TEST(DetectE2E, PhotosFolderMatchesGroundTruth) {
  const ProcessResult r = RunDetect({PhotosDir().string()});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  const std::vector<json> lines = ParseJsonLines(r.out);
  ASSERT_EQ(lines.size(), static_cast<size_t>(kPhotoCount)) << r.out;

  std::vector<std::string> paths;
  for (const json& line : lines) {
    ExpectWellFormedResult(line);
    paths.push_back(line.value("path", ""));
  }
  EXPECT_TRUE(std::is_sorted(paths.begin(), paths.end()));

  const auto gt = LoadGroundTruth();
  ASSERT_EQ(gt.size(), static_cast<size_t>(kPhotoCount));
  const auto results = ByFileName(lines);
  int total_faces = 0;
  for (const auto& [name, boxes] : gt) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(results.count(name)) << "no result for " << name;
    const json& line = results.at(name);
    EXPECT_EQ(line["path"], PhotoPath(name).string());
    const auto [width, height] = ImageSize(PhotoPath(name));
    EXPECT_EQ(line["width"], width);
    EXPECT_EQ(line["height"], height);
    ASSERT_EQ(line["faces"].size(), boxes.size()) << line.dump();
    total_faces += static_cast<int>(boxes.size());
    // Every true face is found (IoU >= 0.5); with equal counts, nothing else is reported.
    for (const Box& truth : boxes) {
      double best = 0;
      for (const json& face : line["faces"]) best = std::max(best, Iou(truth, BoxOf(face)));
      EXPECT_GE(best, 0.5) << "true face [" << truth.x1 << "," << truth.y1 << "," << truth.x2 << ","
                           << truth.y2 << "] not found";
    }
  }
  EXPECT_EQ(total_faces, 25);
  // Sizes known independently of the decoder (the photos' own headers).
  EXPECT_EQ(results.at("sample1.jpg")["width"], 1920);
  EXPECT_EQ(results.at("sample1.jpg")["height"], 1280);
  EXPECT_EQ(results.at("astronaut.png")["width"], 512);
  EXPECT_EQ(results.at("astronaut.png")["height"], 512);

  EXPECT_TRUE(StartsWith(SummaryLine(r.err), "10 images, 25 faces, 0 failed")) << r.err;
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << "progress bar drawn on a non-tty stderr";
  EXPECT_EQ(r.err.find("error"), std::string::npos) << r.err;
}

TEST(DetectE2E, FoldersAreSearchedRecursivelyForImageExtensionsOnly) {
  TempDir tmp;
  const fs::path in = tmp.path() / "in";
  WriteBytes(in / "a.png", ReadBytes(PhotoPath("astronaut.png")));
  // A folder whose name looks like an image: it is searched, not read as a file.
  WriteBytes(in / "album.jpeg" / "inner.png", ReadBytes(PhotoPath("camera.png")));
  WriteBytes(in / "sub" / "deeper" / "B.JPG", ReadBytes(PhotoPath("grace_hopper.jpg")));
  WriteBytes(in / "notes.txt", {'h', 'i', '\n'});
  WriteBytes(in / "sub" / "anim.gif", ReadBytes(PhotoPath("astronaut.png")));  // a PNG inside
  WriteBytes(in / "sub" / "deeper" / "jpg", ReadBytes(PhotoPath("astronaut.png")));
  const fs::path annotated = tmp.path() / "annotated";

  // grace_hopper.jpg has exactly 512x600 = 307200 pixels: at the limit is still allowed.
  const ProcessResult r =
      RunDetect({in.string(), "--annotate", annotated.string(), "--max-pixels", "307200"});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  const std::vector<json> lines = ParseJsonLines(r.out);
  const std::vector<std::string> expected = {(in / "a.png").string(),
                                             (in / "album.jpeg" / "inner.png").string(),
                                             (in / "sub" / "deeper" / "B.JPG").string()};
  ASSERT_EQ(lines.size(), expected.size()) << r.out;
  for (size_t i = 0; i < lines.size(); ++i) {
    ExpectWellFormedResult(lines[i]);
    EXPECT_EQ(lines[i].value("path", ""), expected[i]);
    EXPECT_EQ(lines[i]["faces"].size(), 1u) << lines[i].dump();
  }
  EXPECT_TRUE(StartsWith(SummaryLine(r.err), "3 images, 3 faces, 0 failed")) << r.err;
  EXPECT_EQ(r.err.find("error"), std::string::npos) << "skipped files must be silent: " << r.err;

  // --annotate mirrors the folder structure, with .jpg names.
  std::vector<std::string> written;
  for (const auto& entry : fs::recursive_directory_iterator(annotated)) {
    if (entry.is_regular_file()) written.push_back(fs::relative(entry.path(), annotated).string());
  }
  std::sort(written.begin(), written.end());
  EXPECT_EQ(written,
            (std::vector<std::string>{"a.jpg", "album.jpeg/inner.jpg", "sub/deeper/B.jpg"}));
}

// The bytes of `jpeg` with the size in its SOF header replaced; empty if there is no SOF.
std::vector<uint8_t> PatchJpegSize(std::vector<uint8_t> jpeg, int width, int height) {
  size_t i = 2;  // after SOI
  while (i + 9 <= jpeg.size() && jpeg[i] == 0xFF) {
    const uint8_t marker = jpeg[i + 1];
    const bool is_sof =
        marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
    if (is_sof) {
      jpeg[i + 5] = static_cast<uint8_t>(height >> 8);
      jpeg[i + 6] = static_cast<uint8_t>(height & 0xFF);
      jpeg[i + 7] = static_cast<uint8_t>(width >> 8);
      jpeg[i + 8] = static_cast<uint8_t>(width & 0xFF);
      return jpeg;
    }
    i += 2 + ((static_cast<size_t>(jpeg[i + 2]) << 8) | jpeg[i + 3]);
  }
  return {};
}

std::vector<uint8_t> RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> out(n);
  for (uint8_t& b : out) b = static_cast<uint8_t>(rng());
  return out;
}

struct BadInput {
  std::string name;
  std::vector<uint8_t> bytes;
  std::string code;                        // expected error code; empty = must succeed
  std::vector<std::string> message_parts;  // substrings the message must contain
};

TEST(DetectE2E, BadInputsNamedExplicitlyAreReportedAndTheJobGoesOn) {
  TempDir tmp;
  const std::vector<uint8_t> sample1 = ReadBytes(PhotoPath("sample1.jpg"));
  std::vector<uint8_t> random = RandomBytes(4096, 42);
  random[0] = 0x00;  // no magic number of any format
  std::vector<uint8_t> jpeg_garbage = RandomBytes(4096, 7);
  jpeg_garbage[0] = 0xFF, jpeg_garbage[1] = 0xD8, jpeg_garbage[2] = 0xFF, jpeg_garbage[3] = 0xE0;
  image::Image one_pixel(1, 1);
  one_pixel.data = {200, 100, 50};
  auto png = image::EncodePng(one_pixel);
  ASSERT_TRUE(png.ok()) << png.status().ToString();
  const std::vector<uint8_t> huge =
      PatchJpegSize(ReadBytes(PhotoPath("grace_hopper.jpg")), 60000, 60000);
  ASSERT_FALSE(huge.empty()) << "no SOF marker found in grace_hopper.jpg";
  const std::vector<uint8_t> gif = {
      0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 0x01, 0x00, 0x01, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00,
      0x00, 0xFF, 0xFF, 0xFF, 0x21, 0xF9, 0x04, 0x01, 0x00, 0x00, 0x00, 0x00, 0x2C, 0x00, 0x00,
      0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x02, 0x02, 0x44, 0x01, 0x00, 0x3B};

  const std::vector<BadInput> bad = {
      {"empty.jpg", {}, "invalid_data", {"empty"}},
      {"random.jpg", random, "unsupported", {"JPEG", "PNG"}},
      {"jpeg_garbage.jpg", jpeg_garbage, "invalid_data", {"JPEG"}},
      {"truncated.jpg",
       std::vector<uint8_t>(sample1.begin(), sample1.begin() + sample1.size() / 2),
       "invalid_data",
       {"truncated"}},
      {"one_pixel.png", *png, "", {}},
      {"huge.jpg", huge, "resource_exhausted", {"60000", "limit"}},
      {"anim.gif", gif, "unsupported", {"GIF"}},
  };
  std::vector<std::string> args = {PhotoPath("astronaut.png").string()};
  for (const BadInput& b : bad) {
    WriteBytes(tmp.path() / b.name, b.bytes);
    args.push_back(tmp / b.name);
  }
  const std::string missing = tmp / "missing.jpg";
  args.push_back(missing);
  fs::create_directory(tmp.path() / "empty_folder");  // expands to no inputs at all
  args.push_back(tmp / "empty_folder");
  args.push_back(PhotoPath("grace_hopper.jpg").string());

  const ProcessResult r = RunDetect(args);
  ASSERT_EQ(r.exit_code, 1) << r.Describe();
  const std::vector<json> lines = ParseJsonLines(r.out);
  ASSERT_EQ(lines.size(), bad.size() + 3) << r.out;  // + 2 good photos + the missing file

  // One line per input, in input order (the empty folder contributes nothing).
  std::vector<std::string> expected_paths = {PhotoPath("astronaut.png").string()};
  for (const BadInput& b : bad) expected_paths.push_back(tmp / b.name);
  expected_paths.push_back(missing);
  expected_paths.push_back(PhotoPath("grace_hopper.jpg").string());
  for (size_t i = 0; i < lines.size(); ++i)
    EXPECT_EQ(lines[i].value("path", ""), expected_paths[i]);

  for (size_t i : {size_t{0}, lines.size() - 1}) {
    ExpectWellFormedResult(lines[i]);
    EXPECT_EQ(lines[i]["faces"].size(), 1u) << "good photos still get their faces";
  }

  auto expect_error = [&](const json& line, const std::string& code,
                          const std::vector<std::string>& parts) {
    SCOPED_TRACE(line.dump());
    ASSERT_TRUE(line.contains("error"));
    EXPECT_FALSE(line.contains("faces"));
    EXPECT_EQ(line["error"].value("code", ""), code);
    const std::string message = line["error"].value("message", "");
    for (const std::string& part : parts) {
      EXPECT_NE(message.find(part), std::string::npos) << "message lacks '" << part << "'";
    }
    const std::string stderr_line = "error: " + line.value("path", "") + ": " + message + "\n";
    EXPECT_NE(r.err.find(stderr_line), std::string::npos) << "stderr lacks " << stderr_line;
  };
  int failed = 0;
  for (size_t i = 0; i < bad.size(); ++i) {
    const json& line = lines[i + 1];
    if (bad[i].code.empty()) {
      // A 1x1 PNG is a valid image: a result with no faces, not an error.
      ExpectWellFormedResult(line);
      EXPECT_EQ(line.value("width", 0), 1);
      EXPECT_EQ(line.value("height", 0), 1);
      EXPECT_EQ(line.value("faces", json::array()).size(), 0u);
    } else {
      ++failed;
      expect_error(line, bad[i].code, bad[i].message_parts);
    }
  }
  expect_error(lines[bad.size() + 1], "not_found", {"missing.jpg"});
  ++failed;

  size_t error_lines = 0;
  for (const std::string& line : SplitLines(r.err)) error_lines += StartsWith(line, "error: ");
  EXPECT_EQ(error_lines, static_cast<size_t>(failed)) << r.err;
  EXPECT_TRUE(StartsWith(SummaryLine(r.err), std::to_string(lines.size()) + " images, 2 faces, " +
                                                 std::to_string(failed) + " failed"))
      << r.err;
}

// A face's box and score are the same within the tolerances (JSON rounds to 0.01 px, 1e-4).
void ExpectSameFaces(const json& a, const json& b) {
  SCOPED_TRACE(a.dump() + "\nvs\n" + b.dump());
  ASSERT_EQ(a.at("faces").size(), b.at("faces").size());
  for (size_t i = 0; i < a["faces"].size(); ++i) {
    const Box x = BoxOf(a["faces"][i]);
    const Box y = BoxOf(b["faces"][i]);
    EXPECT_NEAR(x.x1, y.x1, 0.5);
    EXPECT_NEAR(x.y1, y.y1, 0.5);
    EXPECT_NEAR(x.x2, y.x2, 0.5);
    EXPECT_NEAR(x.y2, y.y2, 0.5);
    EXPECT_NEAR(a["faces"][i]["score"].get<double>(), b["faces"][i]["score"].get<double>(), 1e-3);
  }
}

// Mean absolute difference of the RGB pixels of `a` and `b` over a column segment.
double MeanColumnDiff(const image::Image& a, const image::Image& b, int x, int y0, int y1) {
  double sum = 0;
  int n = 0;
  for (int y = y0; y <= y1; ++y) {
    for (int c = 0; c < 3; ++c) sum += std::abs(a.pixel(x, y)[c] - b.pixel(x, y)[c]);
    ++n;
  }
  return n > 0 ? sum / (3.0 * n) : 0.0;
}

image::Image DecodeFile(const fs::path& path) {
  auto decoded = image::Decode(ReadBytes(path));
  EXPECT_TRUE(decoded.ok()) << path << ": " << decoded.status().ToString();
  return decoded.ok() ? std::move(decoded->image) : image::Image();
}

// Boxes are drawn: along the left edge of each face box the annotated picture differs strongly
// from the original, while a column that no box touches stays the same up to JPEG noise.
void ExpectBoxesDrawn(const fs::path& original_path, const fs::path& annotated_path,
                      const json& result) {
  SCOPED_TRACE(annotated_path.string());
  ASSERT_TRUE(fs::exists(annotated_path));
  const image::Image original = DecodeFile(original_path);
  const image::Image annotated = DecodeFile(annotated_path);
  ASSERT_EQ(annotated.width, original.width);
  ASSERT_EQ(annotated.height, original.height);
  for (const json& face : result["faces"]) {
    const Box b = BoxOf(face);
    const int x = static_cast<int>(std::lround(b.x1));
    const int h = static_cast<int>(b.y2 - b.y1);
    const int y0 = static_cast<int>(b.y1) + h / 4;
    EXPECT_GT(MeanColumnDiff(original, annotated, x, y0, y0 + h / 2), 40.0)
        << "no box border at x=" << x;
  }
  double min_x1 = original.width;
  for (const json& face : result["faces"]) min_x1 = std::min(min_x1, BoxOf(face).x1);
  const int free_x = static_cast<int>(min_x1) / 2;  // a column left of every box and label
  EXPECT_LT(MeanColumnDiff(original, annotated, free_x, 0, original.height - 1), 8.0)
      << "the annotated picture is not the original at x=" << free_x;
}

TEST(DetectE2E, OptionsChangeTheOutputAsDocumented) {
  TempDir tmp;
  const std::vector<std::string> names = {"astronaut.png", "grace_hopper.jpg", "sample1.jpg",
                                          "sample2.jpg"};
  std::vector<std::string> inputs;
  for (const std::string& n : names) inputs.push_back(PhotoPath(n).string());
  auto with = [&](std::vector<std::string> flags) {
    flags.insert(flags.end(), inputs.begin(), inputs.end());
    return flags;
  };

  // Baseline: --batch-size 4, --timing, --output FILE.
  const std::string output = tmp / "out.jsonl";
  const ProcessResult base = RunDetect(with({"--batch-size", "4", "--timing", "--output", output}));
  ASSERT_EQ(base.exit_code, 0) << base.Describe();
  EXPECT_EQ(base.out, "") << "--output must keep stdout empty";
  const std::vector<json> base_lines = ParseJsonLines(ReadText(output));
  ASSERT_EQ(base_lines.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    SCOPED_TRACE(names[i]);
    ExpectWellFormedResult(base_lines[i]);
    EXPECT_EQ(base_lines[i].value("path", ""), inputs[i]);
    ASSERT_TRUE(base_lines[i].contains("timing"));
    const json& t = base_lines[i]["timing"];
    for (const char* key :
         {"decode_ms", "preprocess_ms", "queue_ms", "inference_ms", "postprocess_ms"}) {
      ASSERT_TRUE(t.contains(key) && t[key].is_number()) << key << " in " << t.dump();
      EXPECT_GE(t[key].get<double>(), 0.0) << key;
    }
    EXPECT_GT(t.value("inference_ms", 0.0), 0.0);
    ASSERT_TRUE(t.contains("batch_size") && t["batch_size"].is_number_integer()) << t.dump();
    EXPECT_GE(t["batch_size"].get<int>(), 1);
    EXPECT_LE(t["batch_size"].get<int>(), 4);
  }
  const json& sample2 = base_lines[3];
  ASSERT_EQ(sample2["faces"].size(), 3u) << sample2.dump();

  // --batch-size 1 gives the same faces; --annotate draws them.
  const fs::path annotated = tmp.path() / "annotated";
  const ProcessResult one =
      RunDetect(with({"--batch-size", "1", "--annotate", annotated.string()}));
  ASSERT_EQ(one.exit_code, 0) << one.Describe();
  const std::vector<json> one_lines = ParseJsonLines(one.out);
  ASSERT_EQ(one_lines.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    SCOPED_TRACE(names[i]);
    EXPECT_FALSE(one_lines[i].contains("timing")) << "timing only with --timing";
    ExpectSameFaces(one_lines[i], base_lines[i]);
    const fs::path target = annotated / fs::path(names[i]).replace_extension(".jpg");
    ExpectBoxesDrawn(inputs[i], target, one_lines[i]);
  }

  // --score-threshold 0.95 keeps exactly the default faces scoring above 0.95.
  const ProcessResult strict =
      RunDetect({"--score-threshold", "0.95", PhotoPath("sample2.jpg").string()});
  ASSERT_EQ(strict.exit_code, 0) << strict.Describe();
  const std::vector<json> strict_lines = ParseJsonLines(strict.out);
  ASSERT_EQ(strict_lines.size(), 1u);
  ExpectWellFormedResult(strict_lines[0], 0.95);
  json expected_strict = sample2;
  expected_strict["faces"] = json::array();
  for (const json& face : sample2["faces"]) {
    if (face["score"].get<double>() > 0.95) expected_strict["faces"].push_back(face);
  }
  EXPECT_LT(strict_lines[0]["faces"].size(), sample2["faces"].size());
  ExpectSameFaces(strict_lines[0], expected_strict);

  // --max-faces 1 keeps the highest-scoring face of each image.
  const ProcessResult top = RunDetect(with({"--max-faces", "1"}));
  ASSERT_EQ(top.exit_code, 0) << top.Describe();
  const std::vector<json> top_lines = ParseJsonLines(top.out);
  ASSERT_EQ(top_lines.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    SCOPED_TRACE(names[i]);
    ExpectWellFormedResult(top_lines[i]);
    const json& all = base_lines[i]["faces"];
    ASSERT_EQ(top_lines[i]["faces"].size(), std::min<size_t>(1, all.size()));
    if (all.empty()) continue;
    const auto best = std::max_element(all.begin(), all.end(), [](const json& a, const json& b) {
      return a["score"].get<double>() < b["score"].get<double>();
    });
    json expected_top = base_lines[i];
    expected_top["faces"] = json::array({*best});
    ExpectSameFaces(top_lines[i], expected_top);
  }
}

// --min-face-size N (the option table's min_face_size): faces whose shorter side is below N
// pixels of the original picture are dropped, before --max-faces picks the best.
TEST(DetectE2E, MinFaceSizeDropsSmallFacesBeforeMaxFaces) {
  const std::string photo = PhotoPath("sample1.jpg").string();
  const ProcessResult base = RunDetect({photo});
  ASSERT_EQ(base.exit_code, 0) << base.Describe();
  const json all = ParseJsonLines(base.out).at(0);
  const auto shorter = [](const json& f) {
    const json& b = f["box"];
    return std::min(b[2].get<double>() - b[0].get<double>(), b[3].get<double>() - b[1].get<double>());
  };
  ASSERT_GE(all["faces"].size(), 2u) << all.dump();
  // Just above the best face's side: it goes, the bigger ones stay.
  const int min_size = static_cast<int>(std::floor(shorter(all["faces"][0]))) + 1;
  json expected = all;
  expected["faces"] = json::array();
  for (const json& f : all["faces"]) {
    if (shorter(f) >= min_size) expected["faces"].push_back(f);
  }
  ASSERT_FALSE(expected["faces"].empty());
  ASSERT_LT(expected["faces"].size(), all["faces"].size());
  const ProcessResult sized = RunDetect({"--min-face-size", std::to_string(min_size), photo});
  ASSERT_EQ(sized.exit_code, 0) << sized.Describe();
  ExpectSameFaces(ParseJsonLines(sized.out).at(0), expected);
  const ProcessResult one =
      RunDetect({"--min-face-size", std::to_string(min_size), "--max-faces", "1", photo});
  ASSERT_EQ(one.exit_code, 0) << one.Describe();
  json expected_one = expected;
  expected_one["faces"] = json::array({expected["faces"][0]});
  ExpectSameFaces(ParseJsonLines(one.out).at(0), expected_one);
  const ProcessResult bad = RunDetect({"--min-face-size", "-1", photo});
  EXPECT_EQ(bad.exit_code, 2) << bad.Describe();
  EXPECT_NE(bad.err.find("--min-face-size"), std::string::npos) << bad.err;
}

TEST(DetectE2E, MaxPixelsRefusesLargerImagesAndQuietDropsTheSummary) {
  // grace_hopper.jpg is 512x600 = 307200 pixels, astronaut.png 512x512 = 262144.
  const ProcessResult r =
      RunDetect({"--quiet", "--max-pixels", "307199", PhotoPath("grace_hopper.jpg").string(),
                 PhotoPath("astronaut.png").string()});
  ASSERT_EQ(r.exit_code, 1) << r.Describe();
  const std::vector<json> lines = ParseJsonLines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  ASSERT_TRUE(lines[0].contains("error")) << lines[0].dump();
  EXPECT_EQ(lines[0]["error"].value("code", ""), "resource_exhausted");
  const std::string message = lines[0]["error"].value("message", "");
  EXPECT_NE(message.find("307200"), std::string::npos) << message;
  EXPECT_NE(message.find("307199"), std::string::npos) << message;
  ExpectWellFormedResult(lines[1]);
  EXPECT_EQ(lines[1].value("faces", json::array()).size(), 1u);
  // --quiet drops the summary, not the per-file errors.
  EXPECT_EQ(r.err, "error: " + PhotoPath("grace_hopper.jpg").string() + ": " + message + "\n");
}

TEST(DetectE2E, FileNamesThatAreNotUtf8AreReported) {
  // Linux file names are bytes; the JSON output must survive names that are not UTF-8.
  TempDir tmp;
  const fs::path in = tmp.path() / "in";
  const std::string latin1_name = "caf\xE9.png";  // "café.png" in Latin-1: legal on Linux
  WriteBytes(in / latin1_name, ReadBytes(PhotoPath("astronaut.png")));
  WriteBytes(in / "z.png", ReadBytes(PhotoPath("astronaut.png")));
  const std::string missing = (tmp.path() / "gon\xE9.jpg").string();

  const ProcessResult r = RunDetect({in.string(), missing});
  EXPECT_EQ(r.term_signal, 0) << r.Describe();
  EXPECT_EQ(r.exit_code, 1) << r.Describe();  // the missing file fails, nothing else
  const std::vector<json> lines = ParseJsonLines(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.out;
  // The undecodable byte may be replaced or escaped, but the rest of the name survives.
  EXPECT_NE(lines[0].value("path", "").find("caf"), std::string::npos) << lines[0].dump();
  EXPECT_EQ(lines[0].value("faces", json::array()).size(), 1u) << lines[0].dump();
  EXPECT_EQ(lines[1].value("path", ""), (in / "z.png").string());
  EXPECT_EQ(lines[1].value("faces", json::array()).size(), 1u) << lines[1].dump();
  ASSERT_TRUE(lines[2].contains("error")) << lines[2].dump();
  EXPECT_EQ(lines[2]["error"].value("code", ""), "not_found");
}

TEST(DetectE2E, AnnotatedFilesOfInputsWithTheSameNameDoNotOverwriteEachOther) {
  // Inputs that map to the same annotated name must not overwrite each other.
  TempDir tmp;
  WriteBytes(tmp.path() / "a" / "x.png", ReadBytes(PhotoPath("astronaut.png")));
  WriteBytes(tmp.path() / "b" / "x.jpg", ReadBytes(PhotoPath("grace_hopper.jpg")));
  const fs::path annotated = tmp.path() / "annotated";
  const ProcessResult r =
      RunDetect({"--annotate", annotated.string(), tmp / "a/x.png", tmp / "b/x.jpg"});
  const std::vector<json> lines = ParseJsonLines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.Describe();
  if (r.exit_code == 0) {
    // Either both annotations exist under distinct names ...
    size_t written = 0;
    for (const auto& entry : fs::recursive_directory_iterator(annotated)) {
      written += entry.is_regular_file();
    }
    EXPECT_EQ(written, 2u) << "one annotated JPEG per input";
  } else {
    // ... or the clash is reported for the second input.
    EXPECT_EQ(r.exit_code, 1) << r.Describe();
    EXPECT_TRUE(lines[1].contains("error")) << lines[1].dump();
  }
}

}  // namespace
}  // namespace mogserve::e2e
