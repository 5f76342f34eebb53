#include "eval/wider_predictions.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/file_util.h"

namespace mogserve::eval {
namespace {

namespace fs = std::filesystem;

// Splits text into lines on '\n', dropping a '\r' before it.
std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return lines;
}

bool IsBlank(std::string_view line) {
  return line.find_first_not_of(" \t\r") == std::string_view::npos;
}

// The numbers of one line (separators: blanks and commas); false when a token is not a finite
// number.
bool ParseNumbers(std::string_view line, std::vector<double>& out) {
  out.clear();
  std::string token;
  auto flush = [&] {
    if (token.empty()) return true;
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(token.c_str(), &end);
    const bool ok = end == token.c_str() + token.size() && errno != ERANGE && std::isfinite(v);
    if (ok) out.push_back(v);
    token.clear();
    return ok;
  };
  for (char c : line) {
    if (c == ' ' || c == '\t' || c == ',' || c == '\r') {
      if (!flush()) return false;
    } else {
      token += c;
    }
  }
  return flush();
}

}  // namespace

WiderPredictionSet WiderPredictionSet::EmptyFor(const WiderGroundTruth& gt) {
  WiderPredictionSet set;
  for (const WiderEvent& e : gt.events) set.boxes.emplace_back(e.images.size());
  return set;
}

int64_t WiderPredictionSet::detection_count() const {
  int64_t n = 0;
  for (const auto& event : boxes) {
    for (const auto& image : event) n += static_cast<int64_t>(image.size());
  }
  return n;
}

WiderDetection ToWiderDetection(const Detection& d, BoxCorners corners) {
  const double extra = corners == BoxCorners::kInclusive ? 1.0 : 0.0;
  return {d.x1, d.y1, static_cast<double>(d.x2) - d.x1 + extra,
          static_cast<double>(d.y2) - d.y1 + extra, d.score};
}

std::string FormatPredictionFile(const std::string& name, std::vector<WiderDetection> detections) {
  std::stable_sort(
      detections.begin(), detections.end(),
      [](const WiderDetection& a, const WiderDetection& b) { return a.score > b.score; });
  std::string text = name + "\n" + std::to_string(detections.size()) + "\n";
  char line[160];
  for (const WiderDetection& d : detections) {
    // Scores keep 7 significant digits (a float's): the 1000 thresholds need no more.
    std::snprintf(line, sizeof(line), "%.2f %.2f %.2f %.2f %.7g\n", d.x, d.y, d.w, d.h, d.score);
    text += line;
  }
  return text;
}

Status WritePredictionFile(const std::string& path, const std::string& name,
                           const std::vector<WiderDetection>& detections) {
  std::error_code ec;
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty()) fs::create_directories(parent, ec);
  std::ofstream f(path, std::ios::binary);
  const std::string text = FormatPredictionFile(name, detections);
  f.write(text.data(), static_cast<std::streamsize>(text.size()));
  f.close();
  if (!f) return Internal("cannot write " + path);
  return Status::Ok();
}

StatusOr<std::vector<WiderDetection>> ParsePredictionFile(std::string_view text) {
  const std::vector<std::string_view> lines = Lines(text);
  if (lines.size() < 2) return InvalidData("no count line (line 2)");
  std::vector<double> numbers;
  if (!ParseNumbers(lines[1], numbers) || numbers.size() != 1 || numbers[0] < 0 ||
      numbers[0] != std::floor(numbers[0])) {
    return InvalidData("line 2 should be the number of boxes, got '" + std::string(lines[1]) + "'");
  }
  const size_t count = static_cast<size_t>(numbers[0]);
  std::vector<WiderDetection> detections;
  size_t line_no = 2;
  while (detections.size() < count) {
    if (line_no >= lines.size()) {
      return InvalidData("line 2 announces " + std::to_string(count) + " boxes, but the file has " +
                         std::to_string(detections.size()));
    }
    const std::string_view line = lines[line_no++];
    if (IsBlank(line)) continue;
    if (!ParseNumbers(line, numbers) || numbers.size() < 5) {
      return InvalidData("line " + std::to_string(line_no) + " should be 'x y w h score', got '" +
                         std::string(line) + "'");
    }
    detections.push_back({numbers[0], numbers[1], numbers[2], numbers[3], numbers.back()});
  }
  return detections;
}

StatusOr<WiderPredictionSet> ReadWiderPredictions(const std::string& dir,
                                                  const WiderGroundTruth& gt,
                                                  PredictionReadReport* report) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return NotFound("prediction folder " + dir + " does not exist");
  PredictionReadReport local;
  PredictionReadReport& r = report != nullptr ? *report : local;
  WiderPredictionSet set = WiderPredictionSet::EmptyFor(gt);
  for (size_t e = 0; e < gt.events.size(); ++e) {
    const WiderEvent& event = gt.events[e];
    for (size_t i = 0; i < event.images.size(); ++i) {
      const std::string relative = event.name + "/" + event.images[i].name + ".txt";
      auto bytes = ReadFileBytes((fs::path(dir) / relative).string());
      if (!bytes.ok()) {
        if (bytes.status().code() == StatusCode::kNotFound) {
          r.missing.push_back(relative);
        } else {
          r.invalid.push_back(relative + ": " + bytes.status().message());
        }
        continue;
      }
      ++r.files_read;
      auto parsed = ParsePredictionFile(
          std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()));
      if (!parsed.ok()) {
        r.invalid.push_back(relative + ": " + parsed.status().message());
        continue;
      }
      set.boxes[e][i] = std::move(*parsed);
    }
  }
  return set;
}

}  // namespace mogserve::eval
