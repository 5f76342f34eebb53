// The Python reference's golden files (tests/reference/golden.py, written by make_golden.sh into
// MOGSERVE_GOLDEN_DIR) as the parity tests read them. Header-only, torch-free.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/file_util.h"
#include "image/image.h"
#include "mogserve/detector.h"

namespace mogserve::golden {

inline std::string GoldenPath(const std::string& name) {
  return std::string(MOGSERVE_GOLDEN_DIR) + "/" + name;
}

struct Golden {
  int height = 0, width = 0;                // the picture
  int padded_height = 0, padded_width = 0;  // the network input
  image::Image picture;
  std::vector<float> conf, loc;
  nlohmann::json meta;  // the sidecar: post-processing options and the reference's detections
};

inline Golden ReadGolden(const std::string& stem) {
  Golden g;
  std::ifstream json_file(GoldenPath(stem + ".json"));
  g.meta = nlohmann::json::parse(json_file);
  const nlohmann::json& meta = g.meta;
  g.height = meta["image"]["height"];
  g.width = meta["image"]["width"];
  g.padded_height = meta["input_shape"][2];
  g.padded_width = meta["input_shape"][3];
  auto rgb = ReadFileBytes(GoldenPath(stem + ".rgb"));
  EXPECT_TRUE(rgb.ok()) << rgb.status().ToString();
  g.picture = image::Image(g.width, g.height);
  if (rgb.ok()) g.picture.data = *rgb;
  auto bin = ReadFileBytes(GoldenPath(stem + ".bin"));
  EXPECT_TRUE(bin.ok()) << bin.status().ToString();
  if (!bin.ok()) return g;
  std::vector<float> all(bin->size() / 4);
  std::memcpy(all.data(), bin->data(), all.size() * 4);
  const size_t anchors = all.size() / 5;  // conf (S x 1) then loc (S x 4)
  g.conf.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(anchors));
  g.loc.assign(all.begin() + static_cast<std::ptrdiff_t>(anchors), all.end());
  return g;
}

// The reference's post-processed faces, in order, within the given tolerances. Faces whose
// scores agree within `score` may trade places with a neighbour up to 4 ranks away (a near tie
// that FP32 rounding ordered differently); each is matched once.
inline void ExpectReferenceFaces(const Golden& g, const std::vector<Detection>& faces, float box_px,
                                 float score) {
  const nlohmann::json& boxes = g.meta["detections"]["boxes"];
  const nlohmann::json& scores = g.meta["detections"]["scores"];
  ASSERT_EQ(faces.size(), boxes.size());
  ASSERT_GT(faces.size(), 0u);
  auto matches = [&](size_t i, size_t j) {
    if (std::abs(faces[i].score - scores[j].get<float>()) > score) return false;
    const float expected[4] = {boxes[j][0], boxes[j][1], boxes[j][2], boxes[j][3]};
    const float got[4] = {faces[i].x1, faces[i].y1, faces[i].x2, faces[i].y2};
    for (int k = 0; k < 4; ++k) {
      if (std::abs(got[k] - expected[k]) > box_px) return false;
    }
    return true;
  };
  constexpr size_t kWindow = 4;
  std::vector<bool> used(boxes.size(), false);
  size_t swapped = 0;
  for (size_t i = 0; i < faces.size(); ++i) {
    size_t found = boxes.size();
    for (size_t j = i >= kWindow ? i - kWindow : 0; j < std::min(boxes.size(), i + kWindow + 1);
         ++j) {
      if (!used[j] && matches(i, j)) {
        found = j;
        break;
      }
    }
    if (found == boxes.size()) {
      ADD_FAILURE() << "face " << i << " (score " << faces[i].score << ", box [" << faces[i].x1
                    << ", " << faces[i].y1 << ", " << faces[i].x2 << ", " << faces[i].y2
                    << "]) matches no reference face within 4 ranks; reference " << i << ": "
                    << scores[i].dump() << " " << boxes[i].dump();
      continue;
    }
    used[found] = true;
    swapped += found != i;
  }
  if (swapped > 0) std::printf("  %zu faces matched a near-tied neighbour's rank\n", swapped);
}

}  // namespace mogserve::golden
