// A network's prepared weights in the CUDA backend's layout, built on the host once per model and
// precision (plain C++: tested on any machine), then copied to the device as they are.
//
// From model::PreparedWeights (OIHW, FP32, BatchNorm already folded in FP64):
//   - convolution kernels become KRSC ([out, kh, kw, in / groups]: cuDNN's NHWC filter layout);
//   - ungrouped convolutions get their input channels padded to DeviceChannels() with zero
//     weights (the stem's 3 → 8: the pre-processing writes 8 channels, the extra ones 0) and
//     their output channels padded the same way with zero weights and zero bias (the
//     predictors' 1 and 4 → 8); depthwise ones get one group per device channel (the padding
//     channels' kernels and biases zero); other grouped ones must have multiples of 8;
//   - values are stored in the activations' type: FP32 for fp32 and tf32 (cuDNN's math mode
//     does the TF32 rounding), FP16 or BF16 rounded to nearest even otherwise; biases too (the
//     fused cuDNN call takes them in the I/O type);
//   - GroupNorm gamma and beta stay FP32 (the affine runs in FP32), padded with gamma 1, beta 0.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/engine.h"
#include "model/network.h"
#include "model/prepared_weights.h"
#include "mogserve/status.h"

namespace mogserve::engine::cuda {

// How activations and weights are stored on the device.
enum class StorageType { kF32, kF16, kBf16 };
StorageType StorageTypeOf(Precision precision);
int StorageBytes(StorageType type);
const char* StorageTypeName(StorageType type);  // "f32", "f16", "bf16"

// Whether `def` is depthwise: one input and one output channel per group.
inline bool IsDepthwise(const model::ConvDef& def) {
  return def.groups > 1 && def.groups == def.in_channels && def.groups == def.out_channels;
}

struct DeviceConvWeights {
  int out_channels = 0;       // padded K
  int real_out_channels = 0;  // K of the network
  int in_channels = 0;        // padded C (total; in_channels / groups per filter row)
  int real_in_channels = 0;
  int kernel = 1;
  int groups = 1;
  std::vector<uint8_t> weight;  // K x kh x kw x (C / groups) values of the storage type
  std::vector<uint8_t> bias;    // K values of the storage type
};

struct DeviceNormWeights {
  std::vector<float> gamma;  // DeviceChannels(channels) values
  std::vector<float> beta;
};

struct DeviceWeights {
  StorageType type = StorageType::kF32;
  std::vector<DeviceConvWeights> convs;  // by ConvDef index
  std::vector<DeviceNormWeights> norms;  // by NormDef index
  int64_t bytes() const;                 // Σ of every buffer above
};

// kInvalidArgument when the weights do not fit the network's definitions (a count or a size),
// kUnsupported for a grouped convolution whose channels are not multiples of 8.
StatusOr<DeviceWeights> PrepareDeviceWeights(const model::Network& network,
                                             const model::PreparedWeights& weights,
                                             Precision precision);

}  // namespace mogserve::engine::cuda
