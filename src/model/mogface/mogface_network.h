// The MogFace networks (spec: specs/mogface.md §2-§4, §6a) written once as a torch-free
// Network: ResNet backbone with BN folded, LFPN without the training-only DSFD branch, and the
// variant's head (R101: SSH + 512-channel GN towers; E: CPM + 256-channel towers; R50: per-level
// predictors). The output stage is conf = sigmoid(cls) and loc = raw deltas, levels P2..P7,
// each row-major (spec §4e). Checkpoint keys, shapes and MACs all derive from this definition.
#pragma once

#include <memory>

#include "model/mogface/mogface_variant.h"
#include "model/network.h"
#include "mogserve/status.h"

namespace mogserve::model::mogface {

inline constexpr int kLevels = 6;

// list_dsfd_heads: also list the original checkpoints' training-only pred_net.dsfd_{conf,loc}
// heads as allowed (unused) keys (ignored for kR50).
std::shared_ptr<const Network> BuildMogFaceNetwork(Variant variant, bool list_dsfd_heads = true);

}  // namespace mogserve::model::mogface
