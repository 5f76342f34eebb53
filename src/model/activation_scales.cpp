#include "model/activation_scales.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>

#include <nlohmann/json.hpp>

#include "common/file_util.h"

namespace mogserve::model {
namespace {

std::string Number(double v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.9g", v);
  return text;
}

std::string Quoted(const std::string& s) { return nlohmann::json(s).dump(); }

}  // namespace

void ActivationHistogram::Add(const float* values, int64_t count) {
  int64_t negative = 0;
  for (int64_t i = 0; i < count; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &values[i], sizeof(bits));
    negative += (bits >> 31) & (values[i] != 0.0f);
    bits &= 0x7fffffffu;
    // NaN and infinity land in the top bins: they never set a finite range below them.
    ++counts_[bits >> 16];
  }
  total_ += count;
  negative_ += negative;
}

double ActivationHistogram::Percentile(double percentile) const {
  if (total_ == 0) return 0;
  const double wanted = std::ceil(static_cast<double>(total_) * percentile / 100.0);
  int64_t seen = 0;
  for (int bin = 0; bin < kBins; ++bin) {
    seen += counts_[bin];
    if (static_cast<double>(seen) >= wanted) {
      const uint32_t edge = (static_cast<uint32_t>(bin) + 1) << 16;
      float value;
      std::memcpy(&value, &edge, sizeof(value));
      return value;
    }
  }
  return 0;
}

const TensorScale* ActivationScales::Find(int tensor) const {
  for (const TensorScale& t : tensors) {
    if (t.tensor == tensor) return &t;
  }
  return nullptr;
}

std::vector<int> CalibratedTensors(const Network& network) {
  std::set<int> tensors;
  for (const Op& op : network.ops()) {
    if (op.kind != OpKind::kConv) continue;
    tensors.insert(op.inputs[0]);
    tensors.insert(op.output);
  }
  return {tensors.begin(), tensors.end()};
}

ActivationScales ScalesFromHistograms(const Network& network,
                                      const std::vector<ActivationHistogram>& histograms,
                                      double percentile, int images) {
  ActivationScales s;
  s.network = network.name();
  s.percentile = percentile;
  s.images = images;
  for (size_t t = 0; t < histograms.size(); ++t) {
    const ActivationHistogram& h = histograms[t];
    if (h.total() == 0) continue;
    s.tensors.push_back({static_cast<int>(t), network.tensor_names()[t], h.Percentile(percentile),
                         h.non_negative()});
  }
  return s;
}

std::string ActivationScalesJson(const ActivationScales& s) {
  std::string text = "{\n";
  text += "  \"network\": " + Quoted(s.network) + ",\n";
  text += "  \"method\": " + Quoted(s.method) + ",\n";
  text += "  \"percentile\": " + Number(s.percentile) + ",\n";
  text += "  \"images\": " + std::to_string(s.images) + ",\n";
  text += "  \"tensors\": [\n";
  for (size_t i = 0; i < s.tensors.size(); ++i) {
    const TensorScale& t = s.tensors[i];
    text += "    {\"tensor\": " + std::to_string(t.tensor) + ", \"name\": " + Quoted(t.name) +
            ", \"range\": " + Number(t.range) +
            ", \"non_negative\": " + (t.non_negative ? "true" : "false") + "}";
    text += i + 1 < s.tensors.size() ? ",\n" : "\n";
  }
  text += "  ]\n}\n";
  return text;
}

StatusOr<ActivationScales> ReadActivationScales(const std::string& path, const Network& network) {
  StatusOr<std::vector<uint8_t>> bytes = ReadFileBytes(path);
  if (!bytes.ok()) {
    return Status(bytes.status().code(), "calibration file " + path + ": " +
                                             bytes.status().message());
  }
  auto bad = [&](const std::string& what) {
    return InvalidData("calibration file " + path + ": " + what);
  };
  nlohmann::json j = nlohmann::json::parse(bytes->begin(), bytes->end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
  ActivationScales s;
  if (!j.contains("network") || !j["network"].is_string()) return bad("'network' must be a string");
  s.network = j["network"].get<std::string>();
  if (s.network != network.name()) {
    return bad("made for network '" + s.network + "', not '" + network.name() +
               "' (run mogserve calibrate for this model)");
  }
  if (j.contains("method") && j["method"].is_string()) s.method = j["method"].get<std::string>();
  if (j.contains("percentile") && j["percentile"].is_number()) {
    s.percentile = j["percentile"].get<double>();
  }
  if (j.contains("images") && j["images"].is_number_integer()) s.images = j["images"].get<int>();
  if (!j.contains("tensors") || !j["tensors"].is_array()) return bad("'tensors' must be an array");
  const int count = static_cast<int>(network.tensor_names().size());
  for (const nlohmann::json& e : j["tensors"]) {
    if (!e.is_object() || !e.contains("tensor") || !e["tensor"].is_number_integer() ||
        !e.contains("name") || !e["name"].is_string() || !e.contains("range") ||
        !e["range"].is_number()) {
      return bad("each entry of 'tensors' needs 'tensor' (integer), 'name' and 'range'");
    }
    TensorScale t;
    t.tensor = e["tensor"].get<int>();
    t.name = e["name"].get<std::string>();
    t.range = e["range"].get<double>();
    t.non_negative = e.value("non_negative", false);
    if (t.tensor < 0 || t.tensor >= count) {
      return bad("tensor " + std::to_string(t.tensor) + " does not exist (the network has " +
                 std::to_string(count) + ")");
    }
    if (t.name != network.tensor_names()[t.tensor]) {
      return bad("tensor " + std::to_string(t.tensor) + " is '" + t.name + "' in the file but '" +
                 network.tensor_names()[t.tensor] + "' in the network");
    }
    if (!std::isfinite(t.range) || t.range <= 0) {
      return bad("tensor " + std::to_string(t.tensor) + " ('" + t.name +
                 "'): 'range' must be a finite number > 0, not " + Number(t.range));
    }
    s.tensors.push_back(std::move(t));
  }
  return s;
}

}  // namespace mogserve::model
