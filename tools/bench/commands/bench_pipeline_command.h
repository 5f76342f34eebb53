// `mogserve bench pipeline` (see bench/pipeline_bench.h), and the flag pieces the bench
// commands share.
#pragma once

#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/serving_stack.h"
#include "scheduler/scheduler_config.h"

namespace mogserve::cli {

// Adds the "pipeline" subcommand to `bench_app` (the `bench` command) and returns its runner.
CommandRunner RegisterBenchPipelineCommand(CLI::App& bench_app);

// --policies naive,dynamic,...: parsed straight into `policies` (whose value is the default); an
// unknown name is a usage error naming the accepted ones. Shared by bench pipeline and report.
void AddPoliciesFlag(CLI::App& app, std::vector<scheduler::Policy>& policies);

// --NAME bound to `value`, whose value is the default shown, within [lo, hi].
template <typename T, typename Bound>
CLI::Option* AddBounded(CLI::App& app, const std::string& name, T& value, const std::string& help,
                        Bound lo, Bound hi) {
  return app.add_option(name, value, help)->check(CLI::Range(lo, hi))->capture_default_str();
}

// The same for a comma-separated list, each item within [lo, hi].
template <typename T, typename Bound>
CLI::Option* AddBoundedList(CLI::App& app, const std::string& name, std::vector<T>& values,
                            const std::string& help, Bound lo, Bound hi) {
  return AddBounded(app, name, values, help, lo, hi)->delimiter(',');
}

// The `mogserve serve` flags given after `--` (bench serve, bench video), parsed as serve parses
// them; InvalidArgument "serve flags after --: ..." otherwise.
StatusOr<ServeFlags> ParseServeArgs(const std::vector<std::string>& serve_args);

// The flags bench pipeline and bench report share, bound to their options' fields of the same
// names (whose values are the defaults): --policies, the simulated engine (--sim-batch-ms,
// --sim-image-ms) and the scheduler (--max-batch-size, --max-delay-ms, --batch-knee).
template <typename Options>
void AddSchedulerBenchFlags(CLI::App& app, Options& o) {
  AddPoliciesFlag(app, o.policies);
  AddBounded(app, "--sim-batch-ms", o.sim_intercept_ms,
             "Simulated engine: fixed milliseconds per batch (b in a*n + b)", 0.0, 100000.0);
  AddBounded(app, "--sim-image-ms", o.sim_per_image_ms,
             "Simulated engine: milliseconds per image (a in a*n + b)", 0.0, 100000.0);
  AddBounded(app, "--max-batch-size", o.max_batch_size, "Largest scheduler batch", 1, 256);
  AddBounded(app, "--max-delay-ms", o.max_delay_ms, "Longest wait to grow a batch", 0.0, 10000.0);
  AddBounded(app, "--batch-knee", o.batch_knee,
             "Cap batches at the smallest warm-up batch size reaching this fraction of the "
             "best measured throughput (0: memory only, then --max-batch-size)",
             0.0, 1.0);
}

}  // namespace mogserve::cli
