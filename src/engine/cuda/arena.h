// The activation arena of the CUDA backend, planned on the host: one device buffer per
// (LayerPlan, padded batch, element size) holding every tensor of a forward pass at an offset
// chosen by liveness, so tensors that are never alive at the same time share memory. Plain C++
// (no CUDA headers): planned and tested on any machine.
//
// Liveness: a tensor is written by the op that produces it (the network input: by the
// pre-processing, "op −1") and must keep its value until LayerPlan::last_use() (ops().size() for
// the tensors the output stage reads). Two tensors may overlap in memory only when those
// intervals are disjoint.
//
// In place: an op may write its output into the storage of an input when that input is read by
// nothing later (its last_use is this op) and has the output's size:
//   - kUpsampleAdd writes into in1 (the lateral): out = in1 + up(in0) element by element, each
//     element read before it is written by the same thread;
//   - kGroupNorm's apply writes into its input: the statistics pass has finished reading it.
// Convolutions, pooling and concatenation never run in place (cuDNN does not promise y ≠ x
// aliasing; pooling and concat change shapes).
//
// Placement is greedy by size (TensorFlow Lite's "greedy by size" planner): storages from the
// largest to the smallest, each at the lowest 256-byte-aligned offset whose gap between the
// storages already placed and alive at the same time fits it (best fit: the smallest such gap).
// Deterministic: ties break by first use, then by index.
//
// One stream, op order: liveness is by op index, which is only the truth when the ops run one
// after another in op order on one stream (or in a graph captured from such a stream). With
// forked streams (specs/cuda_backend.md §6: the cls/loc towers and levels P3–P7 in parallel),
// two tensors with disjoint op intervals can be alive at once and this plan would let them
// share bytes: a silent data race. Such a schedule needs another plan (each branch's lives
// extended to its join, or per-branch sub-arenas) and one GroupNorm workspace and statistics
// buffer per concurrent branch; CheckArenaSchedule refuses it until then.
//
// Not in the arena (owned by each engine instance, beside it): the GroupNorm partials
// (GroupNormWorkspaceBytes) and statistics, the output stage's conf/loc buffers, the cuDNN
// workspace, pinned host staging.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/layer_plan.h"
#include "mogserve/status.h"

namespace mogserve::engine::cuda {

// Offsets and sizes in the arena are multiples of this (cuDNN and vector loads want ≥ 128 B).
inline constexpr int64_t kArenaAlignmentBytes = 256;

// Channels of a tensor on the device (NHWC): rounded up to a multiple of 8, so every pixel row
// is 16-byte aligned in FP16 and tensor-core convolutions take it (the input 3 → 8, the
// predictors' 1 and 4 → 8). The extra channels hold finite zeros: every kernel writes them
// (the padding-channel contract of kernels.h), since arena memory is reused uninitialised.
inline int DeviceChannels(int channels) {
  return (channels + 7) / 8 * 8;
}

inline int64_t AlignArenaBytes(int64_t bytes) {
  return (bytes + kArenaAlignmentBytes - 1) / kArenaAlignmentBytes * kArenaAlignmentBytes;
}

// One buffer to place: its size and the ops between which it holds a value (inclusive).
struct ArenaRequest {
  int64_t bytes = 0;  // 0: nothing to place
  int first_op = 0;   // written by this op (−1: before op 0)
  int last_op = 0;    // last read by this op (>= first_op)
};

struct ArenaLayout {
  std::vector<int64_t> offsets;  // per request: aligned offset; −1 where bytes == 0
  int64_t total_bytes = 0;       // the arena's size: the end of the highest buffer
};

// Places the requests as described above. Requests whose live intervals intersect never overlap
// in memory; every offset is a multiple of kArenaAlignmentBytes; total_bytes <= the sum of the
// aligned sizes.
ArenaLayout PlaceInArena(std::span<const ArenaRequest> requests);

struct ArenaOptions {
  bool in_place_upsample_add = true;
  bool in_place_group_norm = true;
};

// The arena of one forward pass of `plan` over `batch` images whose activations take
// `element_bytes` each (2: FP16/BF16, 4: FP32/TF32), tensors in NHWC with DeviceChannels().
struct ArenaPlan {
  int batch = 0;
  int element_bytes = 0;
  int streams = 1;  // the schedule it is valid for: the ops in op order on one stream
  // Per tensor id: the bytes it needs (aligned; 0 for a tensor nothing writes), its offset (−1
  // when 0 bytes), and the tensor whose storage it uses (itself, or an op input it overwrites
  // in place).
  std::vector<int64_t> tensor_bytes;
  std::vector<int64_t> tensor_offsets;
  std::vector<int> storage_of;
  std::vector<bool> op_in_place;  // per op: writes its output into an input
  // Per op: the offset of its scratch buffer (live only while the op runs: the zero-padded
  // copy of an asymmetrically padded convolution's input), −1 for none.
  std::vector<int64_t> op_scratch_offsets;
  int64_t total_bytes = 0;        // the arena's size
  int64_t sum_bytes = 0;          // Σ tensor_bytes: what one buffer per tensor would take
};

// op_scratch_bytes: empty, or per op the bytes of its scratch buffer (0: none); a scratch
// buffer never overlaps a tensor the op reads or writes.
ArenaPlan PlanArena(const model::LayerPlan& plan, int batch, int element_bytes,
                    const ArenaOptions& options = {},
                    std::span<const int64_t> op_scratch_bytes = {});

// Whether `arena` may serve a forward pass whose ops run on `streams` streams: Ok for the one
// stream it was planned for; kUnimplemented for forked streams (see "One stream, op order").
// The executor calls it before using a plan.
Status CheckArenaSchedule(const ArenaPlan& arena, int streams);

// The op (−1: the pre-processing) that writes tensor `tensor` of `plan`, or −2 when none does.
int ProducerOp(const model::LayerPlan& plan, int tensor);

}  // namespace mogserve::engine::cuda
