// The one result-to-JSON writer (json/result_json.h) every surface answers with: boxes and
// scores rounded, landmarks only on faces that have them, and ModelScope's flat keypoints.
#include "json/result_json.h"

#include <gtest/gtest.h>

namespace mogserve {
namespace {

DetectResult TwoFaces() {
  DetectResult r;
  r.width = 64;
  r.height = 48;
  Detection a{.x1 = 1.004f, .y1 = 2, .x2 = 30, .y2 = 40, .score = 0.91234f};
  a.landmarks = {{10.123f, 12}, {20, 12}, {15, 18}, {11, 25}, {19, 25.006f}};
  r.faces = {a, {40, 5, 60, 30, 0.6f}};
  return r;
}

TEST(ResultJson, LandmarksOnlyWhereTheModelGaveThem) {
  const nlohmann::json j = ResultToJson(TwoFaces(), false);
  ASSERT_EQ(j.at("faces").size(), 2u);
  const nlohmann::json& a = j["faces"][0];
  EXPECT_EQ(a.at("box"), nlohmann::json({1.0, 2.0, 30.0, 40.0}));
  EXPECT_EQ(a.at("score"), 0.9123);
  EXPECT_EQ(
      a.at("landmarks"),
      nlohmann::json({{10.12, 12.0}, {20.0, 12.0}, {15.0, 18.0}, {11.0, 25.0}, {19.0, 25.01}}));
  EXPECT_FALSE(j["faces"][1].contains("landmarks"));
  EXPECT_FALSE(j.contains("timing"));
}

TEST(ResultJson, ModelScopeKeypointsAreFlatPerFaceOrNull) {
  const nlohmann::json j = ResultToModelScopeJson(TwoFaces());
  ASSERT_EQ(j.at("keypoints").size(), 2u);
  EXPECT_EQ(j["keypoints"][0],
            nlohmann::json({10.12, 12.0, 20.0, 12.0, 15.0, 18.0, 11.0, 25.0, 19.0, 25.01}));
  EXPECT_EQ(j["keypoints"][1], nlohmann::json::array());
  DetectResult without = TwoFaces();
  without.faces[0].landmarks.clear();
  EXPECT_TRUE(ResultToModelScopeJson(without).at("keypoints").is_null());
}

}  // namespace
}  // namespace mogserve
