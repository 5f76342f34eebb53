// `mogserve bench pipeline`: see bench/pipeline_bench.h.
#include "cli/bench_pipeline_command.h"

#include <iostream>
#include <memory>

#include "bench/pipeline_bench.h"
#include "cli/output_file.h"

namespace mogserve::cli {
namespace {

struct BenchPipelineFlags {
  EngineFlags engine;
  std::vector<std::string> policies = {"naive", "dynamic", "continuous", "adaptive"};
  std::vector<int> concurrency = {1, 2, 4, 8, 16, 32, 64};
  std::vector<double> loads = {0.1, 0.25, 0.5, 0.75, 0.9, 1.0, 1.2};
  double seconds = 6.0;
  int max_batch_size = 16;
  double max_delay_ms = 5.0;
  double batch_knee = 0.95;
  int instances = 1;
  int preprocess_threads = 1;
  double sim_intercept_ms = 5.0;
  double sim_per_image_ms = 26.0;
  bool real = false;
  bool quick = false;
  std::string json_path;
  std::string markdown_path;
};

int RunBenchPipeline(BenchPipelineFlags flags, const CLI::App& app) {
  bench::PipelineBenchOptions options;
  options.policies.clear();
  for (const std::string& name : flags.policies) {
    StatusOr<scheduler::Policy> policy = scheduler::ParsePolicy(name);
    if (!policy.ok()) {
      std::cerr << "error: --policies: " << policy.status().message() << "\n";
      return kExitUsage;
    }
    options.policies.push_back(*policy);
  }
  if (flags.quick) {
    // A few minutes on 2 cores; explicit flags still win.
    if (app.count("--concurrency") == 0) flags.concurrency = {1, 4, 16, 64};
    if (app.count("--loads") == 0) flags.loads = {0.1, 0.5, 0.9, 1.2};
    if (app.count("--seconds") == 0) flags.seconds = 4.0;
  }
  options.concurrency = flags.concurrency;
  options.loads = flags.loads;
  options.seconds = flags.seconds;
  options.max_batch_size = flags.max_batch_size;
  options.max_delay_ms = flags.max_delay_ms;
  options.batch_knee = flags.batch_knee;
  options.instances = flags.instances;
  options.preprocess_threads = flags.preprocess_threads;
  options.sim_intercept_ms = flags.sim_intercept_ms;
  options.sim_per_image_ms = flags.sim_per_image_ms;
  options.real_engine = flags.real;
  if (flags.real) {
    flags.engine.model_dir = ResolveModelDir(flags.engine.model_dir);
    StatusOr<engine::EngineOptions> engine_options = ToEngineOptions(flags.engine);
    if (!engine_options.ok()) {
      std::cerr << "error: " << engine_options.status().message() << "\n";
      return kExitUsage;
    }
    options.engine = *engine_options;
  }
  StatusOr<bench::PipelineBenchReport> report = bench::RunPipelineBench(options);
  if (!report.ok()) {
    std::cerr << "error: " << report.status().ToString() << "\n";
    return kExitFatal;
  }
  return PrintBenchResult(bench::PipelineBenchMarkdown(*report), bench::PipelineBenchJson(*report),
                          flags.json_path, flags.markdown_path);
}

}  // namespace

CommandRunner RegisterBenchPipelineCommand(CLI::App& bench_app) {
  auto flags = std::make_shared<BenchPipelineFlags>();
  CLI::App* app = bench_app.add_subcommand(
      "pipeline",
      "Scheduler + pipeline under load (in-process): closed and open loop per batching policy");
  AddEngineFlags(*app, flags->engine);
  app->add_option("--policies", flags->policies, "Policies to compare")
      ->delimiter(',')
      ->capture_default_str();
  app->add_option("--concurrency", flags->concurrency, "Closed-loop client counts")
      ->delimiter(',')
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  app->add_option("--loads", flags->loads, "Open-loop offered loads, as fractions of capacity")
      ->delimiter(',')
      ->check(CLI::Range(0.01, 10.0))
      ->capture_default_str();
  app->add_option("--seconds", flags->seconds, "Seconds per point (first 20% is warm-up)")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
  app->add_option("--max-batch-size", flags->max_batch_size, "Largest batch")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app->add_option("--max-delay-ms", flags->max_delay_ms, "Longest wait to grow a batch")
      ->check(CLI::Range(0.0, 10000.0))
      ->capture_default_str();
  app->add_option("--batch-knee", flags->batch_knee,
                  "Cap batches at the smallest warm-up batch size reaching this fraction of the "
                  "best measured throughput (0: --max-batch-size only)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app->add_option("--instances", flags->instances, "Engine instances (one worker thread each)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app->add_option("--preprocess-threads", flags->preprocess_threads, "Pre-processing threads")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  app->add_option("--sim-batch-ms", flags->sim_intercept_ms,
                  "Simulated engine: fixed milliseconds per batch (b in a*n + b)")
      ->check(CLI::Range(0.0, 100000.0))
      ->capture_default_str();
  app->add_option("--sim-image-ms", flags->sim_per_image_ms,
                  "Simulated engine: milliseconds per image (a in a*n + b)")
      ->check(CLI::Range(0.0, 100000.0))
      ->capture_default_str();
  app->add_flag("--real", flags->real,
                "Run the real model (--model ...) instead of the simulation");
  app->add_flag("--quick", flags->quick,
                "Fewer points, 4 s each: concurrency 1,4,16,64 and loads 0.1,0.5,0.9,1.2");
  app->add_option("--json", flags->json_path, "Also write the results as JSON here");
  app->add_option("--markdown", flags->markdown_path, "Also write the Markdown here");
  return [flags, app] { return RunBenchPipeline(*flags, *app); };
}

}  // namespace mogserve::cli
