// Loading model checkpoints into host tensors, torch-free: PyTorch zip files written by
// torch.save (.pt, .pth; see torch_state_dict.h) and safetensors. Legacy (pre-zip) PyTorch pickles
// are recognised and refused with the conversion command, because LibTorch cannot read them.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "model/host_tensor.h"
#include "mogserve/status.h"

namespace mogserve::model {

enum class CheckpointFormat { kUnknown, kTorchZip, kTorchLegacy, kSafetensors };

// From the first bytes: "PK\3\4" (zip), the legacy pickle magic, or a safetensors header (an
// 8-byte length followed by '{').
CheckpointFormat SniffCheckpointFormat(std::span<const uint8_t> bytes);

// Reads any supported checkpoint, keys as stored (a DataParallel "module." prefix is the
// network's business: mogface::NormalizeCheckpointKeys). Errors are prefixed with the path; a
// legacy pickle gets kUnsupported with the tools/convert_checkpoint.py command to run.
StatusOr<HostTensorMap> LoadCheckpoint(const std::string& path);

}  // namespace mogserve::model
