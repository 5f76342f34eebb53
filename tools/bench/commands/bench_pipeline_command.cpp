// `mogserve bench pipeline`: see bench/pipeline_bench.h.
#include "bench/commands/bench_pipeline_command.h"

#include <iostream>
#include <memory>

#include "bench/pipeline_bench.h"
#include "bench/result_table.h"
#include "cli/output_file.h"

namespace mogserve::cli {
namespace {

// The bench's own options, bound to the flags; the engine flags and the output files beside them.
struct BenchPipelineFlags {
  DetectorOptions engine;
  bench::PipelineBenchOptions options;
  bool quick = false;
  BenchOutputFlags output;
};

int RunBenchPipeline(BenchPipelineFlags flags, const CLI::App& app) {
  bench::PipelineBenchOptions& options = flags.options;
  if (flags.quick) {
    // A few minutes on 2 cores; explicit flags still win.
    if (app.count("--concurrency") == 0) options.concurrency = {1, 4, 16, 64};
    if (app.count("--loads") == 0) options.loads = {0.1, 0.5, 0.9, 1.2};
    if (app.count("--seconds") == 0) options.seconds = 4.0;
  }
  if (options.real_engine) {
    StatusOr<api::EngineSetup> setup = ToEngineSetup(flags.engine);
    if (!setup.ok()) return PrintError(setup.status().message(), kExitUsage);
    options.model = setup->model;
    options.engine = setup->engine;
  }
  StatusOr<bench::PipelineBenchReport> report = bench::RunPipelineBench(options);
  if (!report.ok()) return PrintError(report.status().ToString(), kExitFatal);
  return PrintBenchTables(bench::PipelineBenchTables(*report), flags.output);
}

}  // namespace

StatusOr<ServeFlags> ParseServeArgs(const std::vector<std::string>& serve_args) {
  ServeFlags flags;
  CLI::App parser;
  AddServeFlags(parser, flags);
  try {
    std::vector<std::string> args(serve_args.rbegin(), serve_args.rend());
    parser.parse(args);
  } catch (const CLI::ParseError& e) {
    return InvalidArgument(std::string("serve flags after --: ") + e.what());
  }
  return flags;
}

void AddPoliciesFlag(CLI::App& app, std::vector<scheduler::Policy>& policies) {
  std::string defaults;
  for (scheduler::Policy p : policies) {
    defaults += (defaults.empty() ? "" : ",") + std::string(scheduler::PolicyName(p));
  }
  app.add_option_function<std::vector<std::string>>(
         "--policies",
         [&policies](const std::vector<std::string>& names) {
           policies.clear();
           for (const std::string& name : names) {
             StatusOr<scheduler::Policy> policy = scheduler::ParsePolicy(name);
             if (!policy.ok()) throw CLI::ValidationError("--policies", policy.status().message());
             policies.push_back(*policy);
           }
         },
         "Policies to compare")
      ->delimiter(',')
      ->default_str(defaults);
}

CommandRunner RegisterBenchPipelineCommand(CLI::App& bench_app) {
  auto flags = std::make_shared<BenchPipelineFlags>();
  CLI::App* app = bench_app.add_subcommand(
      "pipeline",
      "Scheduler + pipeline under load (in-process): closed and open loop per batching policy");
  AddOptionFlags(*app, flags->engine, {opt::Group::kModel});
  AddSchedulerBenchFlags(*app, flags->options);
  AddBoundedList(*app, "--concurrency", flags->options.concurrency, "Closed-loop client counts", 1,
                 1024);
  AddBoundedList(*app, "--loads", flags->options.loads,
                 "Open-loop offered loads, as fractions of capacity", 0.01, 10.0);
  AddBounded(*app, "--seconds", flags->options.seconds, "Seconds per point (first 20% is warm-up)",
             0.1, 3600.0);
  AddBounded(*app, "--instances", flags->options.instances,
             "Engine instances (one worker thread each)", 1, 64);
  AddBounded(*app, "--preprocess-threads", flags->options.preprocess_threads,
             "Pre-processing threads", 0, 64);
  app->add_flag("--real", flags->options.real_engine,
                "Run the real model (--model ...) instead of the simulation");
  app->add_flag("--quick", flags->quick,
                "Fewer points, 4 s each: concurrency 1,4,16,64 and loads 0.1,0.5,0.9,1.2");
  AddBenchOutputFlags(*app, flags->output);
  return [flags, app] { return RunBenchPipeline(*flags, *app); };
}

}  // namespace mogserve::cli
