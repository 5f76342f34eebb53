// `mogserve bench pipeline`: see bench/pipeline_bench.h.
#pragma once

#include <vector>

#include "cli/commands.h"
#include "scheduler/scheduler_config.h"

namespace mogserve::cli {

// Adds the "pipeline" subcommand to `bench_app` (the `bench` command) and returns its runner.
CommandRunner RegisterBenchPipelineCommand(CLI::App& bench_app);

// --policies naive,dynamic,...: parsed straight into `policies` (whose value is the default); an
// unknown name is a usage error naming the accepted ones. Shared by bench pipeline and report.
void AddPoliciesFlag(CLI::App& app, std::vector<scheduler::Policy>& policies);

}  // namespace mogserve::cli
