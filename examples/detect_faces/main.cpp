// detect_faces: image paths in, one JSON line per image out (the format of `mogserve detect`),
// through the mogserve C++ library. Errors go to stderr; the exit code is detect's: 0 all found,
// 1 some images failed, 2 usage, 3 the detector could not start.
//
//   detect_faces photo.jpg more/*.png > faces.jsonl
//
// The model: $MOGSERVE_MODEL_DIR, else ./models/ssd_mobilenetv1, else models/ssd_mobilenetv1
// above the program's folder, else the one installed with the library
// (DetectorOptions::model_dir).
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include <mogserve/mogserve.h>

namespace {

// The file's bytes, or the Status `mogserve detect` reports for it.
mogserve::StatusOr<std::vector<uint8_t>> ReadFile(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (st.type() == fs::file_type::not_found) {
    return mogserve::NotFound("no such file: " + path);
  }
  if (ec) return mogserve::Internal("cannot stat " + path + ": " + ec.message());
  if (st.type() == fs::file_type::directory) {
    return mogserve::InvalidArgument(path + " is a directory, not a file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return mogserve::Internal("cannot open " + path + ": " + std::strerror(errno));
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  if (in.bad()) return mogserve::Internal("cannot read " + path + ": " + std::strerror(errno));
  return bytes;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> paths(argv + 1, argv + argc);
  if (paths.empty() || paths[0] == "-h" || paths[0] == "--help") {
    std::cerr << "usage: " << argv[0] << " IMAGE...\n"
              << "  Finds the faces in each JPEG/PNG/WebP image and prints one JSON line per "
                 "image.\n";
    return paths.empty() ? 2 : 0;
  }

  auto detector = mogserve::Detector::Open(mogserve::DetectorOptions{});
  if (!detector.ok()) {
    std::cerr << "error: " << detector.status().ToString() << "\n";
    return 3;
  }

  // A few images at a time: each chunk is submitted together, so its images share forward
  // passes, and the results come back in input order.
  constexpr size_t kChunk = 32;
  int failed = 0;
  for (size_t begin = 0; begin < paths.size(); begin += kChunk) {
    const size_t end = std::min(paths.size(), begin + kChunk);
    std::vector<mogserve::StatusOr<std::vector<uint8_t>>> files;
    std::vector<std::span<const uint8_t>> images;
    files.reserve(end - begin);  // the spans point into these files' bytes
    for (size_t i = begin; i < end; ++i) {
      files.push_back(ReadFile(paths[i]));
      if (files.back().ok()) images.emplace_back(*files.back());
    }
    std::vector<mogserve::StatusOr<mogserve::DetectResult>> results =
        (*detector)->DetectAll(images);
    size_t next_result = 0;
    for (size_t i = begin; i < end; ++i) {
      const auto& file = files[i - begin];
      mogserve::StatusOr<mogserve::DetectResult> result =
          file.ok() ? std::move(results[next_result++]) : file.status();
      std::cout << mogserve::FormatJsonLine(paths[i], result) << "\n";
      if (!result.ok()) {
        ++failed;
        std::cerr << "error: " << paths[i] << ": " << result.status().message() << "\n";
      }
    }
  }
  std::cout.flush();
  if (!std::cout) {
    std::cerr << "error: writing the results failed\n";
    return 3;
  }
  return failed > 0 ? 1 : 0;
}
