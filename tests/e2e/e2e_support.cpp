#include "e2e_support.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>

namespace mogserve::e2e {

namespace fs = std::filesystem;

// A server may refuse a request early and close while a client is still sending its body: the
// client must see the error (EPIPE), not kill the whole test binary with SIGPIPE.
const bool kSigpipeIgnored = [] {
  std::signal(SIGPIPE, SIG_IGN);
  return true;
}();

const std::string& MogserveBinary() {
  static const std::string path = MOGSERVE_BINARY;
  return path;
}

fs::path TestDataDir() {
  return fs::path(MOGSERVE_TEST_DATA_DIR);
}
fs::path PhotosDir() {
  return TestDataDir() / "photos";
}
fs::path PhotoPath(const std::string& name) {
  return PhotosDir() / name;
}

const std::string& TestModelDir() {
  static const std::string path = MOGSERVE_TEST_MODEL_DIR;
  return path;
}

TempDir::TempDir() {
  // pid + counter + random: unique across the test processes ctest runs in parallel.
  static std::atomic<int> counter{0};
  std::random_device rd;
  for (int attempt = 0; attempt < 100; ++attempt) {
    const fs::path candidate = fs::temp_directory_path() /
                               ("mogserve_e2e_" + std::to_string(getpid()) + "_" +
                                std::to_string(counter++) + "_" + std::to_string(rd() % 1000000));
    std::error_code ec;
    if (fs::create_directory(candidate, ec)) {
      path_ = candidate;
      return;
    }
  }
  ADD_FAILURE() << "cannot create a temporary folder under " << fs::temp_directory_path();
}

TempDir::~TempDir() {
  std::error_code ec;
  if (!path_.empty()) fs::remove_all(path_, ec);
}

std::vector<uint8_t> ReadBytes(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  EXPECT_TRUE(f) << "cannot open " << path;
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

std::string ReadText(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  EXPECT_TRUE(f) << "cannot open " << path;
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

void WriteBytes(const fs::path& path, const std::vector<uint8_t>& bytes) {
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(f) << "cannot write " << path;
}

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream s(text);
  for (std::string line; std::getline(s, line);) lines.push_back(line);
  return lines;
}

std::vector<nlohmann::json> ParseJsonLines(const std::string& text) {
  std::vector<nlohmann::json> out;
  for (const std::string& line : SplitLines(text)) {
    try {
      out.push_back(nlohmann::json::parse(line));
    } catch (const nlohmann::json::exception& e) {
      ADD_FAILURE() << "not a JSON line: '" << line << "': " << e.what();
    }
  }
  return out;
}

ProcessResult RunMogserve(const std::vector<std::string>& args, const ProcessOptions& options) {
  return RunProcess(MogserveBinary(), args, options);
}

std::vector<Detection> FacesOf(const nlohmann::json& line) {
  std::vector<Detection> faces;
  for (const nlohmann::json& f : line.at("faces")) {
    const nlohmann::json& b = f.at("box");
    faces.push_back({.x1 = b[0].get<float>(),
                     .y1 = b[1].get<float>(),
                     .x2 = b[2].get<float>(),
                     .y2 = b[3].get<float>(),
                     .score = f.at("score").get<float>()});
  }
  return faces;
}

ProcessResult RunDetect(const std::vector<std::string>& args, const ProcessOptions& options) {
  std::vector<std::string> full = {"detect", "--model-dir", TestModelDir()};
  full.insert(full.end(), args.begin(), args.end());
  return RunMogserve(full, options);
}

}  // namespace mogserve::e2e
