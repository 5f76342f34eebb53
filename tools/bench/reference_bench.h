// The Python MogFace reference (tests/reference/bench_reference.py, PyTorch eager mode) as the
// baseline of `mogserve bench engine --model mogface --reference`: run as a child process on the
// engine's own synthetic weights, exported as safetensors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/latency_stats.h"
#include "mogserve/status.h"

namespace mogserve::bench {

// A fresh folder under the system temporary directory (empty path() if it could not be
// created), removed with its contents on destruction.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The interpreter: `flag`, else $MOGSERVE_REFERENCE_PYTHON, else /usr/bin/python3 (Debian's,
// the one python3-torch installs into, whatever python3 is first on PATH).
std::string ResolveReferencePython(const std::string& flag);
// The script: `flag`, else $MOGSERVE_REFERENCE_SCRIPT, else tests/reference/bench_reference.py
// in the working directory when it exists, else the same under <folder of the executable>/..
std::string ResolveReferenceScript(const std::string& flag);

// Ok when `python` runs and imports torch; FailedPrecondition saying why not otherwise.
Status CheckReferencePython(const std::string& python);

// Writes the tensors that --synthetic-weights `variant` with `seed` gives the engine, the keys
// the network uses only (no DSFD, deep-head conv2-4, num_batches_tracked), as an F32
// safetensors file: the reference then runs exactly the engine's weights.
Status WriteSyntheticWeights(const std::string& variant, uint64_t seed, const std::string& path);

struct ReferenceBenchOptions {
  std::string python;   // interpreter with torch
  std::string script;   // bench_reference.py
  std::string weights;  // a checkpoint the reference can read
  std::string variant;  // "r101", "e", "r50"
  std::vector<int> sizes;
  std::vector<int> batch_sizes;
  std::vector<std::string> precisions;  // "fp32", "bf16"; on cuda also "fp16", "tf32"
  std::string device = "cpu";           // "cpu", or "cuda": channels-last on the GPU
  int threads = 1;
  int warmup = 1;
  int min_iterations = 1;
  double min_seconds = 0;
};

struct ReferenceRow {
  int size = 0;
  std::string precision;
  int batch = 0;
  LatencyStats latency;  // per pass over the batch
};

struct ReferenceRun {
  std::string torch_version;
  std::string bf16_mode;      // how the reference runs BF16
  std::string memory_format;  // how the reference runs
  int threads = 0;
  int64_t max_rss_bytes = 0;  // of the child process
  std::vector<ReferenceRow> rows;
};

// Runs the script (its progress lines go to this process's stderr) and reads its JSON. Errors
// name the command and its exit status.
StatusOr<ReferenceRun> RunReferenceBench(const ReferenceBenchOptions& options);

}  // namespace mogserve::bench
