#include "model/tfjs_weights.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/file_util.h"

namespace mogserve::model {
namespace {

using nlohmann::json;

struct EntrySpec {
  std::string name;
  std::vector<int64_t> shape;
  std::string dtype;        // stored dtype: "float32" or "int32"
  std::string quant_dtype;  // "" (raw), "uint8" or "uint16"
  double scale = 1.0;
  double min = 0.0;
};

int64_t Product(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

StatusOr<EntrySpec> ParseEntry(const json& w) {
  EntrySpec e;
  if (!w.is_object() || !w.contains("name") || !w.contains("shape") || !w.contains("dtype")) {
    return InvalidData("tfjs manifest: a weight entry lacks name/shape/dtype");
  }
  e.name = w["name"].get<std::string>();
  e.dtype = w["dtype"].get<std::string>();
  for (const auto& d : w["shape"]) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0) {
      return InvalidData("tfjs manifest: bad shape for '" + e.name + "'");
    }
    e.shape.push_back(d.get<int64_t>());
  }
  if (e.dtype != "float32" && e.dtype != "int32") {
    return Unsupported("tfjs manifest: dtype '" + e.dtype + "' of '" + e.name + "'");
  }
  if (w.contains("quantization")) {
    const json& q = w["quantization"];
    e.quant_dtype = q.value("dtype", "");
    if (e.quant_dtype != "uint8" && e.quant_dtype != "uint16") {
      return Unsupported("tfjs manifest: quantization dtype '" + e.quant_dtype + "' of '" + e.name +
                         "'");
    }
    if (!q.contains("scale") || !q.contains("min")) {
      return InvalidData("tfjs manifest: quantization of '" + e.name + "' lacks scale/min");
    }
    e.scale = q["scale"].get<double>();
    e.min = q["min"].get<double>();
  }
  return e;
}

size_t BytesPerElement(const EntrySpec& e) {
  if (e.quant_dtype == "uint8") return 1;
  if (e.quant_dtype == "uint16") return 2;
  return 4;
}

TfjsTensor Materialize(const EntrySpec& e, const uint8_t* p) {
  TfjsTensor t;
  t.shape = e.shape;
  const int64_t n = Product(e.shape);
  t.values.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    double v;
    if (e.quant_dtype == "uint8") {
      v = p[i] * e.scale + e.min;
    } else if (e.quant_dtype == "uint16") {
      uint16_t q;
      std::memcpy(&q, p + 2 * i, 2);
      v = q * e.scale + e.min;
    } else if (e.dtype == "int32") {
      int32_t q;
      std::memcpy(&q, p + 4 * i, 4);
      v = q;
    } else {
      float f;
      std::memcpy(&f, p + 4 * i, 4);
      v = f;
    }
    if (e.dtype == "int32") v = std::round(v);
    t.values[static_cast<size_t>(i)] = static_cast<float>(v);
  }
  return t;
}

StatusOr<TfjsWeights> ParseManifestAndShards(const std::string& manifest_json,
                                             std::span<const uint8_t> shards) {
  json manifest = json::parse(manifest_json, nullptr, /*allow_exceptions=*/false);
  if (manifest.is_discarded() || !manifest.is_array()) {
    return InvalidData("tfjs manifest is not a JSON array of weight groups");
  }
  TfjsWeights out;
  size_t offset = 0;
  for (const json& group : manifest) {
    if (!group.is_object() || !group.contains("weights") || !group["weights"].is_array()) {
      return InvalidData("tfjs manifest: a group lacks its 'weights' array");
    }
    for (const json& w : group["weights"]) {
      MOGSERVE_ASSIGN_OR_RETURN(EntrySpec e, ParseEntry(w));
      const size_t bytes = static_cast<size_t>(Product(e.shape)) * BytesPerElement(e);
      if (offset + bytes > shards.size()) {
        return InvalidData("tfjs weights: '" + e.name + "' needs bytes [" + std::to_string(offset) +
                           ", " + std::to_string(offset + bytes) + ") but the shards hold " +
                           std::to_string(shards.size()) + " bytes");
      }
      out[e.name] = Materialize(e, shards.data() + offset);
      offset += bytes;
    }
  }
  if (offset != shards.size()) {
    return InvalidData("tfjs weights: the manifest describes " + std::to_string(offset) +
                       " bytes but the shards hold " + std::to_string(shards.size()));
  }
  return out;
}

// The shard file names, in manifest order.
StatusOr<std::vector<std::string>> ShardPaths(const std::string& manifest_json) {
  json manifest = json::parse(manifest_json, nullptr, false);
  if (manifest.is_discarded() || !manifest.is_array()) {
    return InvalidData("not a tfjs weights manifest (expected a JSON array)");
  }
  std::vector<std::string> paths;
  for (const json& group : manifest) {
    if (!group.is_object() || !group.contains("paths") || !group["paths"].is_array()) {
      return InvalidData("a weight group lacks its 'paths' array");
    }
    for (const json& p : group["paths"]) {
      if (!p.is_string() || p.get<std::string>().find('/') != std::string::npos) {
        return InvalidData("shard paths must be plain file names");
      }
      paths.push_back(p.get<std::string>());
    }
  }
  return paths;
}

}  // namespace

StatusOr<TfjsWeights> ParseTfjsWeights(const std::string& manifest_json,
                                       std::span<const uint8_t> shards) {
  try {
    return ParseManifestAndShards(manifest_json, shards);
  } catch (const json::exception& e) {
    return InvalidData(std::string("tfjs manifest has an unexpected structure: ") + e.what());
  }
}

StatusOr<TfjsWeights> LoadTfjsWeights(const std::string& dir, const std::string& name) {
  const std::string manifest_path = dir + "/" + name + "-weights_manifest.json";
  MOGSERVE_ASSIGN_OR_RETURN(std::vector<uint8_t> manifest_bytes, ReadFileBytes(manifest_path));
  std::string manifest_text(manifest_bytes.begin(), manifest_bytes.end());
  auto shard_names = ShardPaths(manifest_text);
  if (!shard_names.ok()) {
    return Status(shard_names.status().code(),
                  manifest_path + ": " + shard_names.status().message());
  }
  std::vector<uint8_t> shards;
  for (const std::string& shard : *shard_names) {
    MOGSERVE_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ReadFileBytes(dir + "/" + shard));
    shards.insert(shards.end(), bytes.begin(), bytes.end());
  }
  auto weights = ParseTfjsWeights(manifest_text, shards);
  if (!weights.ok()) {
    return Status(weights.status().code(), manifest_path + ": " + weights.status().message());
  }
  return weights;
}

}  // namespace mogserve::model
