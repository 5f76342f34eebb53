// Loader for TensorFlow.js weight files: a JSON manifest plus one or more binary shards.
// Torch-free: tensors come back as plain float arrays with their TF shapes.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model/host_tensor.h"
#include "mogserve/status.h"

namespace mogserve::model {

// Shapes as stored by TF (conv kernels are [kh, kw, in, out]); values dequantized, int32 tensors
// rounded to integers.
using TfjsTensor = HostTensor;
using TfjsWeights = HostTensorMap;

// Parses a manifest (the JSON text) whose shards are given in manifest order, already read and
// concatenated into `shards`. Tensors are laid out back to back with no alignment; uint8
// quantized tensors take 1 byte per element (value = byte * scale + min, computed in double),
// float32 and int32 take 4 bytes. Fails with kInvalidData when the manifest is malformed or when
// the byte count does not add up exactly.
StatusOr<TfjsWeights> ParseTfjsWeights(const std::string& manifest_json,
                                       std::span<const uint8_t> shards);

// Reads `<dir>/<name>-weights_manifest.json` and the shards it names from `dir`.
StatusOr<TfjsWeights> LoadTfjsWeights(const std::string& dir, const std::string& name);

}  // namespace mogserve::model
