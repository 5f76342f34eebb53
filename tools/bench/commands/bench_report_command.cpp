// `mogserve bench report`: see bench/bench_report.h.
#include <filesystem>
#include <iostream>
#include <memory>

#include "bench/bench_report.h"
#include "bench/commands/bench_pipeline_command.h"
#include "cli/commands.h"
#include "common/file_util.h"

namespace mogserve::cli {
namespace {

// The report's own options, bound to the flags; what needs converting or checking beside them.
struct BenchReportFlags {
  DetectorOptions engine;
  bench::BenchReportOptions options;
  std::string out = "bench-report";
  std::vector<std::string> precisions;
  std::string guide_claims;
};

// The command line as typed, from /proc/self/cmdline, quoted where needed.
std::string CommandLine() {
  const StatusOr<std::vector<uint8_t>> bytes = ReadFileBytes("/proc/self/cmdline");
  const std::string all = bytes.ok() ? std::string(bytes->begin(), bytes->end()) : "";
  std::string line, arg;
  const auto flush = [&] {
    const bool plain =
        !arg.empty() && arg.find_first_of(" \t'\"$\\`;&|<>*?()") == std::string::npos;
    if (!line.empty()) line += ' ';
    if (plain) {
      line += arg;
    } else {
      line += '\'';
      for (char c : arg) line += c == '\'' ? std::string("'\\''") : std::string(1, c);
      line += '\'';
    }
    arg.clear();
  };
  for (char c : all) {
    if (c == '\0') {
      flush();
    } else {
      arg += c;
    }
  }
  if (!arg.empty()) flush();
  return line;
}

// --quick's smaller defaults (explicit flags still win), the precisions and the engine.
StatusOr<bench::BenchReportOptions> ToOptions(BenchReportFlags flags, const CLI::App& app) {
  bench::BenchReportOptions& o = flags.options;
  if (o.quick) {
    // Under 5 minutes on 2 cores for SSD.
    if (app.count("--runs") == 0) o.runs = 30;
    if (app.count("--warmup") == 0) o.warmup = 2;
    if (app.count("--images") == 0) o.images = 32;
    if (app.count("--loads") == 0) o.loads = {0.25, 0.6, 0.9, 1.1};
    o.min_requests = 40;
    o.min_seconds = 2;
    o.max_seconds = 6;
    o.stream_seconds = 4;
  }
  if (!o.simulate) {
    MOGSERVE_ASSIGN_OR_RETURN(api::EngineSetup setup, ToEngineSetup(flags.engine));
    o.model = setup.model;
    o.engine = setup.engine;
  }
  if (o.simulate) {  // simulated engines run any precision
    for (const std::string& name : flags.precisions) {
      StatusOr<engine::Precision> p = engine::ParsePrecision(name);
      if (!p.ok()) return InvalidArgument("--precisions: " + p.status().message());
      o.precisions.push_back(*p);
    }
  } else if (!flags.precisions.empty() || app.count("--precision") == 0) {
    // The defaults: SSD fp32; MogFace fp32 and bf16, bf16 left out where the CPU cannot run it.
    const bool defaulted = flags.precisions.empty();
    std::vector<std::string> names = flags.precisions;
    if (defaulted) {
      names = {"fp32"};
      const std::string_view reduced = o.model.spec->bench_reduced_precision;
      if (!reduced.empty()) names.emplace_back(reduced);
    }
    MOGSERVE_ASSIGN_OR_RETURN(o.precisions,
                              ParsePrecisions(names, defaulted, o.engine, "--precisions"));
  }
  if (flags.precisions.empty() && !o.simulate && app.count("--precision") > 0) {
    o.precisions = {o.engine.precision};
  }
  if (o.mogface_size % 32 != 0) return InvalidArgument("--size must be a multiple of 32");
  MOGSERVE_ASSIGN_OR_RETURN(o.guide_claims,
                            bench::LoadGuideClaims(bench::FindGuideClaims(flags.guide_claims)));
  o.command = CommandLine();
  return o;
}

int RunBenchReport(const BenchReportFlags& flags, const CLI::App& app) {
  StatusOr<bench::BenchReportOptions> options = ToOptions(flags, app);
  if (!options.ok()) {
    std::cerr << "error: " << options.status().message() << "\n";
    return options.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFatal;
  }
  std::error_code ec;
  std::filesystem::create_directories(flags.out, ec);
  if (ec || !std::filesystem::is_directory(flags.out)) {
    std::cerr << "error: --out: cannot create " << flags.out << ": " << ec.message() << "\n";
    return kExitFatal;
  }
  StatusOr<bench::BenchReport> report = bench::RunBenchReport(*options);
  if (!report.ok()) {
    std::cerr << "error: " << report.status().ToString() << "\n";
    return report.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFatal;
  }
  bench::WriteBenchReportPlots(flags.out, options->gnuplot, &*report);
  if (!report->plots_generated) std::cerr << "note: " << report->plots_note << "\n";
  const std::filesystem::path dir(flags.out);
  const std::vector<bench::ResultTable> tables = bench::BenchReportTables(*report);
  for (const auto& [name, format] : {std::pair{"report.md", bench::Format::kMarkdown},
                                     std::pair{"report.json", bench::Format::kJson},
                                     std::pair{"report.csv", bench::Format::kCsv}}) {
    if (Status s = WriteTextFile((dir / name).string(), bench::Print(tables, format)); !s.ok()) {
      std::cerr << "error: " << s.message() << "\n";
      return kExitFatal;
    }
  }
  std::cout << "wrote " << (dir / "report.md").string() << ", " << (dir / "report.json").string()
            << ", " << (dir / "report.csv").string() << " and " << report->plot_files.size()
            << " plot file(s)\n";
  return kExitOk;
}

}  // namespace

CommandRunner RegisterBenchReportCommand(CLI::App& bench_app) {
  auto flags = std::make_shared<BenchReportFlags>();
  CLI::App* app = bench_app.add_subcommand(
      "report",
      "The whole suite (precision, batch size, naive vs optimised, throughput vs latency, camera "
      "streams, machine) as report.md, report.json and gnuplot plots in --out");
  AddOptionFlags(*app, flags->engine, {opt::Group::kModel});
  AddSchedulerBenchFlags(*app, flags->options);
  app->add_option("--out", flags->out, "Folder to write report.md, report.json and the plots to")
      ->capture_default_str();
  app->add_flag("--quick", flags->options.quick,
                "Bounded run (under 5 min for SSD on 2 cores): 30 runs, 32 images, loads "
                "0.25,0.6,0.9,1.1, points of 2-6 s, 4 s per stream count");
  app->add_flag("--simulate", flags->options.simulate,
                "Simulated engine (sleeps a*n + b per batch of n) instead of the model");
  app->add_option("--precisions", flags->precisions,
                  "Precisions of sections 1-2: fp32, bf16, fp16 (default: --precision if given, "
                  "else SSD fp32, MogFace fp32,bf16)")
      ->delimiter(',');
  AddBounded(*app, "--size", flags->options.mogface_size,
             "MogFace: square canvas side, a multiple of 32", 32, 4096);
  app->add_option("--images-dir", flags->options.images_dir,
                  "Photos to measure with (default: tests/data/photos in the working directory "
                  "or next to the build; random canvases when none)");
  AddBounded(*app, "--runs", flags->options.runs,
             "Timed single-image runs per precision (quick: 30)", 1, 1000000);
  AddBounded(*app, "--warmup", flags->options.warmup, "Untimed single-image runs first (quick: 2)",
             0, 10000);
  AddBoundedList(*app, "--batch-sizes", flags->options.batch_sizes, "Batch sizes of section 2", 1,
                 256);
  AddBounded(*app, "--images", flags->options.images, "Images per batch-size row (quick: 32)", 1,
             1000000);
  AddBoundedList(*app, "--loads", flags->options.loads,
                 "Section 4 offered loads, as fractions of the pipeline's capacity (the best "
                 "closed-loop throughput of section 3; quick: 0.25,0.6,0.9,1.1)",
                 0.01, 10.0);
  AddBounded(*app, "--clients", flags->options.clients, "Section 3 closed-loop clients", 1, 1024);
  AddBounded(*app, "--naive-load", flags->options.naive_load,
             "Section 3 open loop: offered rate as a fraction of what the naive policy "
             "sustains in section 3's closed loop",
             0.01, 10.0);
  app->add_option("--seconds", flags->options.seconds,
                  "Seconds per load point and per stream count (default: scaled to the "
                  "capacity: enough for 200 requests within 5-20 s, quick 40 within 2-6 s; "
                  "streams 10 s, quick 4 s)")
      ->check(CLI::Range(0.1, 3600.0));
  app->add_option("--max-streams", flags->options.max_streams,
                  "Most camera streams to try per policy (default: the pipeline's capacity / 25 "
                  "+ 1, at most 64)")
      ->check(CLI::Range(1, 1024));
  app->add_option("--gnuplot", flags->options.gnuplot,
                  "gnuplot executable (plots are skipped, and the report says so, without one)")
      ->capture_default_str();
  app->add_option("--guide-claims", flags->guide_claims,
                  "The deployment guide's claims to compare with (default: "
                  "docs/bench/guide_claims.json in the working directory or next to the build, "
                  "else <prefix>/share/mogserve/guide_claims.json of an installed mogserve)");
  return [flags, app] { return RunBenchReport(*flags, *app); };
}

}  // namespace mogserve::cli
