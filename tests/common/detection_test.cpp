// KeepFaces (common/detection.h): the one rule every answer's faces go through.
#include "common/detection.h"

#include <gtest/gtest.h>

namespace mogserve {
namespace {

// Best first, as the models answer: a 10x40 face (shorter side 10), a 30x20 one (20), a 50x50.
std::vector<Detection> Faces() {
  return {{0, 0, 10, 40, 0.9f}, {0, 0, 30, 20, 0.8f}, {0, 0, 50, 50, 0.7f}};
}

TEST(KeepFaces, MaxFacesKeepsTheFirstAndZeroKeepsAll) {
  DetectOptions o;
  o.max_faces = 2;
  std::vector<Detection> kept = KeepFaces(Faces(), o);
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_FLOAT_EQ(kept[0].score, 0.9f);
  o.max_faces = 0;
  EXPECT_EQ(KeepFaces(Faces(), o).size(), 3u);
}

TEST(KeepFaces, MinFaceSizeDropsByTheShorterSideBeforeMaxFaces) {
  DetectOptions o;
  o.max_faces = 1;
  o.min_face_size = 20;  // the 10x40 face goes (shorter side 10); 30x20 stays (exactly 20)
  std::vector<Detection> kept = KeepFaces(Faces(), o);
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_FLOAT_EQ(kept[0].score, 0.8f) << "the size filter runs before max_faces";
  o.max_faces = 0;
  o.min_face_size = 21;
  kept = KeepFaces(Faces(), o);
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_FLOAT_EQ(kept[0].score, 0.7f);
  o.min_face_size = 51;
  EXPECT_TRUE(KeepFaces(Faces(), o).empty());
}

}  // namespace
}  // namespace mogserve
