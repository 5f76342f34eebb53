// The subcommands of the mogserve executable. Each Register* adds its options to the CLI app and
// returns the function that runs it (returning the process exit code).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

namespace mogserve::cli {

using CommandRunner = std::function<int()>;

CommandRunner RegisterDetectCommand(CLI::App& app);
CommandRunner RegisterBenchCommand(CLI::App& app);

// Exit codes shared by the commands.
inline constexpr int kExitOk = 0;
inline constexpr int kExitSomeFailed = 1;  // the job ran, but some inputs failed
inline constexpr int kExitUsage = 2;       // bad flags or arguments
inline constexpr int kExitFatal = 3;       // could not start (model missing, ...)

}  // namespace mogserve::cli

namespace mogserve::cli {

// The model folder: `flag` when given, else $MOGSERVE_MODEL_DIR, else models/ssd_mobilenetv1 in
// the working directory when it exists, else the same under <folder of the executable>/.. (a
// build/ next to the sources, as scripts/build.sh makes it).
std::string ResolveModelDir(const std::string& flag);

// Adds --model-dir and --threads to a subcommand.
struct EngineFlags {
  std::string model_dir;
  int threads = 0;
};
void AddEngineFlags(CLI::App& app, EngineFlags& flags);

}  // namespace mogserve::cli
