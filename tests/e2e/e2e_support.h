// Shared helpers of the end-to-end tests: paths of the binary and test data, temporary folders,
// file I/O, JSON lines, and running `mogserve` itself.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "mogserve/result.h"
#include "process.h"

namespace mogserve::e2e {

const std::string& MogserveBinary();                       // the built `mogserve`
std::filesystem::path TestDataDir();                       // tests/data
std::filesystem::path PhotosDir();                         // tests/data/photos
std::filesystem::path PhotoPath(const std::string& name);  // tests/data/photos/<name>
const std::string& TestModelDir();                         // models/ssd_mobilenetv1

// A fresh folder under the system temporary directory, removed (with its contents) on
// destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // path() / relative, as a string.
  std::string operator/(const std::string& relative) const { return (path_ / relative).string(); }

 private:
  std::filesystem::path path_;
};

std::vector<uint8_t> ReadBytes(const std::filesystem::path& path);
std::string ReadText(const std::filesystem::path& path);
// Writes `bytes` to `path`, creating its parent folders.
void WriteBytes(const std::filesystem::path& path, const std::vector<uint8_t>& bytes);

inline bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// Splits on '\n' (a final newline does not add an empty line).
std::vector<std::string> SplitLines(const std::string& text);
// Parses each line as JSON; a line that does not parse becomes a test failure (and is skipped).
std::vector<nlohmann::json> ParseJsonLines(const std::string& text);

// The faces of a JSON line (`detect`, `detect-video`, `anonymize`): box and score of each.
std::vector<Detection> FacesOf(const nlohmann::json& line);

// Runs `mogserve args...`.
ProcessResult RunMogserve(const std::vector<std::string>& args, const ProcessOptions& options = {});

// Runs `mogserve detect --model-dir <test model> args...`.
ProcessResult RunDetect(const std::vector<std::string>& args, const ProcessOptions& options = {});

}  // namespace mogserve::e2e
