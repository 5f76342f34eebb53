#include "engine/cuda/device_weights.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "common/enum_names.h"
#include "engine/cuda/arena.h"
#include "engine/cuda/float16.h"

namespace mogserve::engine::cuda {
namespace {

// Appends `value` in `type` to `out` (little-endian, as the device reads it).
void Store(StorageType type, float value, uint8_t* out) {
  switch (type) {
    case StorageType::kF32:
      std::memcpy(out, &value, 4);
      return;
    case StorageType::kF16: {
      const uint16_t bits = FloatToHalfBits(value);
      std::memcpy(out, &bits, 2);
      return;
    }
    case StorageType::kBf16: {
      const uint16_t bits = FloatToBf16Bits(value);
      std::memcpy(out, &bits, 2);
      return;
    }
  }
}

StatusOr<DeviceConvWeights> PrepareConv(const model::ConvDef& def, const model::PreparedConv& w,
                                        StorageType type) {
  DeviceConvWeights d;
  d.real_out_channels = def.out_channels;
  d.real_in_channels = def.in_channels;
  d.kernel = def.kernel;
  d.groups = def.groups;
  if (def.groups == 1) {
    d.out_channels = DeviceChannels(def.out_channels);
    d.in_channels = DeviceChannels(def.in_channels);
  } else if (IsDepthwise(def)) {
    // One group per device channel: the padding channels get zero kernels and biases, so they
    // stay zero (BlazeFace's 28-, 36-, 42-channel blocks).
    d.out_channels = d.in_channels = d.groups = DeviceChannels(def.out_channels);
  } else {
    if (def.in_channels % 8 != 0 || def.out_channels % 8 != 0) {
      return Unsupported(def.name + ": grouped convolution with " +
                         std::to_string(def.in_channels) + " -> " +
                         std::to_string(def.out_channels) +
                         " channels; the CUDA backend needs multiples of 8 there");
    }
    d.out_channels = def.out_channels;
    d.in_channels = def.in_channels;
  }
  const int k = def.kernel, real_cg = def.in_channels / def.groups;
  const int cg = d.in_channels / d.groups;
  const int64_t want = int64_t{def.out_channels} * real_cg * k * k;
  if (w.weight.numel() != want || static_cast<int64_t>(w.weight.values.size()) != want ||
      static_cast<int>(w.bias.values.size()) != def.out_channels) {
    return InvalidArgument(def.name + ": prepared weight has " +
                           std::to_string(w.weight.values.size()) + " values and bias " +
                           std::to_string(w.bias.values.size()) + ", the definition needs " +
                           std::to_string(want) + " and " + std::to_string(def.out_channels));
  }
  const int bytes = StorageBytes(type);
  d.weight.assign(static_cast<size_t>(d.out_channels) * k * k * cg * bytes, 0);
  d.bias.assign(static_cast<size_t>(d.out_channels) * bytes, 0);
  // Zero bits are +0 in every storage type, so the padding needs no writes.
  for (int o = 0; o < def.out_channels; ++o) {
    for (int c = 0; c < real_cg; ++c) {
      for (int r = 0; r < k; ++r) {
        for (int s = 0; s < k; ++s) {
          const float v = w.weight.values[((static_cast<size_t>(o) * real_cg + c) * k + r) * k + s];
          const size_t dst = ((static_cast<size_t>(o) * k + r) * k + s) * cg + c;
          Store(type, v, d.weight.data() + dst * bytes);
        }
      }
    }
    Store(type, w.bias.values[o], d.bias.data() + static_cast<size_t>(o) * bytes);
  }
  return d;
}

}  // namespace

StorageType StorageTypeOf(Precision precision) {
  switch (precision) {
    case Precision::kFp16:
      return StorageType::kF16;
    case Precision::kBf16:
      return StorageType::kBf16;
    case Precision::kFp32:
    case Precision::kTf32:
    case Precision::kInt8:  // refused for cuda before an engine is made
      return StorageType::kF32;
  }
  return StorageType::kF32;
}

int StorageBytes(StorageType type) {
  return type == StorageType::kF32 ? 4 : 2;
}

constexpr EnumNames<StorageType, StorageType::kBf16> kStorageTypeNames{{"f32", "f16", "bf16"}};

const char* StorageTypeName(StorageType type) {
  return NameOf(kStorageTypeNames, type, "?");
}

int64_t DeviceWeights::bytes() const {
  int64_t total = 0;
  for (const DeviceConvWeights& c : convs) total += c.weight.size() + c.bias.size();
  for (const DeviceNormWeights& n : norms) total += (n.gamma.size() + n.beta.size()) * 4;
  return total;
}

StatusOr<DeviceWeights> PrepareDeviceWeights(const model::Network& network,
                                             const model::PreparedWeights& weights,
                                             Precision precision) {
  if (weights.convs.size() != network.convs().size() ||
      weights.norms.size() != network.norms().size()) {
    return InvalidArgument(
        "prepared weights hold " + std::to_string(weights.convs.size()) + " convolutions and " +
        std::to_string(weights.norms.size()) + " norms; " + network.name() + " defines " +
        std::to_string(network.convs().size()) + " and " + std::to_string(network.norms().size()));
  }
  DeviceWeights out;
  out.type = StorageTypeOf(precision);
  for (size_t i = 0; i < network.convs().size(); ++i) {
    MOGSERVE_ASSIGN_OR_RETURN(DeviceConvWeights conv,
                              PrepareConv(network.convs()[i], weights.convs[i], out.type));
    out.convs.push_back(std::move(conv));
  }
  for (size_t i = 0; i < network.norms().size(); ++i) {
    const model::NormDef& def = network.norms()[i];
    const model::PreparedNorm& w = weights.norms[i];
    if (static_cast<int>(w.gamma.values.size()) != def.channels ||
        static_cast<int>(w.beta.values.size()) != def.channels) {
      return InvalidArgument(def.name + ": gamma/beta have " +
                             std::to_string(w.gamma.values.size()) + "/" +
                             std::to_string(w.beta.values.size()) + " values, the norm has " +
                             std::to_string(def.channels) + " channels");
    }
    DeviceNormWeights n;
    n.gamma.assign(DeviceChannels(def.channels), 1.0f);
    n.beta.assign(DeviceChannels(def.channels), 0.0f);
    std::copy(w.gamma.values.begin(), w.gamma.values.end(), n.gamma.begin());
    std::copy(w.beta.values.begin(), w.beta.values.end(), n.beta.begin());
    out.norms.push_back(std::move(n));
  }
  return out;
}

}  // namespace mogserve::engine::cuda
