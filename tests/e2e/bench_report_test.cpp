// End-to-end tests of `mogserve bench report`: the simulated engine with tiny settings, and the
// real SSD engine for a few seconds. Every section is present in report.md and report.json, the
// numbers are consistent with each other, and the plots exist when gnuplot does. No timing
// expectations.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "e2e_support.h"

namespace mogserve::e2e {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Tiny load points: a few seconds in all.
std::vector<std::string> TinyLoad(const std::string& out, const std::string& seconds = "0.4") {
  return {"--out",    out,       "--runs",        "5",     "--warmup",      "1",
          "--images", "6",       "--batch-sizes", "1,2,4", "--seconds",     seconds,
          "--loads",  "0.5,1.0", "--clients",     "4",     "--max-streams", "2"};
}

std::vector<std::string> SimulatedArgs(const std::string& out) {
  std::vector<std::string> args = {"bench",    "report",         "--simulate", "--sim-batch-ms",
                                   "1",        "--sim-image-ms", "2",          "--precisions",
                                   "fp32,bf16"};
  for (const std::string& a : TinyLoad(out)) args.push_back(a);
  return args;
}

bool HaveGnuplot() {
  for (const char* dir : {"/usr/bin", "/usr/local/bin", "/bin"}) {
    if (access((std::string(dir) + "/gnuplot").c_str(), X_OK) == 0) return true;
  }
  return false;
}

void ExpectOrdered(const json& latency) {
  SCOPED_TRACE(latency.dump());
  if (latency.at("count").get<int>() == 0) return;
  EXPECT_LE(latency.at("min_ms").get<double>(), latency.at("median_ms").get<double>());
  EXPECT_LE(latency.at("median_ms").get<double>(), latency.at("p95_ms").get<double>());
  EXPECT_LE(latency.at("p95_ms").get<double>(), latency.at("p99_ms").get<double>());
  EXPECT_LE(latency.at("p99_ms").get<double>(), latency.at("max_ms").get<double>());
  EXPECT_LE(latency.at("min_ms").get<double>(), latency.at("mean_ms").get<double>());
  EXPECT_LE(latency.at("mean_ms").get<double>(), latency.at("max_ms").get<double>());
  EXPECT_GE(latency.at("stddev_ms").get<double>(), 0.0);
}

// A load row: throughput over the window matches the images counted in it (the rate is taken
// between batch completions, so within a batch or so), percentiles ordered.
void ExpectConsistentLoadRow(const json& row) {
  SCOPED_TRACE(row.dump());
  const double window = row.at("window_s").get<double>();
  const double done = row.at("done").get<double>();
  const double throughput = row.at("throughput_per_s").get<double>();
  EXPECT_GT(window, 0.0);
  EXPECT_NEAR(throughput * window, done, 16 + 0.3 * done);
  ExpectOrdered(row.at("latency"));
  EXPECT_GE(row.at("busy_ratio").get<double>(), 0.0);
}

void ExpectCompleteReport(const fs::path& dir, const std::vector<std::string>& precisions,
                          const std::vector<int>& batches, int images, size_t policies) {
  const std::string md = ReadText(dir / "report.md");
  for (const char* heading :
       {"## 1. Single-image latency per precision", "## 2. Batch size per precision",
        "## 3. Traditional (naive) vs optimised", "## 4. Throughput vs latency per policy",
        "## 5. Simulated 25 FPS camera streams", "## 6. Machine",
        "## Original deployment guide (GPU) vs measured here", "## Plots"}) {
    EXPECT_NE(md.find(heading), std::string::npos) << heading << "\n" << md;
  }
  EXPECT_NE(md.find("Command: `"), std::string::npos);
  EXPECT_NE(md.find("bench report"), std::string::npos) << "the exact command is recorded";

  const json report = json::parse(ReadText(dir / "report.json"));
  for (const char* key :
       {"single_image", "batch_sizes", "traditional_vs_optimised", "throughput_vs_latency",
        "streams", "machine", "guide_comparison", "plots"}) {
    EXPECT_TRUE(report.contains(key)) << key;
  }
  EXPECT_FALSE(report["machine"].value("cpu", "").empty());
  EXPECT_GE(report["machine"].value("cores", 0), 1);
  EXPECT_GT(report["machine"].value("memory_bytes", int64_t{0}), 0);
  EXPECT_NE(report["machine"].value("torch", "").find("LibTorch"), std::string::npos);
  EXPECT_FALSE(report["machine"].value("compiler", "").empty());

  // 1: one row per precision, speed-ups consistent with the means.
  ASSERT_EQ(report["single_image"].size(), precisions.size());
  double fp32_mean = 0;
  for (const json& row : report["single_image"]) {
    if (row["precision"] == "fp32") fp32_mean = row["latency"]["mean_ms"].get<double>();
  }
  for (size_t i = 0; i < precisions.size(); ++i) {
    const json& row = report["single_image"][i];
    EXPECT_EQ(row["precision"], precisions[i]);
    EXPECT_EQ(row["latency"]["count"].get<int>(), 5);
    ExpectOrdered(row["latency"]);
    EXPECT_NEAR(row["speedup_vs_fp32"].get<double>(),
                fp32_mean / row["latency"]["mean_ms"].get<double>(), 1e-6);
  }

  // 2: total = ms/image x images; speed-ups vs the same precision's batch 1.
  ASSERT_EQ(report["batch_sizes"].size(), precisions.size() * batches.size());
  for (const json& row : report["batch_sizes"]) {
    SCOPED_TRACE(row.dump());
    EXPECT_EQ(row["images"].get<int>(), images);
    const double total = row["total_ms"].get<double>();
    const double per_image = row["ms_per_image"].get<double>();
    EXPECT_GT(total, 0.0);
    EXPECT_NEAR(per_image * images, total, 1e-6 * total);
    EXPECT_NEAR(row["images_per_s"].get<double>() * per_image, 1000.0, 1e-6);
    double batch1 = 0;
    for (const json& one : report["batch_sizes"]) {
      if (one["precision"] == row["precision"] && one["batch"] == 1) {
        batch1 = one["ms_per_image"].get<double>();
      }
    }
    EXPECT_NEAR(row["speedup_vs_batch1"].get<double>(), batch1 / per_image, 1e-6);
  }

  // 3: naive and continuous, closed and open, the open ones at the same offered rate.
  const json& comparison = report["traditional_vs_optimised"];
  ASSERT_EQ(comparison["rows"].size(), 4u);
  for (const json& row : comparison["rows"]) {
    ExpectConsistentLoadRow(row);
    EXPECT_GE(row["done"].get<int64_t>(), 0);
    if (row["mode"] == "open") {
      EXPECT_DOUBLE_EQ(row["offered_per_s"].get<double>(),
                       comparison["offered_per_s"].get<double>());
    } else {
      EXPECT_EQ(row["concurrency"].get<int>(), 4);
    }
  }

  // 4: the policies x two loads.
  ASSERT_EQ(report["throughput_vs_latency"].size(), 2 * policies);
  for (const json& row : report["throughput_vs_latency"]) ExpectConsistentLoadRow(row);

  // 5: per policy, the counts add up and the answer is within what was tried.
  ASSERT_EQ(report["streams"]["policies"].size(), policies);
  for (const json& policy : report["streams"]["policies"]) {
    SCOPED_TRACE(policy.dump());
    const int best = policy["max_realtime_streams"].get<int>();
    ASSERT_FALSE(policy["tried"].empty());
    EXPECT_LE(policy["tried"].size(), 2u);
    EXPECT_LE(best, static_cast<int>(policy["tried"].size()));
    EXPECT_GE(best, 0);
    for (const json& p : policy["tried"]) {
      const int64_t frames = p["frames"].get<int64_t>();
      EXPECT_GT(frames, 0);
      EXPECT_EQ(p["answered"].get<int64_t>(),
                p["in_time"].get<int64_t>() + p["late"].get<int64_t>());
      EXPECT_EQ(frames, p["answered"].get<int64_t>() + p["superseded"].get<int64_t>() +
                            p["rejected"].get<int64_t>() + p["failed"].get<int64_t>());
      EXPECT_LE(p["realtime_streams"].get<int>(), p["streams"].get<int>());
      EXPECT_EQ(p["all_realtime"].get<bool>(), p["realtime_streams"] == p["streams"]);
      if (p["streams"].get<int>() <= best) {
        EXPECT_TRUE(p["all_realtime"].get<bool>());
      }
      ExpectOrdered(p["latency"]);
    }
  }

  EXPECT_EQ(report["guide_comparison"].size(), 7u);

  // Plots: PNG and SVG, non-empty, when gnuplot is installed; otherwise the report says why.
  if (HaveGnuplot()) {
    EXPECT_TRUE(report["plots"]["generated"].get<bool>()) << report["plots"].dump();
    for (const char* name : {"batch_sizes", "latency_vs_throughput", "streams"}) {
      for (const char* ext : {".png", ".svg"}) {
        const fs::path plot = dir / (std::string(name) + ext);
        ASSERT_TRUE(fs::exists(plot)) << plot;
        EXPECT_GT(fs::file_size(plot), 100u) << plot;
      }
      const std::string png = ReadText(dir / (std::string(name) + ".png"));
      EXPECT_EQ(png.substr(1, 3), "PNG");
      EXPECT_NE(ReadText(dir / (std::string(name) + ".svg")).find("<svg"), std::string::npos);
      EXPECT_NE(md.find(std::string(name) + ".png"), std::string::npos);
    }
  } else {
    EXPECT_FALSE(report["plots"]["generated"].get<bool>());
    EXPECT_NE(md.find("Plots skipped"), std::string::npos);
  }
}

TEST(BenchReportE2E, SimulatedReportIsCompleteAndConsistent) {
  TempDir tmp;
  const ProcessResult r = RunMogserve(SimulatedArgs(tmp / "report"));
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  ExpectCompleteReport(tmp.path() / "report", {"fp32", "bf16"}, {1, 2, 4}, 6, 4);
  const json report = json::parse(ReadText(tmp.path() / "report" / "report.json"));
  EXPECT_TRUE(report["simulated"].get<bool>());
  EXPECT_GT(report["photos"].get<int>(), 0) << "the test photos are found: " << report["images"];
}

TEST(BenchReportE2E, WithoutGnuplotTheReportSaysThePlotsWereSkipped) {
  TempDir tmp;
  std::vector<std::string> args = SimulatedArgs(tmp / "report");
  for (const char* a : {"--gnuplot", "/nonexistent/gnuplot", "--policies", "naive,continuous"}) {
    args.push_back(a);
  }
  const ProcessResult r = RunMogserve(args);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  const json report = json::parse(ReadText(tmp.path() / "report" / "report.json"));
  EXPECT_FALSE(report["plots"]["generated"].get<bool>());
  EXPECT_NE(report["plots"]["note"].get<std::string>().find("gnuplot not found"),
            std::string::npos);
  EXPECT_NE(ReadText(tmp.path() / "report" / "report.md").find("Plots skipped"), std::string::npos);
  EXPECT_FALSE(fs::exists(tmp.path() / "report" / "streams.png"));
}

TEST(BenchReportE2E, BadFlagsAreUsageErrorsNamingTheFlag) {
  TempDir tmp;
  const std::string out = tmp / "report";
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--batch-sizes", "0"}, "--batch-sizes"},
      {{"--runs", "0"}, "--runs"},
      {{"--precisions", "fp8"}, "--precisions"},
      {{"--policies", "fastest"}, "--policies"},
      {{"--size", "100", "--model", "mogface", "--synthetic-weights", "r50"}, "--size"},
  };
  for (const auto& [flags, name] : cases) {
    std::vector<std::string> args = {"bench", "report", "--simulate", "--out", out};
    args.insert(args.end(), flags.begin(), flags.end());
    const ProcessResult r = RunMogserve(args);
    EXPECT_EQ(r.exit_code, 2) << r.Describe();
    EXPECT_NE(r.err.find(name), std::string::npos) << r.Describe();
  }
  EXPECT_FALSE(fs::exists(tmp.path() / "report" / "report.md"));
}

TEST(BenchReportE2E, RealSsdReportIsComplete) {
  TempDir tmp;
  std::vector<std::string> args = {"bench",        "report",    "--model-dir",
                                   TestModelDir(), "--threads", "1"};
  // Two policies, 1 s points: the real engine is slower than the simulation.
  for (const std::string& a : TinyLoad(tmp / "report", "1")) args.push_back(a);
  for (const char* a : {"--policies", "naive,continuous"}) args.push_back(a);
  const ProcessResult r = RunMogserve(args);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  ExpectCompleteReport(tmp.path() / "report", {"fp32"}, {1, 2, 4}, 6, 2);
  const json report = json::parse(ReadText(tmp.path() / "report" / "report.json"));
  EXPECT_FALSE(report["simulated"].get<bool>());
  EXPECT_NE(report["engine"].get<std::string>().find("ssd"), std::string::npos);
}

}  // namespace
}  // namespace mogserve::e2e
