// Helpers shared by the tests that run the real model on the photos in tests/data.
#pragma once

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "api/serving_stack.h"
#include "engine/engine.h"
#include "mogserve/detector.h"

namespace mogserve::testing_util {

inline std::string DataDir() {
  return MOGSERVE_TEST_DATA_DIR;
}
inline std::string PhotoPath(const std::string& name) {
  return DataDir() + "/photos/" + name;
}

// The whole file, or empty when it cannot be read.
inline std::vector<uint8_t> ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The shipped model with the default options (one intra-op thread per core). Not 1 thread, even
// though ctest runs this label with -j2: with LibTorch 1.13 at 1 thread, 1x1 convolutions at
// batch < 16 leave oneDNN for the slow native path (~40x slower), and the label took 70 s.
inline api::EngineSetup TestEngineOptions() {
  api::EngineSetup setup;
  setup.model.source.model_dir = MOGSERVE_TEST_MODEL_DIR;
  return setup;
}

// The engine `setup` names, loaded as the library loads it (api::LoadEngine).
inline StatusOr<std::unique_ptr<engine::Engine>> LoadEngine(const api::EngineSetup& setup) {
  return api::LoadEngine(setup.model, setup.engine);
}

struct GroundTruthPhoto {
  std::string name;  // file name under tests/data/photos
  std::vector<Detection> faces;
};

// tests/data/ground_truth.json: photo name → [[x1, y1, x2, y2], ...]; keys starting with '_' are
// comments. Sorted by name (the JSON object's order).
inline std::vector<GroundTruthPhoto> LoadGroundTruth() {
  std::ifstream in(DataDir() + "/ground_truth.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  std::vector<GroundTruthPhoto> out;
  for (const auto& [name, boxes] : j.items()) {
    if (name.empty() || name[0] == '_') continue;
    GroundTruthPhoto photo{name, {}};
    for (const auto& b : boxes) {
      Detection d;
      d.x1 = b.at(0).get<float>();
      d.y1 = b.at(1).get<float>();
      d.x2 = b.at(2).get<float>();
      d.y2 = b.at(3).get<float>();
      d.score = 1.0f;
      photo.faces.push_back(d);
    }
    out.push_back(std::move(photo));
  }
  return out;
}

// Greedy one-to-one matching: pairs with IoU >= min_iou, best IoU first, each box used at most
// once. Returns, for each box of `a`, the index of its partner in `b` or -1.
inline std::vector<int> GreedyMatch(const std::vector<Detection>& a,
                                    const std::vector<Detection>& b, float min_iou) {
  std::vector<std::tuple<float, int, int>> pairs;
  for (int i = 0; i < static_cast<int>(a.size()); ++i) {
    for (int j = 0; j < static_cast<int>(b.size()); ++j) {
      const float iou = IoU(a[i], b[j]);
      if (iou >= min_iou) pairs.emplace_back(iou, i, j);
    }
  }
  std::stable_sort(pairs.begin(), pairs.end(),
                   [](const auto& x, const auto& y) { return std::get<0>(x) > std::get<0>(y); });
  std::vector<int> partner_of_a(a.size(), -1);
  std::vector<bool> b_used(b.size(), false);
  for (const auto& [iou, i, j] : pairs) {
    if (partner_of_a[i] >= 0 || b_used[j]) continue;
    partner_of_a[i] = j;
    b_used[j] = true;
  }
  return partner_of_a;
}

inline std::string BoxString(const Detection& d) {
  return "[" + std::to_string(d.x1) + ", " + std::to_string(d.y1) + ", " + std::to_string(d.x2) +
         ", " + std::to_string(d.y2) + "] score " + std::to_string(d.score);
}

}  // namespace mogserve::testing_util
