// End-to-end smoke tests of `mogserve bench engine` (SSD, and MogFace against the Python
// reference): the run completes and its JSON and Markdown reports are internally consistent. No
// timing expectations beyond consistency.
#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <string>
#include <vector>

#include "common/cpu_info.h"
#include "e2e_support.h"
#include "support/cpu_skip.h"

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
    // And against the machine's own FP32 peak (the FMA loop), not LibTorch's convolution.
    EXPECT_NEAR(row.at("fraction_of_machine_peak").get<double>(),
                row.at("gflops").get<double>() / report["machine_fp32_peak_gflops"].get<double>(),
                1e-9);
  }
  EXPECT_EQ(batches, (std::set<int>{1, 2}));
  EXPECT_GT(report.value("machine_fp32_peak_gflops", 0.0), 0.0);
  EXPECT_EQ(report.value("cpu", "").rfind(IsaLevelName(HostCpu().Level()), 0), 0u)
      << "the CPU's ISA level first: " << report.value("cpu", "");
  EXPECT_EQ(report["rows"].size(), 2u) << "--default-only measures one variant";

  const std::string markdown = ReadText(markdown_path);
  EXPECT_NE(markdown.find("| variant | precision | batch | mean ms"), std::string::npos)
      << markdown;
  EXPECT_NE(markdown.find("% of its conv peak"), std::string::npos) << markdown;
  EXPECT_NE(markdown.find("% of FP32 machine peak"), std::string::npos) << markdown;
  EXPECT_NE(markdown.find("|---|"), std::string::npos) << markdown;
  EXPECT_EQ(r.out, markdown) << "the table is also printed on stdout";
}

// The SSD at FP32, BF16 and INT8 in one run (the build's calibration): one row each, each rated
// against its own precision's measured 3x3-conv peak. BF16 only where the CPU runs it.
TEST(BenchE2E, SsdEngineBenchMeasuresEachPrecisionAgainstItsOwnPeak) {
  TempDir tmp;
  const std::string json_path = tmp / "bench.json";
  const bool bf16 = ::mogserve::testing::NoBf16Reason().empty();
  const std::vector<std::string> want = bf16 ? std::vector<std::string>{"fp32", "bf16", "int8"}
                                             : std::vector<std::string>{"fp32", "int8"};
  const ProcessResult r =
      RunMogserve({"bench", "engine", "--model-dir", TestModelDir(), "--batch-sizes", "1",
                   "--iterations", "1", "--min-seconds", "0", "--default-only", "--precisions",
                   bf16 ? "fp32,bf16,int8" : "fp32,int8", "--json", json_path});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  const nlohmann::json report = nlohmann::json::parse(ReadText(json_path));
  ASSERT_EQ(report["rows"].size(), want.size()) << report.dump(2);
  std::vector<std::string> seen;
  for (const nlohmann::json& row : report["rows"]) {
    SCOPED_TRACE(row.dump());
    const std::string precision = row.at("precision").get<std::string>();
    seen.push_back(precision);
    ASSERT_TRUE(report["peaks"].contains(precision)) << report["peaks"].dump();
    const double peak = report["peaks"][precision]["gflops"].get<double>();
    EXPECT_GT(peak, 0.0);
    EXPECT_NEAR(row.at("fraction_of_peak").get<double>(), row.at("gflops").get<double>() / peak,
                1e-9);
  }
  EXPECT_EQ(seen, want);
  EXPECT_NE(r.out.find("| channels-last, caching allocator | int8 | 1 |"), std::string::npos)
      << r.out;
}

// The MogFace mode's tiny configuration: R50 at 64x64, batch 1, one timed pass per row.
std::vector<std::string> TinyMogFaceBench(const TempDir& tmp, const std::string& precisions) {
  return {"bench",
          "engine",
          "--model",
          "mogface",
          "--synthetic-weights",
          "r50",
          "--sizes",
          "64",
          "--batch-sizes",
          "1",
          "--precisions",
          precisions,
          "--warmup",
          "0",
          "--iterations",
          "1",
          "--min-seconds",
          "0",
          "--json",
          tmp / "bench.json",
          "--markdown",
          tmp / "bench.md"};
}

std::string ReferenceScript() {
  return (TestDataDir().parent_path() / "reference" / "bench_reference.py").string();
}

