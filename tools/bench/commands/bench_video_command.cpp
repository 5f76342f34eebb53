// `mogserve bench video`: see bench/video_bench.h. The pipeline and the streams' options are
// built from the serve flags given after `--` by the same code as `mogserve serve`
// (cli/serving_stack.h, cli/serve_streams.h), once per scheduler.
#include <iostream>

#include "bench/commands/bench_pipeline_command.h"
#include "bench/engine_bench.h"
#include "bench/video_bench.h"
#include "cli/commands.h"
#include "cli/output_file.h"
#include "cli/serve_streams.h"
#include "cli/serving_stack.h"
#include "scheduler/scheduler_config.h"

#ifdef MOGSERVE_WITH_VIDEO
#include "video/clip_publisher.h"
#endif

namespace mogserve::cli {
namespace {

struct BenchVideoFlags {
  bench::VideoBenchOptions options;
  std::vector<std::string> schedulers = {"naive", "continuous", "adaptive"};
  std::vector<double> detect_fps = {0, 5};
  BenchOutputFlags output;
  std::vector<std::string> serve_args;
};

#ifdef MOGSERVE_WITH_VIDEO

std::string DescribeClip(const std::string& path, const video::ClipInfo& c) {
  char text[240];
  std::snprintf(text, sizeof(text), "%s (%s %dx%d, %.0f fps, %.1f s, %.1f Mbit/s)", path.c_str(),
                c.codec.c_str(), c.width, c.height, c.fps, c.seconds,
                static_cast<double>(c.bit_rate) / 1e6);
  return text;
}

int Run(const BenchVideoFlags& f) {
  if (f.options.clip.empty()) {
    std::cerr << "error: --clip is required: a video file looped by every camera (25 fps "
                 "H.264 720p in the documented figures: scripts/make_bench_clip.sh makes it "
                 "from tests/data/photos)\n";
    return kExitUsage;
  }
  auto clip = video::ClipPublisher::Probe(f.options.clip);
  if (!clip.ok()) {
    std::cerr << "error: --clip: " << clip.status().message() << "\n";
    return kExitUsage;
  }
  for (const std::string& name : f.schedulers) {
    if (auto p = scheduler::ParsePolicy(name); !p.ok()) {
      std::cerr << "error: --schedulers: " << p.status().message() << "\n";
      return kExitUsage;
    }
  }
  auto serve_flags = ParseServeArgs(f.serve_args);
  if (!serve_flags.ok()) {
    std::cerr << "error: " << serve_flags.status().message() << "\n";
    return kExitUsage;
  }
  serve_flags->options.model_dir =
      ResolveModelDir(serve_flags->options.model_dir, serve_flags->options.model);
  auto loaded = LoadEngines(*serve_flags);
  if (!loaded.ok()) {
    std::cerr << "error: " << loaded.status().message() << "\n";
    return ExitCodeFor(loaded.status());
  }

  bench::VideoBenchReport report;
  report.machine = bench::DescribeMachine();
  report.clip = DescribeClip(f.options.clip, *clip);
  char settings[400];
  std::snprintf(settings, sizeof(settings),
                "MPEG-TS over %s loopback, %.0f s per point (first 20%% warm-up), real-time "
                "stream: decoded >= %.0f %% of frames sent, >= %.0f %% of submitted frames "
                "answered within %.0f ms of arrival, the rest superseded (none late, expired or "
                "failed); serve flags:%s",
                f.options.transport.c_str(), f.options.seconds, 100 * f.options.required_decoded,
                100 * f.options.required_in_time, f.options.deadline_ms,
                f.serve_args.empty() ? " (defaults)" : "");
  report.settings = settings;
  for (const std::string& a : f.serve_args) report.settings += " " + a;
  const video::IngestOptions defaults = StreamDefaults(*serve_flags);

  for (const std::string& scheduler : f.schedulers) {
    ServeFlags flags = *serve_flags;
    flags.options.scheduler = scheduler;
    std::fprintf(stderr, "%s: warm-up...\n", scheduler.c_str());
    auto serving = StartPipeline(flags, *loaded, /*observer=*/nullptr);
    if (!serving.ok()) {
      std::cerr << "error: " << serving.status().message() << "\n";
      return ExitCodeFor(serving.status());
    }
    report.engine = serving->description.info.Describe();
    for (double fps : f.detect_fps) {
      auto search = bench::SearchMaxStreams(
          *serving->pipeline, defaults, f.options, scheduler, fps, [](const bench::VideoPoint& p) {
            std::fprintf(stderr,
                         "%s detect-fps %g, %d streams: %s (%d/%d real-time, %.1f detected/s, "
                         "p99 %.0f ms, decode %.2f ms/frame)%s%s\n",
                         p.scheduler.c_str(), p.detect_fps, p.streams,
                         p.all_realtime ? "real time" : "missed", p.realtime_streams, p.streams,
                         p.detected_per_s, p.latency.p99_ms, p.decode_cpu_ms_per_frame,
                         p.failure.empty() ? "" : ": ", p.failure.c_str());
          });
      if (!search.ok()) {
        std::cerr << "error: " << search.status().message() << "\n";
        serving->pipeline->Shutdown();
        return kExitFatal;
      }
      report.searches.push_back(std::move(*search));
    }
    serving->pipeline->Shutdown();
  }
  return PrintBenchTables(bench::VideoBenchTables(report), f.output);
}

#else

int Run(const BenchVideoFlags&) {
  std::cerr << "error: this mogserve was built without video support (MOGSERVE_WITH_VIDEO=OFF)\n";
  return kExitFatal;
}

#endif  // MOGSERVE_WITH_VIDEO

}  // namespace

CommandRunner RegisterBenchVideoCommand(CLI::App& bench) {
  CLI::App* app = bench.add_subcommand(
      "video",
      "Live camera streams: the most 25 FPS streams served in real time, per scheduler and "
      "detect rate, looping a clip over loopback into the server's streams. Serve flags go "
      "after --");
  auto f = std::make_shared<BenchVideoFlags>();
  app->add_option("--clip", f->options.clip,
                  "Video file every camera loops (scripts/make_bench_clip.sh makes the "
                  "documented 720p one)");
  app->add_option("--transport", f->options.transport,
                  "MPEG-TS over tcp (cameras listen, streams pull) or udp")
      ->check(CLI::IsMember({"tcp", "udp"}))
      ->capture_default_str();
  app->add_option("--schedulers", f->schedulers, "Batching policies to compare")
      ->delimiter(',')
      ->capture_default_str();
  AddBoundedList(*app, "--detect-fps", f->detect_fps,
                 "Detection rates per stream to measure (0: every frame)", 0.0, 1000.0);
  AddBounded(*app, "--seconds", f->options.seconds, "Seconds per point (first 20% is warm-up)", 2.0,
             3600.0);
  AddBounded(*app, "--max-streams", f->options.max_streams, "Largest N tried", 1, 1024);
  AddBounded(*app, "--deadline-ms", f->options.deadline_ms,
             "A frame answered later than this after its arrival is late", 1.0, 60000.0);
  AddBenchOutputFlags(*app, f->output);
  app->add_option("serve_args", f->serve_args, "Flags for `mogserve serve`, after --");
  return [f] { return Run(*f); };
}

}  // namespace mogserve::cli
