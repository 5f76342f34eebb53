#include "bench/onnxruntime_bench.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "bench/reference_bench.h"
#include "common/file_util.h"
#include "common/subprocess.h"

namespace mogserve::bench {
namespace {

namespace fs = std::filesystem;

// A project file (tools/export_onnx.py, ...) found as other project folders are.
std::string ProjectFile(const std::string& relative) {
  const fs::path path(relative);
  const std::string dir = FindProjectFolder(path.parent_path().string());
  if (dir.empty() || !fs::is_regular_file(fs::path(dir) / path.filename())) return "";
  return (fs::path(dir) / path.filename()).string();
}

// Runs argv (no shell); its stderr goes to ours (progress and errors), its stdout is returned.
StatusOr<std::string> Capture(const std::vector<std::string>& argv) {
  SubprocessOptions options;
  options.out = Redirect::Pipe();
  options.err = Redirect::Inherit();
  MOGSERVE_ASSIGN_OR_RETURN(SubprocessOutput result,
                            RunSubprocess(argv, options, std::chrono::minutes(30)));
  if (!result.status.ok()) {
    std::string command;
    for (const std::string& a : argv) command += (command.empty() ? "" : " ") + a;
    return Internal(command + ": " + result.status.Describe());
  }
  return std::move(result.out);
}

}  // namespace

StatusOr<OnnxRuntimeRun> RunOnnxRuntimeBench(const OnnxRuntimeBenchOptions& o) {
  const std::string export_script = ProjectFile("tools/export_onnx.py");
  const std::string bench_script = ProjectFile("tools/ort_bench.js");
  const std::string modules = FindProjectFolder("node_modules");
  if (export_script.empty() || bench_script.empty()) {
    return FailedPrecondition(
        "--onnxruntime needs tools/export_onnx.py and tools/ort_bench.js (run from the "
        "project's folder or its build)");
  }
  if (modules.empty() || !fs::is_directory(fs::path(modules) / "onnxruntime-node")) {
    return FailedPrecondition(
        "--onnxruntime needs the npm package onnxruntime-node in node_modules/ (scripts/setup.sh "
        "installs it)");
  }
  MOGSERVE_RETURN_IF_ERROR(CheckReferencePython(o.python));
  ScratchDir scratch;
  if (scratch.path().empty()) return Internal("cannot create a temporary folder");
  std::string weights = o.weights;
  const bool checkpoint = o.model->weights == model::ModelSpec::Weights::kCheckpoint;
  // An ONNX model is its own file: ONNX Runtime runs it as given, at the row's size.
  const bool onnx_file = o.model->weights == model::ModelSpec::Weights::kOnnxFile;
  const std::string name(o.model->name);  // the export script's model argument
  if (checkpoint && weights.empty()) {
    weights = scratch.path() + "/synthetic.safetensors";
    MOGSERVE_RETURN_IF_ERROR(WriteSyntheticWeights(o.variant, o.seed, weights));
  }
  OnnxRuntimeRun run;
  for (int size : o.sizes) {
    const std::string onnx =
        onnx_file ? weights : scratch.path() + "/" + name + std::to_string(size) + ".onnx";
    if (!onnx_file) {
      std::vector<std::string> argv = {o.python, export_script, name,
                                       onnx,     "--size",      std::to_string(size)};
      if (checkpoint) {
        argv.insert(argv.end(), {"--variant", o.variant, "--checkpoint", weights});
      } else if (!o.ssd_model_dir.empty()) {
        argv.insert(argv.end(), {"--model-dir", o.ssd_model_dir});
      }
      std::fprintf(stderr, "onnxruntime: exporting %s at %d\n", name.c_str(), size);
      MOGSERVE_RETURN_IF_ERROR(Capture(argv).status());
    }
    for (int batch : o.batch_sizes) {
      MOGSERVE_ASSIGN_OR_RETURN(
          const std::string line,
          Capture({"node", bench_script, onnx, "--modules", modules, "--batch",
                   std::to_string(batch), "--threads", std::to_string(o.threads), "--min-seconds",
                   std::to_string(o.min_seconds), "--min-runs", std::to_string(o.min_runs),
                   "--height", std::to_string(size), "--width", std::to_string(size)}));
      const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded() || !j.contains("median_ms")) {
        return Internal("tools/ort_bench.js printed no JSON line: " + line);
      }
      run.version = j.value("version", "");
      OnnxRuntimeRow row;
      row.size = size;
      row.batch = batch;
      row.median_ms = j.value("median_ms", 0.0);
      row.min_ms = j.value("min_ms", 0.0);
      row.ms_per_image = row.median_ms / batch;
      std::fprintf(stderr, "onnxruntime: %s %d batch %d: %.2f ms/image\n", name.c_str(), size,
                   batch, row.ms_per_image);
      run.rows.push_back(row);
    }
  }
  return run;
}

}  // namespace mogserve::bench