ProcessOptions SlowRun() {
  ProcessOptions options;
  options.timeout = std::chrono::seconds(600);  // a loaded 2-core machine
  return options;
}

// Every row measured, with positive numbers and the ratio to the reference.
TEST(BenchE2E, MogFaceBenchComparesWithTheReference) {
  MOGSERVE_SKIP_WITHOUT_BF16();
  TempDir tmp;
  std::vector<std::string> args = TinyMogFaceBench(tmp, "fp32,bf16");
  args.insert(args.end(), {"--reference", "--reference-script", ReferenceScript()});
  const ProcessResult r = RunMogserve(args, SlowRun());
  ASSERT_EQ(r.exit_code, 0) << r.Describe();

  const nlohmann::json report = nlohmann::json::parse(ReadText(tmp / "bench.json"));
  SCOPED_TRACE(report.dump(2));
  EXPECT_EQ(report.at("model"), "mogface");
  ASSERT_TRUE(report.at("reference_measured").get<bool>()) << report.at("reference");
  EXPECT_GT(report.at("peaks").at("fp32").at("gflops").get<double>(), 0.0);
  EXPECT_GT(report.at("peaks").at("bf16").at("gflops").get<double>(), 0.0);
  EXPECT_GT(report.at("fp32_speedup_min").get<double>(), 0.0);
  EXPECT_GT(report.at("bf16_speedup_vs_fp32_reference_min").get<double>(), 0.0);
  std::set<std::string> precisions;
  for (const nlohmann::json& row : report.at("rows")) {
    precisions.insert(row.at("precision").get<std::string>());
    EXPECT_EQ(row.at("size"), 64);
    EXPECT_EQ(row.at("batch"), 1);
    EXPECT_EQ(row.at("iterations"), 1);
    for (const char* key : {"mean_ms", "ms_per_image", "images_per_s", "macs_per_image", "gflops",
                            "peak_gflops", "fraction_of_peak", "memory_peak_bytes"}) {
      EXPECT_GT(row.at(key).get<double>(), 0.0) << key;
    }
    EXPECT_NEAR(row.at("fraction_of_peak").get<double>(),
                row.at("gflops").get<double>() / row.at("peak_gflops").get<double>(), 1e-9);
    EXPECT_EQ(row.at("peak_gflops"),
              report.at("peaks").at(row.at("precision").get<std::string>()).at("gflops"));
    const nlohmann::json& ref = row.at("reference");
    for (const char* key :
         {"mean_ms", "ms_per_image", "speedup", "fp32_ms_per_image", "speedup_vs_fp32"}) {
      EXPECT_GT(ref.at(key).get<double>(), 0.0) << key;
    }
    EXPECT_NEAR(ref.at("speedup").get<double>(),
                ref.at("ms_per_image").get<double>() / row.at("ms_per_image").get<double>(), 1e-9);
  }
  EXPECT_EQ(precisions, (std::set<std::string>{"fp32", "bf16"}));
  EXPECT_EQ(report.at("rows").size(), 2u);

  const std::string markdown = ReadText(tmp / "bench.md");
  EXPECT_NE(markdown.find("| × FP32 ref |"), std::string::npos) << markdown;
  EXPECT_NE(markdown.find("Against the eager FP32 reference"), std::string::npos) << markdown;
  EXPECT_EQ(r.out, markdown) << "the table is also printed on stdout";
}

