#include "model/network.h"

#include "common/enum_names.h"

namespace mogserve::model {

constexpr EnumNames<Activation, Activation::kRelu6> kActivationNames{{"none", "relu", "relu6"}};

const char* ActivationName(Activation act) {
  return NameOf(kActivationNames, act, "?");
}

constexpr EnumNames<OpKind, OpKind::kActivation> kOpKindNames{
    {"conv", "max_pool", "group_norm", "upsample_add", "concat", "pad_channels", "activation"}};

const char* OpKindName(OpKind kind) {
  return NameOf(kOpKindNames, kind, "?");
}

std::vector<KeySpec> Network::ConvKeys(int conv) const {
  const ConvDef& d = convs_[conv];
  std::vector<KeySpec> keys;
  const int64_t k = d.kernel;
  for (const WeightPart& p : d.parts) {
    const int64_t out = p.stored_out_channels;
    std::vector<int64_t> shape;
    switch (p.layout) {
      case KernelLayout::kOihw:
        shape = {out, d.in_channels / d.groups, k, k};
        break;
      case KernelLayout::kTfHwio:
        shape = {k, k, d.in_channels, out};
        break;
      case KernelLayout::kTfDepthwise:
        shape = {k, k, d.in_channels, 1};
        break;
      case KernelLayout::kTfDense:
        shape = {d.in_channels, out};
        break;
    }
    keys.push_back({p.weight_key, shape, true});
    if (!p.bias_key.empty()) keys.push_back({p.bias_key, {out}, true});
  }
  if (d.batch_norm) {
    const BatchNormKeys& bn = *d.batch_norm;
    for (const std::string* key : {&bn.gamma, &bn.beta, &bn.mean, &bn.var}) {
      keys.push_back({*key, {d.out_channels}, true});
    }
    if (!bn.num_batches_tracked.empty()) keys.push_back({bn.num_batches_tracked, {}, false});
  }
  return keys;
}

std::vector<KeySpec> Network::NormKeys(int norm) const {
  const NormDef& d = norms_[norm];
  return {{d.gamma_key, {d.channels}, true}, {d.beta_key, {d.channels}, true}};
}

std::vector<KeySpec> Network::Keys() const {
  std::vector<KeySpec> keys;
  for (int i = 0; i < static_cast<int>(convs_.size()); ++i) {
    for (KeySpec& k : ConvKeys(i)) keys.push_back(std::move(k));
  }
  for (int i = 0; i < static_cast<int>(norms_.size()); ++i) {
    for (KeySpec& k : NormKeys(i)) keys.push_back(std::move(k));
  }
  keys.insert(keys.end(), other_keys_.begin(), other_keys_.end());
  return keys;
}

}  // namespace mogserve::model
