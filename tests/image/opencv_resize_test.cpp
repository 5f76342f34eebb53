// ResizeLinearLikeOpenCv against cv2.resize itself: tests/reference/opencv_resize_cases.py
// (Debian's python3-opencv) writes the cases before this test runs (a CTest fixture). Every
// byte must match: ModelScope's pipeline resizes with cv2, and its detections depend on it.
#include "image/opencv_resize.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

namespace mogserve::image {
namespace {

std::vector<uint8_t> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(OpenCvResize, MatchesCv2ResizeByteForByte) {
  const std::string dir = MOGSERVE_OPENCV_CASES_DIR;
  std::ifstream count_file(dir + "/count");
  int count = 0;
  count_file >> count;
  ASSERT_GT(count, 40) << "no cases in " << dir << " (the opencv_resize_setup fixture)";
  for (int i = 0; i < count; ++i) {
    const std::string stem = dir + "/case_" + std::to_string(i);
    std::ifstream json_file(stem + ".json");
    const nlohmann::json meta = nlohmann::json::parse(json_file);
    SCOPED_TRACE(meta["what"].get<std::string>());
    Image src(meta["width"], meta["height"]);
    src.data = ReadAll(stem + ".in.rgb");
    ASSERT_EQ(src.data.size(), static_cast<size_t>(src.width) * src.height * 3);
    const Image got = ResizeLinearLikeOpenCv(src, meta["fx"], meta["fy"]);
    ASSERT_EQ(got.width, meta["out_width"].get<int>());
    ASSERT_EQ(got.height, meta["out_height"].get<int>());
    const std::vector<uint8_t> want = ReadAll(stem + ".out.rgb");
    ASSERT_EQ(got.data.size(), want.size());
    size_t mismatches = 0, first = want.size();
    for (size_t k = 0; k < want.size(); ++k) {
      if (got.data[k] != want[k]) {
        ++mismatches;
        first = std::min(first, k);
      }
    }
    EXPECT_EQ(mismatches, 0u) << "first at byte " << first << ": " << int{got.data[first]} << " vs "
                              << int{want[first]};
  }
}

TEST(OpenCvResize, ScaledSidesRoundHalfToEven) {
  EXPECT_EQ(OpenCvScaledSide(1350, 1000.0 / 1800), 750);
  EXPECT_EQ(OpenCvScaledSide(1333, 0.5), 666);  // 666.5 → even
  EXPECT_EQ(OpenCvScaledSide(1335, 0.5), 668);  // 667.5 → even
}

}  // namespace
}  // namespace mogserve::image
