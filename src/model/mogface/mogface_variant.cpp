#include "model/mogface/mogface_variant.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

namespace mogserve::model::mogface {
namespace {

constexpr std::string_view kModulePrefix = "module.";

class KeyListBuilder {
 public:
  void Add(std::string name, std::vector<int64_t> shape, bool used) {
    keys_.push_back({std::move(name), std::move(shape), used});
  }
  // A conv's weight [out, in, k, k] and optionally its bias [out].
  void Conv(const std::string& p, int64_t out, int64_t in, int64_t k, bool bias, bool used = true) {
    Add(p + ".weight", {out, in, k, k}, used);
    if (bias) Add(p + ".bias", {out}, used);
  }
  void BatchNorm(const std::string& p, int64_t c) {
    for (const char* s : {".weight", ".bias", ".running_mean", ".running_var"})
      Add(p + s, {c}, true);
    Add(p + ".num_batches_tracked", {}, false);
  }
  void GroupNorm(const std::string& p, int64_t c) {
    Add(p + ".weight", {c}, true);
    Add(p + ".bias", {c}, true);
  }
  std::vector<KeySpec> Take() { return std::move(keys_); }

 private:
  std::vector<KeySpec> keys_;
};

void AddBackbone(KeyListBuilder& b, const std::array<int, 4>& blocks) {
  b.Conv("backbone.conv1", 64, 3, 7, false);
  b.BatchNorm("backbone.bn1", 64);
  int64_t in = 64;
  for (int stage = 0; stage < 4; ++stage) {
    const int64_t p = int64_t{64} << stage;
    for (int i = 0; i < blocks[stage]; ++i) {
      const std::string pre =
          "backbone.layer" + std::to_string(stage + 1) + "." + std::to_string(i);
      b.Conv(pre + ".conv1", p, in, 1, false);
      b.BatchNorm(pre + ".bn1", p);
      b.Conv(pre + ".conv2", p, p, 3, false);
      b.BatchNorm(pre + ".bn2", p);
      b.Conv(pre + ".conv3", 4 * p, p, 1, false);
      b.BatchNorm(pre + ".bn3", 4 * p);
      if (i == 0) {
        b.Conv(pre + ".downsample.0", 4 * p, in, 1, false);
        b.BatchNorm(pre + ".downsample.1", 4 * p);
      }
      in = 4 * p;
    }
  }
}

void AddFpn(KeyListBuilder& b, bool dsfd_modules) {
  b.Conv("fpn.c6.0", 512, 2048, 1, true);
  b.BatchNorm("fpn.c6.1", 512);
  b.Conv("fpn.c6.3", 512, 512, 3, true);
  b.BatchNorm("fpn.c6.4", 512);
  b.Conv("fpn.c7.0", 128, 512, 1, true);
  b.BatchNorm("fpn.c7.1", 128);
  b.Conv("fpn.c7.3", 256, 128, 3, true);
  b.BatchNorm("fpn.c7.4", 256);
  b.Conv("fpn.c5_lat", 256, 2048, 3, true);
  b.Conv("fpn.c6_lat", 256, 512, 3, true);
  b.Conv("fpn.c7_lat", 256, 256, 3, true);
  for (const char* p : {"fpn.p2_lat", "fpn.p3_lat", "fpn.p4_lat"}) b.Conv(p, 256, 256, 3, true);
  b.Conv("fpn.ff_c5_c4.main_conv", 256, 1024, 1, true);
  b.Conv("fpn.ff_c4_c3.main_conv", 256, 512, 1, true);
  b.Conv("fpn.ff_c3_c2.main_conv", 256, 256, 1, true);
  if (dsfd_modules) {
    const int64_t in[6] = {256, 512, 1024, 2048, 256, 256};
    for (int i = 0; i < 6; ++i) {
      b.Conv("fpn.dsfd_modules." + std::to_string(i), 256, in[i], 3, true, false);
    }
  }
}

void AddSsh(KeyListBuilder& b) {
  const std::string p = "pred_net.conv_SSH.";
  b.Conv(p + "conv1", 256, 256, 3, true);
  b.Conv(p + "conv2", 128, 256, 3, true);
  for (const char* c : {"conv2_1", "conv2_2", "conv2_2_1"}) b.Conv(p + c, 128, 128, 3, true);
}

void AddCpm(KeyListBuilder& b) {
  const std::string p = "pred_net.conv_CPM.";
  struct ConvBn {
    const char* name;
    int64_t out, in, k;
  };
  for (const ConvBn& c : {ConvBn{"branch1", 512, 256, 1}, ConvBn{"branch2a", 128, 256, 1},
                          ConvBn{"branch2b", 128, 128, 3}, ConvBn{"branch2c", 512, 128, 1}}) {
    b.Conv(p + c.name + ".conv1", c.out, c.in, c.k, true);
    b.BatchNorm(p + c.name + ".bn1", c.out);
  }
  b.Conv(p + "ssh_1", 128, 512, 3, true);
  b.Conv(p + "ssh_dimred", 64, 512, 3, true);
  for (const char* c : {"ssh_2", "ssh_3a", "ssh_3b"}) b.Conv(p + c, 64, 64, 3, true);
}

void AddMogPredNet(KeyListBuilder& b, Variant variant, bool with_dsfd_heads) {
  const int64_t c = HeadChannels(variant);
  if (variant == Variant::kR101) {
    AddSsh(b);
  } else {
    AddCpm(b);
  }
  for (const char* tower : {"pred_net.deep_cls_head.", "pred_net.deep_loc_head."}) {
    // All four repeats use conv1 (spec §4a quirk); conv2-conv4 are dead weights.
    for (int i = 1; i <= 4; ++i)
      b.Conv(tower + ("conv" + std::to_string(i)), c, c, 3, true, i == 1);
    for (int i = 1; i <= 4; ++i) b.GroupNorm(tower + ("gn" + std::to_string(i)), c);
  }
  b.Conv("pred_net.pred_cls", 1, c, 3, true);
  b.Conv("pred_net.pred_loc", 4, c, 3, true);
  if (with_dsfd_heads) {
    b.Conv("pred_net.dsfd_loc", 4, 256, 3, true, false);
    b.Conv("pred_net.dsfd_conf", 1, 256, 3, true, false);
  }
}

void AddRetinaPredNet(KeyListBuilder& b) {
  for (int i = 0; i < 6; ++i) b.Conv("pred_net.pred_cls." + std::to_string(i), 1, 256, 3, true);
  for (int i = 0; i < 6; ++i) b.Conv("pred_net.pred_loc." + std::to_string(i), 4, 256, 3, true);
}

// "a, b, c (and 7 more)".
std::string CappedList(const std::vector<std::string>& items) {
  constexpr size_t kMaxListed = 10;
  std::string out;
  for (size_t i = 0; i < items.size() && i < kMaxListed; ++i) {
    if (i > 0) out += ", ";
    out += items[i];
  }
  if (items.size() > kMaxListed) {
    out += " (and " + std::to_string(items.size() - kMaxListed) + " more)";
  }
  return out;
}

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// Blocks in backbone.layer{stage}, counted as the consecutive indices with a conv1 weight.
int CountBlocks(const HostTensorMap& w, int stage) {
  int n = 0;
  while (w.count("backbone.layer" + std::to_string(stage) + "." + std::to_string(n) +
                 ".conv1.weight")) {
    ++n;
  }
  return n;
}

}  // namespace

const char* VariantName(Variant variant) {
  switch (variant) {
    case Variant::kR101:
      return "r101";
    case Variant::kE:
      return "e";
    case Variant::kR50:
      return "r50";
  }
  return "?";
}

StatusOr<Variant> ParseVariant(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  static const std::map<std::string, Variant> kNames = {
      {"r101", Variant::kR101},    {"large", Variant::kR101},  {"modelscope", Variant::kR101},
      {"e", Variant::kE},          {"r152", Variant::kE},      {"r50", Variant::kR50},
      {"baseline", Variant::kR50}, {"ali-ams", Variant::kR50}, {"sse", Variant::kR50}};
  auto it = kNames.find(lower);
  if (it == kNames.end()) {
    return InvalidArgument("unknown MogFace variant '" + std::string(name) +
                           "' (expected r101, e or r50)");
  }
  return it->second;
}

std::array<int, 4> BackboneBlocks(Variant variant) {
  switch (variant) {
    case Variant::kR101:
      return {3, 4, 23, 3};
    case Variant::kE:
      return {3, 4, 36, 3};  // not torchvision's [3,8,36,3] (spec §2)
    case Variant::kR50:
      break;
  }
  return {3, 4, 6, 3};
}

double AnchorScale(Variant variant) {
  return variant == Variant::kR50 ? 1.0 : 0.68;
}

int HeadChannels(Variant variant) {
  switch (variant) {
    case Variant::kR101:
      return 512;
    case Variant::kE:
      return 256;
    case Variant::kR50:
      break;
  }
  return 0;
}

bool HasDsfdModules(Variant variant) {
  return variant != Variant::kR50;
}

std::vector<KeySpec> ExpectedKeys(Variant variant, bool with_dsfd_heads) {
  KeyListBuilder b;
  AddBackbone(b, BackboneBlocks(variant));
  AddFpn(b, HasDsfdModules(variant));
  if (variant == Variant::kR50) {
    AddRetinaPredNet(b);
  } else {
    AddMogPredNet(b, variant, with_dsfd_heads);
  }
  return b.Take();
}

StatusOr<Variant> DetectVariant(const HostTensorMap& weights) {
  for (const auto& [name, tensor] : weights) {
    if (StartsWith(name, "fp_context.") || StartsWith(name, "pred_net_1.")) {
      return Unsupported(
          "MogFace HCAM checkpoint (key '" + name +
          "'): HCAM is not usable as released (its mask indexing clamps one past the border and "
          "crashes, and its conf_1 output is ignored by the released tests; spec §4d). Use the "
          "R50 Ali-AMS/SSE, R101 or E weights");
    }
  }
  Variant variant;
  if (weights.count("pred_net.conv_SSH.conv1.weight")) {
    variant = Variant::kR101;
  } else if (weights.count("pred_net.conv_CPM.branch1.conv1.weight")) {
    variant = Variant::kE;
  } else if (weights.count("pred_net.pred_cls.0.weight")) {
    variant = Variant::kR50;
  } else {
    return InvalidData(
        "not a MogFace checkpoint: none of pred_net.conv_SSH.conv1.weight (R101), "
        "pred_net.conv_CPM.branch1.conv1.weight (E), pred_net.pred_cls.0.weight (R50)");
  }
  const std::array<int, 4> expected = BackboneBlocks(variant);
  for (int stage = 1; stage <= 4; ++stage) {
    const int found = CountBlocks(weights, stage);
    if (found != expected[stage - 1]) {
      return InvalidData(std::string("MogFace checkpoint has the head of variant ") +
                         VariantName(variant) + " but backbone.layer" + std::to_string(stage) +
                         " has " + std::to_string(found) + " blocks, expected " +
                         std::to_string(expected[stage - 1]));
    }
  }
  if (variant != Variant::kR50) {
    auto it = weights.find("pred_net.deep_cls_head.conv1.weight");
    if (it == weights.end() || it->second.shape.empty() ||
        it->second.shape[0] != HeadChannels(variant)) {
      return InvalidData(std::string("MogFace checkpoint of variant ") + VariantName(variant) +
                         ": pred_net.deep_cls_head.conv1.weight missing or not " +
                         std::to_string(HeadChannels(variant)) + " channels wide");
    }
  }
  return variant;
}

Status CheckCheckpointKeys(const HostTensorMap& weights, Variant variant) {
  const std::vector<KeySpec> keys = ExpectedKeys(variant, /*with_dsfd_heads=*/true);
  std::set<std::string> known;
  std::vector<std::string> missing, misshaped, extra;
  for (const KeySpec& k : keys) {
    known.insert(k.name);
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
  for (const auto& [name, tensor] : weights) {
    if (!known.count(name)) extra.push_back(name);
  }
  if (missing.empty() && misshaped.empty() && extra.empty()) return Status::Ok();
  std::string msg = std::string("MogFace ") + VariantName(variant) + " checkpoint does not match:";
  if (!missing.empty()) {
    msg += " " + std::to_string(missing.size()) + " missing: " + CappedList(missing) + ";";
  }
  if (!misshaped.empty()) {
    msg += " " + std::to_string(misshaped.size()) +
           " with a wrong shape: " + CappedList(misshaped) + ";";
  }
  if (!extra.empty()) {
    msg += " " + std::to_string(extra.size()) + " unexpected: " + CappedList(extra) + ";";
  }
  msg.pop_back();
  return InvalidData(msg);
}

bool HasModulePrefix(const HostTensorMap& weights) {
  for (const auto& [name, tensor] : weights) {
    if (StartsWith(name, kModulePrefix)) return true;
  }
  return false;
}

HostTensorMap NormalizeCheckpointKeys(HostTensorMap weights) {
  HostTensorMap out;
  for (auto& [name, tensor] : weights) {
    if (!StartsWith(name, kModulePrefix)) out.emplace(name, std::move(tensor));
  }
  for (auto& [name, tensor] : weights) {
    if (!StartsWith(name, kModulePrefix)) continue;
    std::string stripped = name.substr(kModulePrefix.size());
    if (out.count(stripped)) {
      out.emplace(name, std::move(tensor));
    } else {
      out.emplace(std::move(stripped), std::move(tensor));
    }
  }
  return out;
}

}  // namespace mogserve::model::mogface
