// The Python reference's golden files (tests/reference/golden.py, written by make_golden.sh into
// MOGSERVE_GOLDEN_DIR) as the parity tests read them. Header-only, torch-free.
#pragma once

#include <gtest/gtest.h>

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

// The reference's post-processed faces, in order, within the given tolerances.
inline void ExpectReferenceFaces(const Golden& g, const std::vector<Detection>& faces,
                                 float box_px, float score) {
  const nlohmann::json& boxes = g.meta["detections"]["boxes"];
  const nlohmann::json& scores = g.meta["detections"]["scores"];
  ASSERT_EQ(faces.size(), boxes.size());
  ASSERT_GT(faces.size(), 0u);
  for (size_t i = 0; i < faces.size(); ++i) {
    EXPECT_NEAR(faces[i].score, scores[i].get<float>(), score) << "face " << i;
    const float expected[4] = {boxes[i][0], boxes[i][1], boxes[i][2], boxes[i][3]};
    const float got[4] = {faces[i].x1, faces[i].y1, faces[i].x2, faces[i].y2};
    for (int k = 0; k < 4; ++k) EXPECT_NEAR(got[k], expected[k], box_px) << "face " << i;
  }
}

}  // namespace mogserve::golden
