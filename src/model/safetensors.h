// Reader for the safetensors format (an 8-byte little-endian header length, a JSON header
// {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {...}}, then the raw
// little-endian tensor bytes). The checkpoint format MogFace weights are converted to
// (tools/convert_checkpoint.py); torch-free.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "model/host_tensor.h"
#include "mogserve/status.h"

namespace mogserve::model {

// Parses a whole file held in memory. Float types (F32, F16, BF16, F64) and integer types (I64,
// I32, I16, I8, U8, BOOL) are converted to float32. Errors (kInvalidData, naming the tensor):
// a header length beyond the file, a header that is not a JSON object, an entry without dtype /
// shape / data_offsets, offsets outside the data or not matching shape x dtype size, tensors
// that overlap or leave holes (the format requires the data to be covered exactly);
// kUnsupported for other dtypes.
StatusOr<HostTensorMap> ParseSafetensors(std::span<const uint8_t> bytes);

// Reads and parses `path`; errors are prefixed with the path.
StatusOr<HostTensorMap> LoadSafetensors(const std::string& path);

}  // namespace mogserve::model
