// mogserve: face detection server and toolkit. Thin: parses argv and runs a subcommand.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>
#include <map>
#include <memory>

#include "cli/commands.h"
#include "common/cpu_info.h"

int main(int argc, char** argv) {
  // MOGSERVE_CPU_ISA (an older CPU emulated) reaches oneDNN and ATen before anything runs.
  mogserve::ApplyCpuIsaCapToLibraries();
  // Logs go to stderr: stdout carries the data (detect's JSON lines, bench tables, eval reports).
  spdlog::set_default_logger(std::make_shared<spdlog::logger>(
      "", std::make_shared<spdlog::sinks::stderr_color_sink_mt>()));
  CLI::App app{"mogserve: fast face detection (SSD-MobileNetV1 embedded, MogFace) on the CPU"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("mogserve 0.1.0"));
  namespace cli = mogserve::cli;
  struct Command {
    const char* name;
    const char* help;
    cli::CommandRunner (*add)(CLI::App&);
  };
  const Command commands[] = {
      {"serve", "HTTP API and web UI (default http://127.0.0.1:7860/)", cli::RegisterServeCommand},
      {"detect", "Detect faces in image files and folders (JSON lines out)",
       cli::RegisterDetectCommand},
      {"detect-video",
       "Detect faces in video files and live streams (RTSP, RTMP, HTTP, UDP, TCP), JSON lines "
       "per detected frame",
       cli::RegisterDetectVideoCommand},
      {"anonymize",
       "Hide the faces in pictures and videos: blurred, pixelated or filled, written as new "
       "files (JPEG, PNG, WebP; videos as H.264 with their audio)",
       cli::RegisterAnonymizeCommand},
      {"bench",
       "Benchmarks: engine (forward passes vs the machine's peak), pipeline (scheduler policies "
       "under load, in-process), serve (HTTP vs in-process), video (live camera streams in real "
       "time), report (the deployment guide's tables and plots, measured)",
       cli::RegisterBenchCommand},
      {"eval", "Accuracy: WIDER FACE AP (official protocol), FP32 vs BF16/FP16",
       cli::RegisterEvalCommand},
      {"calibrate",
       "INT8 calibration: per-tensor activation scales of a model over photos (JSON, for "
       "--precision int8 --calibration FILE)",
       cli::RegisterCalibrateCommand},
      {"model",
       "ONNX detectors: `model inspect FILE.onnx` (input, outputs, family, operators, MACs, "
       "whether mogserve reads it)",
       cli::RegisterModelCommand},
      {"probe", "HTTP health check: GET a URL, exit 0 only for 200 (for containers without curl)",
       cli::RegisterProbeCommand},
      {"options",
       "The detection and serving options (the one option table) as Markdown: flags, HTTP and "
       "OIP parameters, library fields, with ranges and defaults",
       cli::RegisterOptionsCommand},
  };
  std::map<CLI::App*, cli::CommandRunner> runners;
  for (const Command& c : commands) {
    CLI::App* sub = app.add_subcommand(c.name, c.help);
    runners[sub] = c.add(*sub);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : mogserve::cli::kExitUsage;
  }
  for (CLI::App* sub : app.get_subcommands()) return runners.at(sub)();
  return mogserve::cli::kExitUsage;
}
