// `mogserve bench serve`: see bench/serve_bench.h. The server is spawned from this same
// executable with the serve flags given after `--`, and the in-process comparison is built from
// the same flags by the same code (cli/serving_stack.h).
#include <filesystem>
#include <future>
#include <iostream>

#include "bench/serve_bench.h"
#include "bench/commands/bench_pipeline_command.h"
#include "cli/commands.h"
#include "cli/output_file.h"
#include "cli/serving_stack.h"
#include "common/file_util.h"

namespace mogserve::cli {
namespace {

namespace fs = std::filesystem;

// The bench's own options, bound to the flags; the photos folder, the serve flags and the
// output files beside them.
struct BenchServeFlags {
  bench::ServeBenchOptions options;
  std::string images = "tests/data/photos";
  bool no_in_process = false;
  BenchOutputFlags output;
  std::vector<std::string> serve_args;
};

// The in-process pipeline, built exactly as `mogserve serve` builds it.
class PipelineTarget : public bench::DetectTarget {
 public:
  PipelineTarget(LoadedEngines loaded, ServingPipeline serving)
      : loaded_(std::move(loaded)), serving_(std::move(serving)) {}
  ~PipelineTarget() override { serving_.pipeline->Shutdown(); }

  bool Detect(const std::string& image_bytes) override {
    pipeline::SubmitRequest request;
    request.image.bytes.assign(image_bytes.begin(), image_bytes.end());
    std::promise<bool> done;
    std::future<bool> result = done.get_future();
    serving_.pipeline->Submit(std::move(request), [&done](pipeline::RequestResult r) {
      done.set_value(r.outcome == scheduler::Outcome::kDone);
    });
    return result.get();
  }
  std::string Describe() const override { return serving_.description.info.Describe(); }

 private:
  LoadedEngines loaded_;
  ServingPipeline serving_;
};

StatusOr<std::vector<std::string>> LoadImages(const std::string& dir) {
  std::vector<fs::path> paths;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.is_regular_file()) paths.push_back(entry.path());
  }
  if (ec) return NotFound("--images " + dir + ": " + ec.message());
  std::sort(paths.begin(), paths.end());
  std::vector<std::string> images;
  for (const fs::path& p : paths) {
    MOGSERVE_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ReadFileBytes(p.string()));
    images.emplace_back(bytes.begin(), bytes.end());
  }
  if (images.empty()) return NotFound("--images " + dir + " holds no files");
  return images;
}

int Run(const BenchServeFlags& f) {
  bench::ServeBenchOptions o = f.options;
  auto images = LoadImages(f.images);
  if (!images.ok()) {
    std::cerr << "error: " << images.status().message() << "\n";
    return kExitUsage;
  }
  o.images = std::move(*images);
  o.server_command = {
      fs::read_symlink("/proc/self/exe").string(), "serve", "--port", "0", "--access-log", "off"};
  o.server_command.insert(o.server_command.end(), f.serve_args.begin(), f.serve_args.end());
  if (!f.no_in_process) {
    // Parsed up front, so a bad serve flag fails before any load runs.
    StatusOr<ServeFlags> parsed = ParseServeArgs(f.serve_args);
    if (!parsed.ok()) {
      std::cerr << "error: " << parsed.status().message() << "\n";
      return kExitUsage;
    }
    auto flags = std::make_shared<ServeFlags>(std::move(*parsed));
    o.in_process = [flags]() -> StatusOr<std::unique_ptr<bench::DetectTarget>> {
      MOGSERVE_ASSIGN_OR_RETURN(LoadedEngines loaded, LoadEngines(*flags));
      MOGSERVE_ASSIGN_OR_RETURN(ServingPipeline serving,
                                StartPipeline(*flags, loaded, /*observer=*/nullptr));
      return std::unique_ptr<bench::DetectTarget>(
          new PipelineTarget(std::move(loaded), std::move(serving)));
    };
  }
  auto report = bench::RunServeBench(o);
  if (!report.ok()) {
    std::cerr << "error: " << report.status().message() << "\n";
    return kExitFatal;
  }
  return PrintBenchTables(bench::ServeBenchTables(*report), f.output);
}

}  // namespace

CommandRunner RegisterBenchServeCommand(CLI::App& bench) {
  CLI::App* app = bench.add_subcommand(
      "serve",
      "HTTP load against `mogserve serve` (closed loop by concurrency, open loop by rate) and "
      "the same load in-process: the HTTP layer's cost. Serve flags go after --");
  auto f = std::make_shared<BenchServeFlags>();
  app->add_option("--images", f->images, "Folder of photos to send (round robin)")
      ->capture_default_str();
  app->add_option("--url", f->options.url, "Use this running server instead of spawning one");
  app->add_option("--api-key", f->options.api_key, "Bearer key for --url");
  app->add_option("--protocol", f->options.protocol,
                  "v1: POST /v1/detect with the photo as the body; v2: the Open Inference "
                  "Protocol's binary tensors, one image per POST /v2/models/NAME/infer")
      ->check(CLI::IsMember({"v1", "v2"}))
      ->capture_default_str();
  app->add_option("--model-name", f->options.model_name,
                  "The model's name in /v2 paths (default: the name /v1/models gives)");
  AddBoundedList(*app, "--concurrency", f->options.concurrency, "Closed-loop client counts", 1,
                 1024);
  AddBoundedList(*app, "--load-fractions", f->options.load_fractions,
                 "Open-loop rates as fractions of the best closed-loop throughput", 0.01, 10.0);
  AddBounded(*app, "--seconds", f->options.seconds, "Measured seconds per point", 0.1, 3600.0);
  AddBounded(*app, "--warmup", f->options.warmup_seconds,
             "Unmeasured seconds before each closed-loop point", 0.0, 600.0);
  app->add_flag("--no-in-process", f->no_in_process, "HTTP only (no ratio)");
  AddBenchOutputFlags(*app, f->output);
  app->add_option("serve_args", f->serve_args, "Flags for `mogserve serve`, after --");
  return [f] { return Run(*f); };
}

}  // namespace mogserve::cli
