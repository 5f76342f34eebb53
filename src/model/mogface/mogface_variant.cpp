#include "model/mogface/mogface_variant.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "common/enum_names.h"
#include "model/mogface/mogface_network.h"
#include "model/prepared_weights.h"

namespace mogserve::model::mogface {
namespace {

constexpr std::string_view kModulePrefix = "module.";

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

constexpr EnumNames<Variant, Variant::kR50> kVariantNames{{"r101", "e", "r50"}};

const char* VariantName(Variant variant) {
  return NameOf(kVariantNames, variant, "?");
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
  return BuildMogFaceNetwork(variant, with_dsfd_heads)->Keys();
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
  return CheckWeightKeys(*BuildMogFaceNetwork(variant, /*list_dsfd_heads=*/true), weights,
                         std::string("MogFace ") + VariantName(variant) + " checkpoint");
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
