// `mogserve bench engine`: see bench/engine_bench.h.
#include <fstream>
#include <iostream>

#include "bench/engine_bench.h"
#include "cli/commands.h"

namespace mogserve::cli {
namespace {

struct BenchFlags {
  EngineFlags engine;
  std::vector<int> batch_sizes = {1, 2, 4, 8, 16};
  int min_iterations = 10;
  double min_seconds = 2.0;
  bool default_only = false;
  std::string json_path;
  std::string markdown_path;
};

Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  return f ? Status::Ok() : Internal("cannot write " + path);
}

int RunEngineBenchCommand(const BenchFlags& flags) {
  bench::EngineBenchOptions options;
  options.engine.model_dir = ResolveModelDir(flags.engine.model_dir);
  options.engine.threads = flags.engine.threads;
  options.batch_sizes = flags.batch_sizes;
  options.min_iterations = flags.min_iterations;
  options.min_seconds = flags.min_seconds;
  options.compare_variants = !flags.default_only;
  auto report = bench::RunEngineBench(options);
  if (!report.ok()) {
    std::cerr << "error: " << report.status().ToString() << "\n";
    return kExitFatal;
  }
  const std::string markdown = bench::EngineBenchMarkdown(*report);
  std::cout << markdown;
  for (const auto& [path, text] : {std::pair{flags.json_path, bench::EngineBenchJson(*report)},
                                   std::pair{flags.markdown_path, markdown}}) {
    if (path.empty()) continue;
    if (Status s = WriteFile(path, text); !s.ok()) {
      std::cerr << "error: " << s.message() << "\n";
      return kExitFatal;
    }
  }
  return kExitOk;
}

}  // namespace

CommandRunner RegisterBenchCommand(CLI::App& app) {
  app.require_subcommand(1);
  auto flags = std::make_shared<BenchFlags>();
  CLI::App* engine = app.add_subcommand(
      "engine", "Forward-pass latency, images/s and GFLOP/s per batch size, vs the 3x3-conv peak");
  AddEngineFlags(*engine, flags->engine);
  engine->add_option("--batch-sizes", flags->batch_sizes, "Batch sizes to measure")
      ->delimiter(',')
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  engine->add_option("--iterations", flags->min_iterations, "Minimum timed passes per row")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  engine->add_option("--min-seconds", flags->min_seconds, "Minimum timed seconds per row")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  engine->add_flag("--default-only", flags->default_only,
                   "Only the default variant (skip NCHW and system-allocator rows)");
  engine->add_option("--json", flags->json_path, "Also write the results as JSON here");
  engine->add_option("--markdown", flags->markdown_path, "Also write the Markdown table here");
  return [flags] { return RunEngineBenchCommand(*flags); };
}

}  // namespace mogserve::cli