// ONNX Runtime on the same network (tools/export_onnx.py + tools/ort_bench.js, the npm package
// scripts/setup.sh installs), for the SSD and a small MogFace: a measured column per row whose
// ratio is ONNX Runtime's median over ours.
TEST(BenchE2E, EngineBenchComparesWithOnnxRuntime) {
  TempDir tmp;
  const std::vector<std::vector<std::string>> runs = {
      {"bench", "engine", "--model-dir", TestModelDir(), "--batch-sizes", "1", "--iterations", "1",
       "--min-seconds", "0", "--default-only", "--onnxruntime", "--json", tmp / "bench.json"},
      [&] {
        std::vector<std::string> args = TinyMogFaceBench(tmp, "fp32");
        args.push_back("--onnxruntime");
        return args;
      }()};
  for (const std::vector<std::string>& args : runs) {
    const ProcessResult r = RunMogserve(args, SlowRun());
    ASSERT_EQ(r.exit_code, 0) << r.Describe();
    const nlohmann::json report = nlohmann::json::parse(ReadText(tmp / "bench.json"));
    SCOPED_TRACE(report.dump(2));
    ASSERT_TRUE(report.at("onnxruntime_measured").get<bool>()) << report.at("onnxruntime");
    EXPECT_NE(report.at("onnxruntime").get<std::string>().find("onnxruntime-node 1.30.0"),
              std::string::npos);
    ASSERT_EQ(report.at("rows").size(), 1u);
    const nlohmann::json& row = report["rows"][0];
    const double ort = row.at("onnxruntime_ms_per_image").get<double>();
    EXPECT_GT(ort, 0.0);
    EXPECT_NEAR(row.at("speedup_vs_onnxruntime").get<double>(),
                ort / (row.at("median_ms").get<double>() / row.at("batch").get<double>()),
                1e-9 * ort);
  }
}

// Without a usable interpreter the bench says so and measures the engine anyway.
TEST(BenchE2E, MogFaceBenchContinuesWithoutTheReference) {
  TempDir tmp;
  std::vector<std::string> args = TinyMogFaceBench(tmp, "fp32");
  args.insert(args.end(), {"--reference", "--reference-python", tmp / "no-such-python"});
  const ProcessResult r = RunMogserve(args, SlowRun());
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_NE(r.err.find("not measured"), std::string::npos) << r.err;
  const nlohmann::json report = nlohmann::json::parse(ReadText(tmp / "bench.json"));
  EXPECT_FALSE(report.at("reference_measured").get<bool>());
  ASSERT_EQ(report.at("rows").size(), 1u);
  EXPECT_GT(report["rows"][0].at("gflops").get<double>(), 0.0);
  EXPECT_FALSE(report["rows"][0].contains("reference"));
}

// A CPU without AVX-512 (emulated: MOGSERVE_CPU_ISA=avx2): bf16 named by the user is refused
// with what the CPU lacks (exit 3), never an abort; bf16 from the defaults is left out with a
// note and the rest measured.
TEST(BenchE2E, Bf16OnAnAvx2CpuIsRefusedOrLeftOutNeverAnAbort) {
  TempDir tmp;
  ProcessOptions avx2 = SlowRun();
  avx2.env = {{"MOGSERVE_CPU_ISA", "avx2"}};
  const ProcessResult named = RunMogserve(TinyMogFaceBench(tmp, "fp32,bf16"), avx2);
  EXPECT_EQ(named.exit_code, 3) << named.Describe();
  EXPECT_NE(named.err.find("--precisions: precision bf16 needs a CPU with AVX-512"),
            std::string::npos)
      << named.err;
  EXPECT_NE(named.err.find("avx512bw avx512vl avx512dq"), std::string::npos) << named.err;
  EXPECT_EQ(named.err.find("terminate"), std::string::npos) << named.err;
  std::vector<std::string> defaults = TinyMogFaceBench(tmp, "");
  defaults.erase(defaults.begin() + 10, defaults.begin() + 12);  // no --precisions
  const ProcessResult left_out = RunMogserve(defaults, avx2);
  ASSERT_EQ(left_out.exit_code, 0) << left_out.Describe();
  EXPECT_NE(left_out.err.find("note: bf16 left out: precision bf16 needs"), std::string::npos)
      << left_out.err;
  const nlohmann::json report = nlohmann::json::parse(ReadText(tmp / "bench.json"));
  ASSERT_EQ(report.at("rows").size(), 1u) << report.dump(2);
  EXPECT_EQ(report["rows"][0].at("precision"), "fp32");
  EXPECT_NE(report.at("cpu").get<std::string>().find("capped at avx2 by MOGSERVE_CPU_ISA"),
            std::string::npos)
      << report.at("cpu");
  EXPECT_EQ(report.at("machine_peak_isa"), "avx2+fma");
}

TEST(BenchE2E, MogFaceOnlyFlagsAreRefusedForSsd) {
  const ProcessResult r =
      RunMogserve({"bench", "engine", "--model-dir", TestModelDir(), "--reference"});
  EXPECT_EQ(r.exit_code, 2) << r.Describe();
  EXPECT_NE(r.err.find("--model mogface"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace mogserve::e2e
