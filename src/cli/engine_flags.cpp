#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "cli/commands.h"

namespace mogserve::cli {
namespace {

// Where scripts/setup.sh puts the embedded SSD-MobileNetV1, under models/.
constexpr const char* kDefaultModelFolder = "ssd_mobilenetv1";

}  // namespace

std::string ResolveModelDir(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("MOGSERVE_MODEL_DIR"); env != nullptr && *env != '\0') {
    return env;
  }
  namespace fs = std::filesystem;
  const fs::path relative = fs::path("models") / kDefaultModelFolder;
  if (fs::is_directory(relative)) return relative.string();
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path beside = exe.parent_path().parent_path() / relative;
    if (fs::is_directory(beside)) return beside.string();
  }
  return relative.string();
}

void AddEngineFlags(CLI::App& app, EngineFlags& flags) {
  app.add_option("--model-dir", flags.model_dir,
                 "Folder with the model files (default: $MOGSERVE_MODEL_DIR, else "
                 "models/ssd_mobilenetv1 in the working directory or next to the build)");
  app.add_option("--threads", flags.threads,
                 "Intra-op threads for the forward pass (0 = all cores)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
}

}  // namespace mogserve::cli
