#include "model/prepared_weights.h"

#include <cmath>
#include <set>

namespace mogserve::model {
namespace {

// "a, b, c (and 7 more)".
std::string CappedList(const std::vector<std::string>& items) {
  constexpr size_t kMaxListed = 10;
  std::string out;
  for (size_t i = 0; i < items.size() && i < kMaxListed; ++i) {
    if (i > 0) out += ", ";
    out += items[i];
  }
  if (items.size() > kMaxListed) {
    out += std::string(" (and ") + std::to_string(items.size() - kMaxListed) + " more)";
  }
  return out;
}

const HostTensor& Get(const HostTensorMap& weights, const std::string& key) {
  return weights.at(key);  // present: CheckWeightKeys ran first
}

// Writes one part's rows of a conv into an OIHW kernel (double) and its bias.
void ReadPart(const ConvDef& d, const WeightPart& part, const HostTensorMap& weights, int first_out,
              std::vector<double>& kernel, std::vector<double>& bias) {
  const int k = d.kernel, in = d.in_channels / d.groups;
  const std::vector<float>& src = Get(weights, part.weight_key).values;
  const std::vector<float>* src_bias =
      part.bias_key.empty() ? nullptr : &Get(weights, part.bias_key).values;
  for (int r = 0; r < part.rows; ++r) {
    const int row = part.first_row + r * part.row_step;
    const int out = first_out + r;
    for (int i = 0; i < in; ++i) {
      for (int y = 0; y < k; ++y) {
        for (int x = 0; x < k; ++x) {
          size_t from = 0;
          switch (part.layout) {
            case KernelLayout::kOihw:
              from = ((static_cast<size_t>(row) * in + i) * k + y) * k + x;
              break;
            case KernelLayout::kTfHwio:
            case KernelLayout::kTfDense:  // [in, out]: HWIO with k = 1
              from = ((static_cast<size_t>(y) * k + x) * d.in_channels + i) *
                         part.stored_out_channels +
                     row;
              break;
            case KernelLayout::kTfDepthwise:  // one input per group: the channel is the row
              from = (static_cast<size_t>(y) * k + x) * d.in_channels + row;
              break;
          }
          kernel[((static_cast<size_t>(out) * in + i) * k + y) * k + x] = src[from];
        }
      }
    }
    bias[out] = src_bias != nullptr ? (*src_bias)[row] : 0.0;
  }
}

PreparedConv PrepareConv(const ConvDef& d, const HostTensorMap& weights) {
  const int k = d.kernel, in = d.in_channels / d.groups;
  const size_t per_row = static_cast<size_t>(in) * k * k;
  std::vector<double> kernel(per_row * d.out_channels), bias(d.out_channels);
  int first_out = 0;
  for (const WeightPart& part : d.parts) {
    ReadPart(d, part, weights, first_out, kernel, bias);
    first_out += part.rows;
  }
  if (d.batch_norm) {
    const BatchNormKeys& bn = *d.batch_norm;
    const auto& gamma = Get(weights, bn.gamma).values;
    const auto& beta = Get(weights, bn.beta).values;
    const auto& mean = Get(weights, bn.mean).values;
    const auto& var = Get(weights, bn.var).values;
    for (int o = 0; o < d.out_channels; ++o) {
      const double scale = gamma[o] / std::sqrt(static_cast<double>(var[o]) + bn.eps);
      for (size_t j = 0; j < per_row; ++j) kernel[o * per_row + j] *= scale;
      bias[o] = (bias[o] - mean[o]) * scale + beta[o];
    }
  }
  PreparedConv out;
  out.weight.shape = {d.out_channels, in, k, k};
  out.weight.values.assign(kernel.begin(), kernel.end());
  out.bias.shape = {d.out_channels};
  out.bias.values.assign(bias.begin(), bias.end());
  return out;
}

}  // namespace

Status CheckWeightKeys(const Network& network, const HostTensorMap& weights,
                       const std::string& what) {
  std::set<std::string> known;
  std::vector<std::string> missing, misshaped, extra;
  for (const KeySpec& k : network.Keys()) {
    if (!known.insert(k.name).second) continue;  // listed twice (shared): check once
    auto it = weights.find(k.name);
    if (it == weights.end()) {
      if (k.used) missing.push_back(k.name);
      continue;
    }
    const bool scalar_ok = k.shape.empty() && it->second.numel() == 1;
    if (it->second.shape != k.shape && !scalar_ok) {
      misshaped.push_back(k.name + " " + ShapeString(it->second.shape) + " (expected " +
                          ShapeString(k.shape) + ")");
    }
  }
  if (!network.allows_unlisted_keys()) {
    for (const auto& [name, tensor] : weights) {
      if (!known.count(name)) extra.push_back(name);
    }
  }
  if (missing.empty() && misshaped.empty() && extra.empty()) return Status::Ok();
  std::string msg = what + " does not match:";
  if (!missing.empty()) {
    msg += std::string(" ") + std::to_string(missing.size()) + " missing: " + CappedList(missing) +
           ";";
  }
  if (!misshaped.empty()) {
    msg += std::string(" ") + std::to_string(misshaped.size()) +
           " with a wrong shape: " + CappedList(misshaped) + ";";
  }
  if (!extra.empty()) {
    msg +=
        std::string(" ") + std::to_string(extra.size()) + " unexpected: " + CappedList(extra) + ";";
  }
  msg.pop_back();
  return InvalidData(msg);
}

StatusOr<PreparedWeights> PrepareWeights(const Network& network, const HostTensorMap& weights,
                                         const std::string& what) {
  MOGSERVE_RETURN_IF_ERROR(CheckWeightKeys(network, weights, what));
  PreparedWeights out;
  for (const ConvDef& d : network.convs()) out.convs.push_back(PrepareConv(d, weights));
  for (const NormDef& d : network.norms()) {
    out.norms.push_back({Get(weights, d.gamma_key), Get(weights, d.beta_key)});
  }
  for (const KeySpec& k : network.other_keys()) {
    if (k.used) out.others.emplace(k.name, Get(weights, k.name));
  }
  return out;
}

}  // namespace mogserve::model
