// Reading a state_dict from a torch.save zip file without LibTorch: a small pickle machine for
// the opcodes and objects torch.save emits (protocol 2, OrderedDict, _rebuild_tensor_v2,
// _rebuild_parameter, typed storages). Written because LibTorch 1.13's own unpickler turns every
// collections.OrderedDict — which every model.state_dict() is — into None.
#pragma once

#include <cstdint>
#include <span>

#include "model/host_tensor.h"
#include "mogserve/status.h"

namespace mogserve::model {

// The state_dict in a torch.save zip archive: a dict of name → tensor, plain or under
// "state_dict", "model" or "net" (other entries such as "epoch" are ignored). Tensors of every
// storage type torch uses for weights (float, double, half, bfloat16, long, int, short, char,
// byte, bool) are converted to float32; views (offset/strides into a shared storage) are
// honoured. Errors name what was found: kInvalidData for malformed archives or pickles,
// kUnsupported for objects outside that set.
StatusOr<HostTensorMap> ReadTorchZipStateDict(std::span<const uint8_t> bytes);

}  // namespace mogserve::model
