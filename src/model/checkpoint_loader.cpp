#include "model/checkpoint_loader.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "common/file_util.h"
#include "model/safetensors.h"
#include "model/torch_state_dict.h"

namespace mogserve::model {
namespace {

// torch.save's legacy format starts with pickle protocol 2 and the LONG1 magic number
// 0x1950a86a20f9469cfc6c (torch/serialization.py MAGIC_NUMBER).
constexpr std::array<uint8_t, 14> kLegacyMagic = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c,
                                                  0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};

bool StartsWith(std::span<const uint8_t> bytes, std::span<const uint8_t> prefix) {
  return bytes.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), bytes.begin());
}

}  // namespace

CheckpointFormat SniffCheckpointFormat(std::span<const uint8_t> bytes) {
  static constexpr std::array<uint8_t, 4> kZip = {'P', 'K', 3, 4};
  if (StartsWith(bytes, kZip)) return CheckpointFormat::kTorchZip;
  if (StartsWith(bytes, kLegacyMagic)) return CheckpointFormat::kTorchLegacy;
  if (bytes.size() > 9 && bytes[8] == '{') {
    uint64_t header_bytes;
    std::memcpy(&header_bytes, bytes.data(), 8);
    if (header_bytes > 1 && header_bytes <= bytes.size() - 8) return CheckpointFormat::kSafetensors;
  }
  return CheckpointFormat::kUnknown;
}

StatusOr<HostTensorMap> LoadCheckpoint(const std::string& path) {
  MOGSERVE_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ReadFileBytes(path));
  StatusOr<HostTensorMap> tensors = InvalidData("");
  switch (SniffCheckpointFormat(bytes)) {
    case CheckpointFormat::kTorchZip:
      tensors = ReadTorchZipStateDict(bytes);
      break;
    case CheckpointFormat::kSafetensors:
      tensors = ParseSafetensors(bytes);
      break;
    case CheckpointFormat::kTorchLegacy:
      return Unsupported(path +
                         " is a legacy (pre-zip) PyTorch pickle, which LibTorch cannot read; "
                         "convert it once with: python3 tools/convert_checkpoint.py " +
                         path + " model.safetensors");
    case CheckpointFormat::kUnknown:
      return InvalidData(path +
                         " is not a checkpoint mogserve can read (expected a PyTorch .pt/.pth "
                         "zip file or safetensors)");
  }
  if (!tensors.ok()) {
    return Status(tensors.status().code(), path + ": " + tensors.status().message());
  }
  return tensors;
}

}  // namespace mogserve::model
