// `mogserve bench engine`: see bench/engine_bench.h.
#include <iostream>

#include "bench/engine_bench.h"
#include "bench/commands/bench_pipeline_command.h"
#include "cli/commands.h"
#include "cli/output_file.h"
#include "cli/serving_stack.h"

namespace mogserve::cli {
namespace {

// Per-row defaults where the models differ: SSD rows take ~30 ms, MogFace rows seconds (R101
// at 640x640, FP32, batch 4: ~40 s per pass on 2 cores).
struct RowDefaults {
  std::vector<int> batch_sizes;
  int warmup;
  int min_iterations;
  double min_seconds;
};
const RowDefaults kSsdDefaults = {{1, 2, 4, 8, 16}, 2, 10, 2.0};
const RowDefaults kMogFaceDefaults = {{1, 2, 4}, 1, 2, 0.0};

struct BenchFlags {
  DetectorOptions engine;
  RowDefaults rows = kSsdDefaults;
  CLI::Option* batch_sizes_option = nullptr;
  CLI::Option* warmup_option = nullptr;
  CLI::Option* iterations_option = nullptr;
  CLI::Option* min_seconds_option = nullptr;
  CLI::Option* precision_option = nullptr;
  bool default_only = false;
  // MogFace only.
  std::vector<int> sizes = {320, 640};
  std::vector<std::string> precisions;
  bool reference = false;
  std::string reference_python;
  std::string reference_script;
  bool onnxruntime = false;
  CLI::Option* sizes_option = nullptr;
  BenchOutputFlags output;
};

// The rows to measure: the model's defaults unless a flag was given.
void ApplyRowFlags(const BenchFlags& flags, const RowDefaults& defaults,
                   bench::EngineBenchOptions& options) {
  options.batch_sizes =
      flags.batch_sizes_option->count() > 0 ? flags.rows.batch_sizes : defaults.batch_sizes;
  options.warmup = flags.warmup_option->count() > 0 ? flags.rows.warmup : defaults.warmup;
  options.min_iterations =
      flags.iterations_option->count() > 0 ? flags.rows.min_iterations : defaults.min_iterations;
  options.min_seconds =
      flags.min_seconds_option->count() > 0 ? flags.rows.min_seconds : defaults.min_seconds;
}

// --sizes, --precisions (default: --precision if given, else fp32 and bf16) and --reference*.
Status ApplyMogFaceFlags(const BenchFlags& flags, bench::EngineBenchOptions& options) {
  options.sizes = flags.sizes;
  std::vector<std::string> names = flags.precisions;
  const bool defaulted = names.empty() && flags.precision_option->count() == 0;
  if (names.empty()) {
    names = defaulted ? std::vector<std::string>{"fp32", "bf16"}
                      : std::vector<std::string>{flags.engine.precision};
  }
  MOGSERVE_ASSIGN_OR_RETURN(options.precisions,
                            ParsePrecisions(names, defaulted, options.engine, "--precisions"));
  options.reference = flags.reference;
  options.reference_python = flags.reference_python;
  options.reference_script = flags.reference_script;
  return Status::Ok();
}

StatusOr<bench::EngineBenchOptions> ToBenchOptions(const BenchFlags& flags) {
  bench::EngineBenchOptions options;
  MOGSERVE_ASSIGN_OR_RETURN(api::EngineSetup setup, ToEngineSetup(flags.engine));
  options.model = setup.model;
  options.engine = setup.engine;
  options.compare_variants = !flags.default_only;
  options.onnxruntime = flags.onnxruntime;
  options.reference_python = flags.reference_python;  // the ONNX export's interpreter too
  if (options.model.spec->weights == model::ModelSpec::Weights::kCheckpoint) {
    ApplyRowFlags(flags, kMogFaceDefaults, options);
    MOGSERVE_RETURN_IF_ERROR(ApplyMogFaceFlags(flags, options));
  } else {
    const bool onnx = options.model.spec->weights == model::ModelSpec::Weights::kOnnxFile;
    if ((flags.sizes_option->count() > 0 && !onnx) || flags.reference) {
      return InvalidArgument(
          "--sizes is for --model mogface and ONNX files of any input size (the SSD takes a fixed "
          "512x512 input); --reference is for --model mogface");
    }
    options.sizes = flags.sizes_option->count() > 0 ? flags.sizes : std::vector<int>{640};
    ApplyRowFlags(flags, kSsdDefaults, options);
    // SSD: --precisions measures the default variant at each, in one run (default: --precision).
    options.precisions = {options.engine.precision};
    if (!flags.precisions.empty()) {
      MOGSERVE_ASSIGN_OR_RETURN(
          options.precisions,
          ParsePrecisions(flags.precisions, /*defaulted=*/false, options.engine, "--precisions"));
    }
  }
  return options;
}

int RunEngineBenchCommand(const BenchFlags& flags) {
  auto options = ToBenchOptions(flags);
  if (!options.ok()) return PrintError(options.status().message(), ExitCodeFor(options.status()));
  auto report = bench::RunEngineBench(*options);
  if (!report.ok()) return PrintError(report.status().ToString(), kExitFatal);
  return PrintBenchTables(bench::EngineBenchTables(*report), flags.output);
}

void AddRowFlags(CLI::App& engine, BenchFlags& flags) {
  flags.batch_sizes_option =
      engine
          .add_option("--batch-sizes", flags.rows.batch_sizes,
                      "Batch sizes to measure (default: SSD 1,2,4,8,16; MogFace 1,2,4)")
          ->delimiter(',')
          ->check(CLI::Range(1, 256));
  flags.warmup_option = engine
                            .add_option("--warmup", flags.rows.warmup,
                                        "Untimed passes per row (default: SSD 2, MogFace 1)")
                            ->check(CLI::Range(0, 1000));
  flags.iterations_option =
      engine
          .add_option("--iterations", flags.rows.min_iterations,
                      "Minimum timed passes per row (default: SSD 10, MogFace 2)")
          ->check(CLI::Range(1, 100000));
  flags.min_seconds_option =
      engine
          .add_option("--min-seconds", flags.rows.min_seconds,
                      "Minimum timed seconds per row (default: SSD 2, MogFace 0)")
          ->check(CLI::Range(0.0, 3600.0));
}

void AddMogFaceFlags(CLI::App& engine, BenchFlags& flags) {
  flags.sizes_option = engine
                           .add_option("--sizes", flags.sizes,
                                       "Square input sides to measure, multiples of 32: MogFace, "
                                       "and ONNX files of any input size (YuNet: 640 unless given)")
                           ->delimiter(',')
                           ->check(CLI::Range(32, 4096))
                           ->capture_default_str();
  engine
      .add_option("--precisions", flags.precisions,
                  "Precisions to measure in one run, each against its own 3x3-conv peak "
                  "(MogFace default: --precision if given, else fp32,bf16; SSD default: "
                  "--precision; SSD variants other than the default are measured at the first)")
      ->delimiter(',');
  engine.add_flag("--reference", flags.reference,
                  "MogFace: also time the Python reference (tests/reference/bench_reference.py, "
                  "PyTorch eager) on the same weights, sizes, batches and threads; the ratio is "
                  "reported per row");
  engine.add_option("--reference-python", flags.reference_python,
                    "Interpreter with PyTorch for --reference (default: "
                    "$MOGSERVE_REFERENCE_PYTHON, else /usr/bin/python3)");
  engine.add_option("--reference-script", flags.reference_script,
                    "bench_reference.py (default: $MOGSERVE_REFERENCE_SCRIPT, else "
                    "tests/reference/ in the working directory or next to the build)");
}

}  // namespace

CommandRunner RegisterBenchCommand(CLI::App& app) {
  app.require_subcommand(1);
  auto flags = std::make_shared<BenchFlags>();
  CLI::App* engine = app.add_subcommand(
      "engine",
      "Forward-pass latency, images/s, GFLOP/s vs the 3x3-conv peak and memory per batch size "
      "(SSD: per engine variant; MogFace: per size and precision, optionally vs the Python "
      "reference)");
  AddOptionFlags(*engine, flags->engine, {opt::Group::kModel});
  flags->precision_option = engine->get_option("--precision");
  AddRowFlags(*engine, *flags);
  engine->add_flag("--default-only", flags->default_only,
                   "SSD: only the default variant (skip NCHW and system-allocator rows)");
  engine->add_flag("--onnxruntime", flags->onnxruntime,
                   "Also time ONNX Runtime (npm onnxruntime-node, CPU, FP32) on the same network, "
                   "exported by tools/export_onnx.py, at the same sizes, batches and threads; "
                   "each row gets its ms/image and the ratio (needs node, the npm package that "
                   "scripts/setup.sh installs and Debian's python3-torch)");
  AddMogFaceFlags(*engine, *flags);
  AddBenchOutputFlags(*engine, flags->output);
  CommandRunner pipeline = RegisterBenchPipelineCommand(app);
  CommandRunner serve = RegisterBenchServeCommand(app);
  CommandRunner report = RegisterBenchReportCommand(app);
  CommandRunner video = RegisterBenchVideoCommand(app);
  return [flags, engine, pipeline, serve, report, video, &app] {
    if (engine->parsed()) return RunEngineBenchCommand(*flags);
    if (app.got_subcommand("report")) return report();
    if (app.got_subcommand("video")) return video();
    return app.got_subcommand("pipeline") ? pipeline() : serve();
  };
}

}  // namespace mogserve::cli
