// `mogserve bench serve`: load against a real `mogserve serve` over HTTP — closed loop by
// concurrency, open loop by rate — and, in the same run, the same requests through an
// in-process pipeline built like the server's, to price the HTTP layer: the ratio of HTTP to
// in-process throughput at saturation (target >= 0.9) and the HTTP overhead per request at
// concurrency 1.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench/load_generator.h"
#include "bench/result_table.h"
#include "mogserve/status.h"

namespace mogserve::bench {

// Something that answers one encoded image at a time, from many threads (the in-process
// pipeline).
class DetectTarget {
 public:
  virtual ~DetectTarget() = default;
  virtual bool Detect(const std::string& image_bytes) = 0;  // true: faces came back
  virtual std::string Describe() const = 0;
};

struct ServeBenchOptions {
  std::vector<std::string> images;          // encoded photos; request i sends images[i % size]
  std::string url;                          // an existing server; empty = spawn `server_command`
  std::vector<std::string> server_command;  // argv of the server to spawn (with --port 0)
  std::string api_key;
  // "v1": POST /v1/detect with the photo as the body; "v2": the Open Inference Protocol's
  // binary tensor extension, one image per POST /v2/models/{model_name}/infer.
  std::string protocol = "v1";
  std::string model_name;  // v2's path; empty = the name /v1/models gives (the server default)
  std::vector<int> concurrency = {1, 4, 16, 64};
  std::vector<double> load_fractions = {0.25, 0.5, 0.75, 0.9};  // open loop, x saturation
  double seconds = 5.0;
  double warmup_seconds = 1.0;
  // Builds the in-process pipeline; null = HTTP only (no ratio). Called after the HTTP runs,
  // once the spawned server is gone, so the two never share the CPU.
  std::function<StatusOr<std::unique_ptr<DetectTarget>>()> in_process;
};

struct ServeBenchRow {
  std::string target;  // "http" or "in-process"
  std::string mode;    // "closed" or "open"
  int concurrency = 0;
  double offered_per_s = 0;
  LoadResult result;
};

struct ServeBenchReport {
  std::string machine;
  std::string server;  // what /v1/models said
  std::vector<ServeBenchRow> rows;
  double http_saturation_per_s = 0;  // best closed-loop throughput
  double in_process_saturation_per_s = 0;
  double saturation_ratio = 0;        // http / in-process (0 without in-process)
  double http_overhead_ms_at_c1 = 0;  // median latency difference at concurrency 1
};

StatusOr<ServeBenchReport> RunServeBench(const ServeBenchOptions& options);
// The report's table: the saturation figures as fields, one row per point.
std::vector<ResultTable> ServeBenchTables(const ServeBenchReport& report);

}  // namespace mogserve::bench
