// The WIDER ground truth built from MAT files written by the test, and its errors.
#include "eval/wider_ground_truth.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "mat_test_writer.h"

namespace mogserve::eval {
namespace {

namespace fs = std::filesystem;
using testing::TestEvent;
using testing::TestImage;

std::vector<TestEvent> SmallSet() {
  return {
      {"0--Parade",
       {{"0_Parade_1", {{10, 20, 30, 40}, {50, 60, 5, 6}, {0, 0, -2, 9}}, {1}, {1, 2}, {1, 2, 3}},
        {"0_Parade_2", {{0, 0, 0, 0}}, {}, {}, {}}}},
      {"1--Handshaking", {{"1_Handshaking_1", {{1, 2, 3, 4}}, {}, {1}, {1}}}}};
}

StatusOr<WiderGroundTruth> FromFiles(const std::vector<std::vector<uint8_t>>& files) {
  std::vector<MatFile> parsed;
  for (const auto& bytes : files) {
    auto f = ParseMat(bytes);
    if (!f.ok()) return f.status();
    parsed.push_back(std::move(*f));
  }
  return WiderGroundTruthFromMat(parsed[0], {&parsed[1], &parsed[2], &parsed[3]});
}

TEST(WiderGroundTruth, ReadsEventsImagesBoxesAndKeepLists) {
  for (bool compress : {false, true}) {
    auto gt = FromFiles(testing::WiderMatFiles(SmallSet(), compress));
    ASSERT_TRUE(gt.ok()) << gt.status().ToString();
    ASSERT_EQ(gt->events.size(), 2u);
    EXPECT_EQ(gt->events[0].name, "0--Parade");
    EXPECT_EQ(gt->events[1].name, "1--Handshaking");
    EXPECT_EQ(gt->image_count(), 3);
    EXPECT_EQ(gt->face_count(), 5);
    const WiderImage& img = gt->events[0].images[0];
    EXPECT_EQ(img.name, "0_Parade_1");
    ASSERT_EQ(img.faces.size(), 3u);
    EXPECT_EQ(img.faces[1].x, 50);
    EXPECT_EQ(img.faces[1].y, 60);
    EXPECT_EQ(img.faces[1].w, 5);
    EXPECT_EQ(img.faces[1].h, 6);
    EXPECT_EQ(img.faces[2].w, -2);  // kept as read
    EXPECT_EQ(img.keep[0], (std::vector<int>{1}));
    EXPECT_EQ(img.keep[2], (std::vector<int>{1, 2, 3}));
    EXPECT_EQ(gt->kept_count(WiderSubset::kEasy), 1);
    EXPECT_EQ(gt->kept_count(WiderSubset::kMedium), 3);
    EXPECT_EQ(gt->kept_count(WiderSubset::kHard), 4);
  }
}

TEST(WiderGroundTruth, LoadsTheFourFilesFromAFolder) {
  const fs::path dir = fs::temp_directory_path() / ("mogserve_gt_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const auto files = testing::WiderMatFiles(SmallSet(), true);
  const std::string names[4] = {kWiderValFile, WiderSubsetFile(WiderSubset::kEasy),
                                WiderSubsetFile(WiderSubset::kMedium),
                                WiderSubsetFile(WiderSubset::kHard)};
  for (int i = 0; i < 4; ++i) {
    std::ofstream(dir / names[i], std::ios::binary)
        .write(reinterpret_cast<const char*>(files[i].data()),
               static_cast<std::streamsize>(files[i].size()));
  }
  auto gt = LoadWiderGroundTruth(dir.string());
  ASSERT_TRUE(gt.ok()) << gt.status().ToString();
  EXPECT_EQ(gt->image_count(), 3);

  fs::remove(dir / "wider_medium_val.mat");
  auto missing = LoadWiderGroundTruth(dir.string());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("wider_medium_val.mat"), std::string::npos);
  fs::remove_all(dir);
}

TEST(WiderGroundTruthErrors, NameTheFileVariableAndCell) {
  auto files = testing::WiderMatFiles(SmallSet(), false);
  // An index beyond the image's faces in the hard list: image {1}{2} has one face.
  std::vector<TestEvent> bad = SmallSet();
  bad[0].images[1].hard = {2};
  auto bad_files = testing::WiderMatFiles(bad, false);
  files[3] = bad_files[3];
  auto gt = FromFiles(files);
  ASSERT_FALSE(gt.ok());
  EXPECT_NE(gt.status().message().find("wider_hard_val.mat: gt_list{1}{2}: index 2"),
            std::string::npos)
      << gt.status().message();

  // A subset file for a different image list.
  bad = SmallSet();
  bad[1].images.push_back({"1_Handshaking_2", {}, {}, {}, {}});
  files = testing::WiderMatFiles(SmallSet(), false);
  files[1] = testing::WiderMatFiles(bad, false)[1];
  gt = FromFiles(files);
  ASSERT_FALSE(gt.ok());
  EXPECT_NE(gt.status().message().find("wider_easy_val.mat: gt_list{2}: expected 1 images"),
            std::string::npos)
      << gt.status().message();
}

TEST(WiderGroundTruthErrors, MissingVariablesAndWrongShapes) {
  using testing::MatWriter;
  auto val = ParseMat(MatWriter::File({{"event_list", testing::MatCellColumn({})}}, false));
  ASSERT_TRUE(val.ok());
  auto gt = WiderGroundTruthFromMat(*val, {&*val, &*val, &*val});
  ASSERT_FALSE(gt.ok());
  EXPECT_NE(gt.status().message().find("no variable 'file_list' (the file has: event_list)"),
            std::string::npos)
      << gt.status().message();

  // Boxes with 3 columns.
  auto bad = ParseMat(MatWriter::File(
      {{"event_list", testing::MatCellColumn({testing::MatChar("e")})},
       {"file_list", testing::MatCellColumn({testing::MatCellColumn({testing::MatChar("i")})})},
       {"face_bbx_list", testing::MatCellColumn({testing::MatCellColumn({testing::MatNumbers(
                             MatClass::kDouble, kMiDouble, 1, 3, {1, 2, 3})})})}},
      true));
  ASSERT_TRUE(bad.ok());
  gt = WiderGroundTruthFromMat(*bad, {&*bad, &*bad, &*bad});
  ASSERT_FALSE(gt.ok());
  EXPECT_NE(gt.status().message().find("face_bbx_list{1}{1}: expected an Nx4 numeric array"),
            std::string::npos)
      << gt.status().message();
}

}  // namespace
}  // namespace mogserve::eval
