// The MogFace variants mogserve runs, and the exact checkpoint layout (key → shape) of each
// (spec: specs/mogface.md §1, §9). Torch-free: the loader, the synthetic-weights generator and
// the tests share this one list.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/host_tensor.h"
#include "model/network.h"
#include "mogserve/status.h"

namespace mogserve::model::mogface {

enum class Variant {
  kR101,  // MogFace.yml = ModelScope "MogFace-large": ResNet-101, SSH, 512-ch GN deep heads
  kE,     // MogFace_E.yml: [3,4,36,3] "ResNet-152", CPM, 256-ch GN deep heads
  kR50,   // Baseline / Ali-AMS / SSE: ResNet-50, RetinaPredNet (one 3x3 conv per level)
};

// "r101", "e", "r50".
const char* VariantName(Variant variant);
// Accepts the names above (case-insensitive) and the aliases "large", "modelscope", "r152",
// "baseline", "ali-ams", "sse"; kInvalidArgument otherwise.
StatusOr<Variant> ParseVariant(std::string_view name);

// Bottleneck blocks in backbone.layer1..4.
std::array<int, 4> BackboneBlocks(Variant variant);
// Anchor side = 16 * 2^level * scale (spec §5).
double AnchorScale(Variant variant);
// Channels of the deep heads (512 / 256), 0 for the per-level RetinaPredNet.
int HeadChannels(Variant variant);
// Whether the neck's checkpoint has the training-only fpn.dsfd_modules (out_dsfd_ft).
bool HasDsfdModules(Variant variant);

// Every key of a checkpoint of `variant`, from its network definition (mogface_network.h).
// `with_dsfd_heads` adds the training-only pred_net.dsfd_{conf,loc} heads of the original R101 / E
// checkpoints (ignored for kR50). Counts: R101 728 (732 with DSFD heads), E 990 (994), R50 388.
std::vector<KeySpec> ExpectedKeys(Variant variant, bool with_dsfd_heads);

// The variant of a checkpoint, from its head keys, backbone depth and head width. HCAM
// (fp_context. / pred_net_1.) → kUnsupported; no MogFace head or an inconsistent checkpoint →
// kInvalidData. Expects normalised keys (see below).
StatusOr<Variant> DetectVariant(const HostTensorMap& weights);

// Strict layout check: every used key present with its exact shape; unused keys (DSFD modules
// and heads, deep-head conv2-conv4, num_batches_tracked) optional but, when present, with
// their shape (num_batches_tracked: any single value); nothing else. kInvalidData listing the
// offending keys (the first 10 of each kind, then how many more).
Status CheckCheckpointKeys(const HostTensorMap& weights, Variant variant);

// Strips the `module.` prefix that DataParallel checkpoints carry. A stripped name that would
// collide with an existing key keeps its prefix (and so fails the strict check as extra).
HostTensorMap NormalizeCheckpointKeys(HostTensorMap weights);
// True when any key starts with `module.`.
bool HasModulePrefix(const HostTensorMap& weights);

}  // namespace mogserve::model::mogface
