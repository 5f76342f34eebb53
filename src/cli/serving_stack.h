// The serve flags (each also a MOGSERVE_* environment variable) and the serving stack they build
// through the one builder (api/serving_stack.h), shared by `mogserve serve`, `bench serve` and
// `bench video` — so the benchmark's in-process pipeline is exactly the server's (and the
// library's).
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/serving_stack.h"
#include "cli/commands.h"
#include "pipeline/pipeline.h"
#include "pipeline/pipeline_observer.h"
#include "server/http_server.h"

namespace mogserve::cli {

// serve's flags: the detector's (DetectorOptions) and the server's (ServingOptions), each an
// entry of the option table.
struct ServeFlags : ServingOptions {
  DetectorOptions options;  // every detector group of the option table
};

// The flags of the detector groups and of the `server` groups, each also MOGSERVE_<NAME> in the
// environment.
void AddServeFlags(CLI::App& app, ServeFlags& f,
                   std::initializer_list<opt::Group> server = {opt::Group::kServer,
                                                               opt::Group::kStreams});

// The HTTP server's options from the flags (reads --api-key-file); InvalidArgument naming the
// flag when they conflict or the key file cannot be read.
StatusOr<server::ServerOptions> ToServerOptions(const ServeFlags& flags);

// The exit code for a start-up failure: a bad option (InvalidArgument) is a usage error.
int ExitCodeFor(const Status& status);

using LoadedEngines = api::LoadedEngines;
// Checks every flag (errors name it), then loads the engines.
StatusOr<LoadedEngines> LoadEngines(const ServeFlags& flags);

using ServingPipeline = api::ServingPipeline;
// Measures the buffer plan (the warm-up), applies it to the scheduler, starts the pipeline.
StatusOr<ServingPipeline> StartPipeline(const ServeFlags& flags, const LoadedEngines& loaded,
                                        pipeline::PipelineObserver* observer);

}  // namespace mogserve::cli
