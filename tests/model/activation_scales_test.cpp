// INT8 calibration's torch-free half: the percentile of the magnitude histogram, the order
// independence that makes calibration deterministic, and the scales file's round trip and
// errors.
#include "model/activation_scales.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/file_util.h"
#include "model/ssd_mobilenet_v1.h"

namespace mogserve::model {
namespace {

TEST(ActivationHistogramTest, PercentileIsTheBinEdgeAboveThatShareOfMagnitudes) {
  std::vector<float> values;
  for (int i = 1; i <= 10000; ++i) values.push_back(i % 2 == 0 ? i / 1000.0f : -i / 1000.0f);
  ActivationHistogram h;
  h.Add(values.data(), static_cast<int64_t>(values.size()));
  EXPECT_EQ(h.total(), 10000);
  EXPECT_FALSE(h.non_negative());
  // |x| runs 0.001 .. 10: the 99 % point is 9.9, the 100 % point 10; bins are < 0.8 % wide.
  EXPECT_GE(h.Percentile(99.0), 9.9);
  EXPECT_LE(h.Percentile(99.0), 9.9 * 1.008);
  EXPECT_GE(h.Percentile(100.0), 10.0);
  EXPECT_LE(h.Percentile(100.0), 10.0 * 1.008);
  EXPECT_GE(h.Percentile(50.0), 5.0);
  EXPECT_LE(h.Percentile(50.0), 5.0 * 1.008);

  ActivationHistogram relu;
  const float positive[] = {0.0f, 1.0f, 2.0f, 6.0f};
  relu.Add(positive, 4);
  EXPECT_TRUE(relu.non_negative());
  EXPECT_EQ(ActivationHistogram().Percentile(99.99), 0.0);
}

TEST(ActivationHistogramTest, OrderOfTheValuesDoesNotMatter) {
  std::vector<float> values;
  uint32_t state = 12345;
  for (int i = 0; i < 50000; ++i) {
    state = state * 1664525u + 1013904223u;
    values.push_back(static_cast<float>(state >> 8) / (1 << 20) - 8.0f);
  }
  ActivationHistogram forward, backward;
  forward.Add(values.data(), 20000);
  forward.Add(values.data() + 20000, 30000);
  std::vector<float> reversed(values.rbegin(), values.rend());
  backward.Add(reversed.data(), static_cast<int64_t>(reversed.size()));
  for (double p : {50.0, 99.0, 99.99, 100.0}) EXPECT_EQ(forward.Percentile(p), backward.Percentile(p));
}

TEST(ActivationScalesTest, FileRoundTripsAndIsCheckedAgainstTheNetwork) {
  const auto net = BuildSsdMobilenetV1Network();
  std::vector<ActivationHistogram> histograms(net->tensor_names().size());
  const float input[] = {-1.0f, 0.5f, 1.0f};
  const float relu6[] = {0.0f, 3.0f, 5.5f};
  histograms[0].Add(input, 3);
  histograms[1].Add(relu6, 3);
  const ActivationScales scales = ScalesFromHistograms(*net, histograms, 100.0, 2);
  ASSERT_EQ(scales.tensors.size(), 2u);
  EXPECT_EQ(scales.tensors[1].name, net->tensor_names()[1]);
  EXPECT_TRUE(scales.tensors[1].non_negative);
  const std::string text = ActivationScalesJson(scales);
  EXPECT_EQ(text, ActivationScalesJson(ScalesFromHistograms(*net, histograms, 100.0, 2)));

  const std::string dir = ::testing::TempDir();
  const std::string path = dir + "/scales_roundtrip.json";
  ASSERT_TRUE(WriteTextFile(path, text).ok());
  auto read = ReadActivationScales(path, *net);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(ActivationScalesJson(*read), text);
  ASSERT_NE(read->Find(1), nullptr);
  EXPECT_EQ(read->Find(1)->range, scales.tensors[1].range);
  EXPECT_EQ(read->Find(2), nullptr);

  auto missing = ReadActivationScales(dir + "/no_such_scales.json", *net);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("no_such_scales.json"), std::string::npos);

  std::string renamed = text;
  renamed.replace(renamed.find("MobilenetV1/Conv2d_0_pointwise"), 11, "SomethingV9");
  ASSERT_TRUE(WriteTextFile(path, renamed).ok());
  auto wrong = ReadActivationScales(path, *net);
  EXPECT_EQ(wrong.status().code(), StatusCode::kInvalidData);
  EXPECT_NE(wrong.status().message().find("in the network"), std::string::npos)
      << wrong.status().message();
}

}  // namespace
}  // namespace mogserve::model
