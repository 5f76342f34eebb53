// The report's guide comparison, Markdown and JSON on a hand-built report: no engine, no timing.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "bench/bench_report.h"

namespace mogserve::bench {
namespace {

PipelineBenchRow LoadRow(const std::string& policy, const std::string& mode, double throughput,
                         double busy, int64_t engine_peak, double stddev) {
  PipelineBenchRow row;
  row.policy = policy;
  row.mode = mode;
  row.concurrency = mode == "closed" ? 16 : 0;
  row.offered_per_s = mode == "open" ? 20 : 0;
  row.window_s = 4;
  row.done = static_cast<int64_t>(throughput * 4);
  row.throughput_per_s = throughput;
  row.busy_ratio = busy;
  row.engine_peak_bytes = engine_peak;
  row.peak_rss_bytes = int64_t{5} << 30;  // the process, cache included: not what is compared
  row.latency = Summarize({10, 20, 30, 40});
  row.latency.stddev_ms = stddev;
  return row;
}

BenchReport HandBuilt() {
  BenchReport r;
  r.command = "mogserve bench report --quick";
  r.engine = "mogface r101 on cpu";
  SingleImageRow fp32{"fp32", Summarize({40, 50, 60}), 1.0};
  SingleImageRow bf16{"bf16", Summarize({20, 25, 30}), 2.0};
  r.single = {fp32, bf16};
  r.batches = {{"fp32", 1, 100, 5000, 50, 20, 1, 0}, {"fp32", 32, 100, 1000, 10, 100, 5, 0}};
  r.comparison = {LoadRow("naive", "closed", 20, 0.4, 400 << 20, 0),
                  LoadRow("continuous", "closed", 60, 0.9, 300 << 20, 0),
                  LoadRow("naive", "open", 18, 0.3, 0, 40),
                  LoadRow("continuous", "open", 18, 0.2, 0, 10)};
  r.curve = {LoadRow("naive", "open", 18, 0.3, 0, 40), LoadRow("dynamic", "open", 18, 0.3, 0, 4)};
  StreamSearch naive{"naive", 1, {}};
  StreamSearch continuous{"continuous", 3, {}};
  StreamPoint p;
  p.streams = 1;
  p.frames = 100;
  p.in_time = 98;
  p.answered = 98;
  p.superseded = 2;
  p.realtime_streams = 1;
  p.all_realtime = true;
  naive.tried = {p};
  continuous.tried = {p};
  r.streams = {naive, continuous};
  r.plots_note = "gnuplot not found (gnuplot)";
  return r;
}

// The claims as shipped in docs/bench/guide_claims.json.
std::vector<GuideClaim> Claims() {
  StatusOr<std::vector<GuideClaim>> claims = LoadGuideClaims(MOGSERVE_GUIDE_CLAIMS);
  EXPECT_TRUE(claims.ok()) << claims.status().ToString();
  return claims.ok() ? *claims : std::vector<GuideClaim>{};
}

const GuideRow& Find(const std::vector<GuideRow>& rows, const std::string& prefix) {
  for (const GuideRow& g : rows) {
    if (g.claim.rfind(prefix, 0) == 0) return g;
  }
  ADD_FAILURE() << "no row " << prefix;
  return rows.front();
}

TEST(BenchReportOutput, GuideComparisonTakesTheRatiosFromTheSections) {
  const std::vector<GuideRow> rows = CompareWithGuide(HandBuilt(), Claims());
  ASSERT_EQ(rows.size(), 7u);
  EXPECT_NEAR(Find(rows, "Reduced precision").measured_ratio, 2.0, 1e-9);
  EXPECT_NEAR(Find(rows, "Reduced precision").guide_ratio, 45.2 / 14.7, 1e-9);
  EXPECT_NEAR(Find(rows, "Batch 32").measured_ratio, 5.0, 1e-9);
  EXPECT_NEAR(Find(rows, "Throughput").measured_ratio, 3.0, 1e-9);
  EXPECT_NEAR(Find(rows, "Accelerator").measured_ratio, 0.9 / 0.4, 1e-9);
  EXPECT_NEAR(Find(rows, "Peak memory").measured_ratio, 0.75, 1e-9);
  EXPECT_NEAR(Find(rows, "Real-time").measured_ratio, 3.0, 1e-9);
  EXPECT_NEAR(Find(rows, "Latency standard deviation").measured_ratio, 0.25, 1e-9);
}

TEST(BenchReportOutput, MissingSectionsAreNotMeasuredRatherThanZeroRatios) {
  BenchReport r;
  const std::vector<GuideRow> rows = CompareWithGuide(r, Claims());
  ASSERT_EQ(rows.size(), 7u);
  for (const GuideRow& g : rows) {
    EXPECT_EQ(g.measured_ratio, 0) << g.claim;
    EXPECT_NE(g.measured.find("not measured"), std::string::npos) << g.claim;
  }
}

TEST(BenchReportOutput, MarkdownHasEverySectionAndJsonParses) {
  BenchReport r = HandBuilt();
  r.guide = CompareWithGuide(r, Claims());
  const std::string md = Print(BenchReportTables(r), Format::kMarkdown);
  for (const char* s : {"## 1.", "## 2.", "## 3.", "## 4.", "## 5.", "## 6.",
                        "## Original deployment guide (GPU) vs measured here", "Plots skipped",
                        "| bf16 | 3 |", "2.00x", "`mogserve bench report --quick`"}) {
    EXPECT_NE(md.find(s), std::string::npos) << s << "\n" << md;
  }
  const nlohmann::json j = nlohmann::json::parse(Print(BenchReportTables(r), Format::kJson));
  EXPECT_EQ(j["single_image"].size(), 2u);
  EXPECT_EQ(j["batch_sizes"][1]["speedup_vs_batch1"].get<double>(), 5.0);
  EXPECT_EQ(j["traditional_vs_optimised"]["rows"].size(), 4u);
  EXPECT_EQ(j["streams"]["policies"][1]["max_realtime_streams"].get<int>(), 3);
  EXPECT_EQ(j["guide_comparison"].size(), 7u);
  EXPECT_FALSE(j["plots"]["generated"].get<bool>());
}

// A scratch file holding `text`.
std::string WriteClaims(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

TEST(GuideClaims, MissingOrBadFilesAreClearErrors) {
  StatusOr<std::vector<GuideClaim>> missing = LoadGuideClaims("/no/such/guide_claims.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("/no/such/guide_claims.json"), std::string::npos);

  EXPECT_EQ(LoadGuideClaims("").status().code(), StatusCode::kNotFound);

  const std::string unknown = WriteClaims(
      "unknown_claim.json", R"({"claims": [{"id": "fps_per_watt", "claim": "c", "guide": "g",
                                            "before": 1, "after": 2, "ratio": "after/before"}]})");
  const Status s = LoadGuideClaims(unknown).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("claims[0]: id \"fps_per_watt\" is not one bench report measures"),
            std::string::npos)
      << s.message();

