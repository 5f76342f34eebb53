#include "cli/input_files.h"

#include <algorithm>
#include <filesystem>

namespace mogserve::cli {
namespace {

namespace fs = std::filesystem;

bool IsImageExtension(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), ::tolower);
  return ext == ".jpg" || ext == ".jpeg" || ext == ".jpe" || ext == ".png" || ext == ".webp";
}

}  // namespace

std::vector<InputFile> CollectInputFiles(const std::vector<std::string>& paths) {
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
      if (it->is_regular_file(ec) && IsImageExtension(it->path())) found.push_back(it->path());
    }
    std::sort(found.begin(), found.end());
    for (const fs::path& p : found) inputs.push_back({p.string(), fs::relative(p, arg).string()});
  }
  return inputs;
}

}  // namespace mogserve::cli
