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

struct ServeFlags {
  DetectorOptions options;  // every group of the option table (options/option_table.h)
  std::string host = "127.0.0.1";
  int port = 7860;
  std::string api_key;
  std::string api_key_file;  // the key from a file: not visible in the process list
  std::string cors_origin;
  std::string model_name;  // "" = the engine's
  int admin_port = 0;      // 0: probes and metrics on the main port only
  int grpc_port = 0;       // the OIP gRPC API (serve only); 0: off
  int64_t max_body_bytes = 64 << 20;
  int64_t max_body_bytes_in_flight = int64_t{1} << 30;
  int max_images = 32;
  int64_t max_header_bytes = 16 << 10;
  int max_connections = 10'000;
  int io_threads = 2;
  double header_timeout_s = 10;
  double body_timeout_s = 60;
  double idle_timeout_s = 10;
  std::string access_log = "text";
  double drain_timeout_s = 30;
  double shutdown_delay_s = 0;
  // Video streams (/v1/streams): ID=URL each, started once the server is ready.
  std::vector<std::string> streams;
  std::string streams_file;  // a JSON array of streams as POST /v1/streams takes them
  int max_streams = 32;
  double stream_open_timeout_s = 10;
  double stream_io_timeout_s = 5;
  double stream_no_frame_timeout_s = 10;  // the no-frame watchdog
  int max_stream_subscribers = 16;        // SSE, NDJSON and MJPEG watchers at once
  std::string hwaccel = "auto";           // where streams are decoded: auto, cuda, none
};

void AddServeFlags(CLI::App& app, ServeFlags& f);

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
