// A network's weights as every backend consumes them, prepared once on the host from a
// checkpoint's tensors: kernels in OIHW, BatchNorm folded in FP64 and then cast to float32,
// several stored kernels fused into one where the network says so (the SSD's box + face-logit
// heads). Torch-free; immutable once built, shared by all engine instances and backends.
#pragma once

#include <string>
#include <vector>

#include "model/host_tensor.h"
#include "model/network.h"
#include "mogserve/status.h"

namespace mogserve::model {

struct PreparedConv {
  HostTensor weight;  // [out, in / groups, k, k]
  HostTensor bias;    // [out]; zeros for bias-free convolutions without BatchNorm
};

struct PreparedNorm {
  HostTensor gamma;  // [channels]
  HostTensor beta;
};

struct PreparedWeights {
  std::vector<PreparedConv> convs;  // by ConvDef index
  std::vector<PreparedNorm> norms;  // by NormDef index
  HostTensorMap others;             // the used Network::other_keys() (the SSD's anchor table)
};

// Strict check of a checkpoint against the network's keys: every used key present with its
// exact shape, unused keys optional but shaped right when present (a scalar key: any single
// value), and nothing else unless the network allows unlisted keys. kInvalidData starting with
// `what` and listing the missing, mis-shaped and unexpected keys (the first 10 of each kind).
Status CheckWeightKeys(const Network& network, const HostTensorMap& weights,
                       const std::string& what);

// CheckWeightKeys, then the preparation above.
StatusOr<PreparedWeights> PrepareWeights(const Network& network, const HostTensorMap& weights,
                                         const std::string& what);

}  // namespace mogserve::model
