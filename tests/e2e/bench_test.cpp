// End-to-end smoke test of `mogserve bench engine`: the run completes and its JSON and Markdown
// reports are internally consistent. No timing expectations beyond consistency.
#include <gtest/gtest.h>

#include <set>

#include "e2e_support.h"

namespace mogserve::e2e {
namespace {

TEST(BenchE2E, EngineBenchWritesConsistentJsonAndMarkdown) {
  TempDir tmp;
  const std::string json_path = tmp / "bench.json";
  const std::string markdown_path = tmp / "bench.md";
  const ProcessResult r =
      RunMogserve({"bench", "engine", "--model-dir", TestModelDir(), "--batch-sizes", "1,2",
                   "--iterations", "1", "--min-seconds", "0", "--default-only", "--json", json_path,
                   "--markdown", markdown_path});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();

  const nlohmann::json report = nlohmann::json::parse(ReadText(json_path));
  EXPECT_GT(report.value("peak_gflops", 0.0), 0.0) << report.dump(2);
  EXPECT_GT(report.value("macs_per_image", 0.0), 0.0);
  ASSERT_TRUE(report.contains("rows") && report["rows"].is_array());
  std::set<int> batches;
  for (const nlohmann::json& row : report["rows"]) {
    SCOPED_TRACE(row.dump());
    const int batch = row.at("batch").get<int>();
    batches.insert(batch);
    const double mean = row.at("mean_ms").get<double>();
    const double min = row.at("min_ms").get<double>();
    const double median = row.at("median_ms").get<double>();
    const double max = row.at("max_ms").get<double>();
    EXPECT_GT(mean, 0.0);
    EXPECT_LE(min, median);
    EXPECT_LE(median, max);
    EXPECT_LE(min, mean);
    EXPECT_LE(mean, max);
    EXPECT_GE(row.at("iterations").get<int>(), 1);
    const double ms_per_image = row.at("ms_per_image").get<double>();
    EXPECT_NEAR(ms_per_image * batch, mean, 1e-6 * mean);
    EXPECT_NEAR(row.at("images_per_s").get<double>() * ms_per_image, 1000.0, 1e-6);
    EXPECT_GT(row.at("gflops").get<double>(), 0.0);
    EXPECT_NEAR(row.at("fraction_of_peak").get<double>(),
                row.at("gflops").get<double>() / report["peak_gflops"].get<double>(), 1e-9);
  }
  EXPECT_EQ(batches, (std::set<int>{1, 2}));
  EXPECT_EQ(report["rows"].size(), 2u) << "--default-only measures one variant";

  const std::string markdown = ReadText(markdown_path);
  EXPECT_NE(markdown.find("| variant | batch | mean ms"), std::string::npos) << markdown;
  EXPECT_NE(markdown.find("% of peak"), std::string::npos) << markdown;
  EXPECT_NE(markdown.find("|---|"), std::string::npos) << markdown;
  EXPECT_EQ(r.out, markdown) << "the table is also printed on stdout";
}

}  // namespace
}  // namespace mogserve::e2e
