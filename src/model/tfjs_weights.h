// Loader for TensorFlow.js weight files: a JSON manifest plus one or more binary shards.
// Torch-free: tensors come back as plain float arrays with their TF shapes.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "mogserve/status.h"

namespace mogserve::model {

struct TfjsTensor {
  std::vector<int64_t> shape;  // as stored by TF (conv kernels are [kh, kw, in, out])
  std::vector<float> values;   // dequantized; int32 tensors hold rounded integers
  int64_t numel() const;
};

using TfjsWeights = std::map<std::string, TfjsTensor>;

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
