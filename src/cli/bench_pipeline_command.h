// `mogserve bench pipeline`: see bench/pipeline_bench.h.
#pragma once

#include "cli/commands.h"

namespace mogserve::cli {

// Adds the "pipeline" subcommand to `bench_app` (the `bench` command) and returns its runner.
CommandRunner RegisterBenchPipelineCommand(CLI::App& bench_app);

}  // namespace mogserve::cli
