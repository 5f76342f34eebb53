// ONNX Runtime as a peer column of `mogserve bench engine --onnxruntime`: the same network,
// exported from the project's independent PyTorch reference (tools/export_onnx.py, FP32,
// dynamic batch; the SSD with its real weights, MogFace with the engine's own synthetic weights
// written as safetensors), timed by onnxruntime-node's CPU execution provider
// (tools/ort_bench.js) at the same batch sizes and threads. Child processes, like the Python
// reference: the export needs Debian's python3-torch, the timing node and the npm packages
// onnxruntime-node and onnxruntime-common that scripts/setup.sh puts in node_modules/.
#pragma once

#include <string>
#include <vector>

#include "model/model_registry.h"
#include "mogserve/status.h"

namespace mogserve::bench {

struct OnnxRuntimeBenchOptions {
  const model::ModelSpec* model = &model::DefaultModel();
  std::string variant;  // MogFace: "r101", "e", "r50"
  uint64_t seed = 1;    // MogFace: the engine's --seed of its synthetic weights
  std::string weights;  // MogFace: a real checkpoint instead (any format the reference reads)
  std::string ssd_model_dir;
  std::vector<int> sizes;  // square sides; the SSD: {512}
  std::vector<int> batch_sizes;
  int threads = 1;
  double min_seconds = 2;
  int min_runs = 5;
  std::string python;  // interpreter with torch (the --reference one)
};

struct OnnxRuntimeRow {
  int size = 0;
  int batch = 0;
  double median_ms = 0;  // per pass over the batch
  double min_ms = 0;
  double ms_per_image = 0;  // median / batch
};

struct OnnxRuntimeRun {
  std::string version;  // onnxruntime-node's
  std::vector<OnnxRuntimeRow> rows;
};

// Exports each size once and times every batch size. FailedPrecondition naming what is
// missing (the scripts, node, the npm packages, torch) before anything runs; Internal naming
// the command when a child fails.
StatusOr<OnnxRuntimeRun> RunOnnxRuntimeBench(const OnnxRuntimeBenchOptions& options);

}  // namespace mogserve::bench
