#include "cli/input_files.h"

#include <algorithm>
#include <filesystem>

#include "image/encode.h"

namespace mogserve::cli {
namespace {

namespace fs = std::filesystem;

bool IsImageExtension(const fs::path& p) {
  return image::FormatOfExtension(p.string()) != image::ImageFormat::kUnknown;
}

std::string LowerExtension(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), ::tolower);
  return ext;
}

}  // namespace

bool IsVideoInput(const std::string& path) {
  const std::string ext = LowerExtension(path);
  for (const char* v : {".mp4", ".mov", ".mkv", ".m4v", ".avi", ".webm", ".ts"}) {
    if (ext == v) return true;
  }
  return false;
}

bool IsVideoOutput(const std::string& path) {
  const std::string ext = LowerExtension(path);
  return ext == ".mp4" || ext == ".mov" || ext == ".mkv";
}

std::vector<InputFile> CollectInputFiles(const std::vector<std::string>& paths, bool with_videos) {
  std::vector<InputFile> inputs;
  for (const std::string& arg : paths) {
    std::error_code ec;
    if (!fs::is_directory(arg, ec)) {
      inputs.push_back({arg, fs::path(arg).filename().string()});
      continue;
    }
    std::vector<fs::path> found;
    for (auto it = fs::recursive_directory_iterator(
             arg, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      const bool wanted =
          IsImageExtension(it->path()) || (with_videos && IsVideoInput(it->path().string()));
      if (it->is_regular_file(ec) && wanted) found.push_back(it->path());
    }
    std::sort(found.begin(), found.end());
    for (const fs::path& p : found) inputs.push_back({p.string(), fs::relative(p, arg).string()});
  }
  return inputs;
}

}  // namespace mogserve::cli
