#include "bench/reference_bench.h"

#include <unistd.h>

#include <bit>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/file_util.h"
#include "common/subprocess.h"
#include "model/mogface/mogface_variant.h"
#include "model/mogface/synthetic_weights.h"

namespace mogserve::bench {
namespace {

namespace fs = std::filesystem;

constexpr const char* kDefaultPython = "/usr/bin/python3";
constexpr const char* kScriptRelative = "tests/reference/bench_reference.py";

std::string Join(const std::vector<std::string>& parts, const char* separator) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : separator) + p;
  return out;
}

std::string JoinInts(const std::vector<int>& values) {
  std::vector<std::string> parts;
  for (int v : values) parts.push_back(std::to_string(v));
  return Join(parts, ",");
}

// Runs argv[0] with argv (no shell); the child's stdout goes to our stderr (ours carries the
// report), or both to /dev/null when `quiet`. Returns the exit status, -1 if it did not start or
// died of a signal.
int RunChild(const std::vector<std::string>& argv, bool quiet) {
  SubprocessOptions options;
  options.in = Redirect::Inherit();
  options.out = quiet ? Redirect::Null() : Redirect::Fd(STDERR_FILENO);
  options.err = quiet ? Redirect::Null() : Redirect::Inherit();
  std::fflush(stdout);
  std::fflush(stderr);
  Subprocess child;
  if (!child.Start(argv, options).ok()) return -1;
  return child.Wait().exit_code;
}

StatusOr<ReferenceRun> ParseReferenceJson(const std::string& path) {
  std::ifstream in(path);
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.contains("rows")) {
    return InvalidData(path + ": the reference wrote no readable JSON report");
  }
  ReferenceRun run;
  run.torch_version = j.value("torch", "");
  run.bf16_mode = j.value("bf16_mode", "");
  run.memory_format = j.value("memory_format", "");
  run.threads = j.value("threads", 0);
  run.max_rss_bytes = j.value("max_rss_bytes", int64_t{0});
  for (const nlohmann::json& r : j["rows"]) {
    ReferenceRow row;
    row.size = r.value("size", 0);
    row.precision = r.value("precision", "");
    row.batch = r.value("batch", 0);
    row.latency = Summarize(r.value("samples_ms", std::vector<double>{}));
    run.rows.push_back(std::move(row));
  }
  return run;
}

}  // namespace

ScratchDir::ScratchDir() {
  std::string pattern = (fs::temp_directory_path() / "mogserve-bench-XXXXXX").string();
  if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  if (!path_.empty()) fs::remove_all(path_, ec);
}

std::string ResolveReferencePython(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("MOGSERVE_REFERENCE_PYTHON"); env != nullptr && *env != '\0')
    return env;
  return kDefaultPython;
}

std::string ResolveReferenceScript(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("MOGSERVE_REFERENCE_SCRIPT"); env != nullptr && *env != '\0')
    return env;
  // tests/reference/ in the working directory or next to the build, as other project folders.
  const fs::path script = fs::path(kScriptRelative);
  const std::string dir = FindProjectFolder(script.parent_path().string());
  if (!dir.empty() && fs::is_regular_file(fs::path(dir) / script.filename())) {
    return (fs::path(dir) / script.filename()).string();
  }
  return kScriptRelative;
}

Status CheckReferencePython(const std::string& python) {
  if (access(python.c_str(), X_OK) != 0) {
    return FailedPrecondition(python + " is not an executable interpreter");
  }
  if (RunChild({python, "-c", "import torch, numpy"}, /*quiet=*/true) != 0) {
    return FailedPrecondition(python +
                              " cannot import torch and numpy (scripts/setup.sh installs "
                              "Debian's python3-torch)");
  }
  return Status::Ok();
}

Status WriteSyntheticWeights(const std::string& variant_name, uint64_t seed,
                             const std::string& path) {
  static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");
  namespace mf = model::mogface;
  MOGSERVE_ASSIGN_OR_RETURN(const mf::Variant variant, mf::ParseVariant(variant_name));
  const model::HostTensorMap weights = mf::SyntheticWeights(variant, seed, false);
  nlohmann::json header = nlohmann::json::object();
  header["__metadata__"] = {{"format", "pt"},
                            {"variant", mf::VariantName(variant)},
                            {"source", "mogserve bench --synthetic-weights, seed " +
                                           std::to_string(seed) + ", used keys only"}};
  std::vector<const model::HostTensor*> order;
  int64_t offset = 0;
  for (const model::KeySpec& key : mf::ExpectedKeys(variant, false)) {
    if (!key.used) continue;
    const auto it = weights.find(key.name);
    if (it == weights.end()) return Internal("synthetic weights lack " + key.name);
    const int64_t bytes = it->second.numel() * 4;
    header[key.name] = {
        {"dtype", "F32"}, {"shape", it->second.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    order.push_back(&it->second);
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::ofstream out(path, std::ios::binary);
  const uint64_t header_bytes = text.size();
  out.write(reinterpret_cast<const char*>(&header_bytes), sizeof(header_bytes));
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const model::HostTensor* t : order) {
    out.write(reinterpret_cast<const char*>(t->values.data()),
              static_cast<std::streamsize>(t->values.size() * sizeof(float)));
  }
  out.close();
  return out ? Status::Ok() : Internal("cannot write " + path);
}

StatusOr<ReferenceRun> RunReferenceBench(const ReferenceBenchOptions& o) {
  ScratchDir scratch;
  if (scratch.path().empty()) return Internal("cannot create a temporary folder");
  const std::string json_path = scratch.path() + "/reference.json";
  std::vector<std::string> argv = {o.python,        o.script,
                                         o.weights,       o.variant,
                                         "--sizes",       JoinInts(o.sizes),
                                         "--batch-sizes", JoinInts(o.batch_sizes),
                                         "--precisions",  Join(o.precisions, ","),
                                         "--threads",     std::to_string(o.threads),
                                         "--warmup",      std::to_string(o.warmup),
                                         "--iterations",  std::to_string(o.min_iterations),
                                         "--min-seconds", std::to_string(o.min_seconds),
                                         "--json",        json_path,
                                         "--device",      o.device};
  if (o.device == "cuda") argv.push_back("--channels-last");
  const int rc = RunChild(argv, /*quiet=*/false);
  if (rc != 0) {
    return Internal("the reference failed (exit status " + std::to_string(rc) +
                    "): " + Join(argv, " "));
  }
  return ParseReferenceJson(json_path);
}

}  // namespace mogserve::bench