  const std::string zero =
      WriteClaims("zero_claim.json", R"({"claims": [{"id": "throughput", "claim": "c", "guide": "g",
                                         "before": 0, "after": 2, "ratio": "after/before"}]})");
  EXPECT_NE(LoadGuideClaims(zero).status().message().find("\"before\" must be a number > 0"),
            std::string::npos);

  const std::string ratio = WriteClaims(
      "ratio_claim.json", R"({"claims": [{"id": "throughput", "claim": "c", "guide": "g",
                                          "before": 1, "after": 2, "ratio": "faster"}]})");
  EXPECT_NE(LoadGuideClaims(ratio).status().message().find("\"ratio\" must be"), std::string::npos);

  EXPECT_NE(
      LoadGuideClaims(WriteClaims("not_json.json", "{")).status().message().find("not valid JSON"),
      std::string::npos);
}

TEST(GuideClaims, TheShippedFileHasEveryClaimTheReportMeasures) {
  const std::vector<GuideClaim> claims = Claims();
  ASSERT_EQ(claims.size(), KnownGuideClaimIds().size());
  for (size_t i = 0; i < claims.size(); ++i) EXPECT_EQ(claims[i].id, KnownGuideClaimIds()[i]);
  EXPECT_NEAR(claims[2].ratio, 65.0 / 22, 1e-9);  // throughput: after / before
  EXPECT_NEAR(claims[6].ratio, 0.25, 1e-9);       // latency stddev: -75%
}

}  // namespace
}  // namespace mogserve::bench
