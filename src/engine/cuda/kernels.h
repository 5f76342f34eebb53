// The CUDA backend's own kernels (everything that is not a convolution), over NHWC tensors whose
// channel stride is DeviceChannels(channels), in the storage type of the precision (FP32, FP16,
// BF16) with FP32 arithmetic (kernel_math.h). Each launcher checks its arguments
// (kInvalidArgument naming the bad one), enqueues on `stream` without synchronising (so the
// calls can be captured into a CUDA graph) and reports a launch error through CudaCall
// (kInternal; kResourceExhausted for out of memory). cudaGetLastError also returns, and clears,
// an error left by an earlier asynchronous call (a cuDNN call, another kernel): the kernel
// named in such an error may not be the culprit. Pointers are device pointers. Includes the CUDA
// runtime header: src/engine/cuda/ only.
//
// Padding channels: every kernel that produces a tensor writes its padding channels
// [real channels, DeviceChannels) as finite zeros (pre-processing, GroupNorm apply and concat
// write 0; max-pool, upsample-add and clamp map zeros to zeros; convolutions get zero weights
// and bias there). The next convolution's weights for those channels are 0, but 0 × NaN is NaN:
// arena memory is reused and uninitialised, so a padding channel left unwritten could poison a
// whole output.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "engine/cuda/device_weights.h"
#include "engine/cuda/kernel_math.h"
#include "mogserve/status.h"

namespace mogserve::engine::cuda {

// canvases: n x h x w x 3 uint8 RGB; picture_size: n pairs (width, height) of each picture's
// extent at the top-left of its canvas (pixels right of / below it are padding). Writes `out`
// (n x h x w x out.c, out.c >= 3) with PreprocessValue per channel.
Status LaunchPreprocess(const uint8_t* canvases, const int* picture_size,
                        const PreprocessParams& params, StorageType type, void* out,
                        const NhwcShape& out_shape, cudaStream_t stream);

// Max-pool with −inf padding: out (n x oh x ow x c) from in (n x ih x iw x c).
Status LaunchMaxPool(const void* in, const NhwcShape& in_shape, void* out,
                     const NhwcShape& out_shape, int kernel, int stride, int pad_top, int pad_left,
                     StorageType type, cudaStream_t stream);

// GroupNorm over the first `channels` channels of x in `groups` groups, per image. Stats: FP32
// mean and 1/sqrt(var + eps) per (image, group), stats[2·(i·groups + g)] and [... + 1], computed
// by Welford partials over up to kGroupNormMaxSplits slices of each group (in `workspace`,
// GroupNormWorkspaceBytes) merged with Chan's formula. Apply: y = act(gamma·(x − mean)·inv_std
// + beta) for the real channels, 0 for the padding channels; y may be x (in place).
inline constexpr int kGroupNormMaxSplits = 64;
int64_t GroupNormWorkspaceBytes(int n, int groups);
// kInvalidArgument when workspace_bytes < GroupNormWorkspaceBytes(shape.n, groups).
Status LaunchGroupNormStats(const void* x, const NhwcShape& shape, int channels, int groups,
                            float eps, void* workspace, int64_t workspace_bytes, float* stats,
                            StorageType type, cudaStream_t stream);
Status LaunchGroupNormApply(const void* x, const NhwcShape& shape, int channels, int groups,
                            const float* stats, const float* gamma, const float* beta, int act,
                            void* y, StorageType type, cudaStream_t stream);

// out = lateral + the top-left out.h x out.w crop of x2 of top: bilinear (half-pixel,
// edge-clamped) or `nearest`. out may be lateral (in place). top and out have the same n and c;
// 2·top.h >= out.h.
Status LaunchUpsampleAdd(const void* top, const NhwcShape& top_shape, const void* lateral,
                         void* out, const NhwcShape& out_shape, bool nearest, StorageType type,
                         cudaStream_t stream);

// Concatenation, one input at a time in channel order: copies channels [0, channels) of every
// pixel of `in` into channels [channel_offset, channel_offset + channels) of `out` (same n, h,
// w). For the last input (`last_input`) it also writes 0 into channels [channel_offset +
// channels, out.c): the output's padding channels when the real channels add up to less than
// DeviceChannels (e.g. 4 + 8 of 16), which the next convolution reads (see the contract above).
Status LaunchCopyChannels(const void* in, const NhwcShape& in_shape, int channels, void* out,
                          const NhwcShape& out_shape, int channel_offset, bool last_input,
                          StorageType type, cudaStream_t stream);

// out (n x (in.h + pad_top + bottom) x (in.w + pad_left + right) x in.c) = in placed at row
// pad_top, column pad_left, zeros around it: the explicit padding of a convolution whose TF SAME
// padding is not symmetric (program.h). out.h/out.w >= in's plus the pads; same n and c.
Status LaunchPad(const void* in, const NhwcShape& in_shape, void* out, const NhwcShape& out_shape,
                 int pad_top, int pad_left, StorageType type, cudaStream_t stream);

// y = act(y + bias[c] [+ z]) over an NHWC tensor (z: nullptr or a tensor of y's shape; bias:
// y.c values of the storage type): the epilogue of a convolution run by cudnnConvolutionForward
// where cuDNN's fused conv-bias-activation call refuses the case.
Status LaunchBiasActivation(void* y, const NhwcShape& shape, const void* bias, const void* z,
                            int act, StorageType type, cudaStream_t stream);

// x = min(max(x, lo), hi) over `count` elements, in place (ReLU6 after a ReLU-fused conv).
Status LaunchClamp(void* x, int64_t count, float lo, float hi, StorageType type,
                   cudaStream_t stream);

// One output level: for each image i, pixel p of the level's maps and anchor a < anchors,
// row = AnchorRow(level_offset, p, anchors, a):
//   conf[i·total_anchors + row] = sigmoid(score[i, p, score_channel + a]) (FP32);
//   loc[(i·total_anchors + row)·4 + k] = box[i, p, box_channel + 4a + k] (FP32).
Status LaunchOutputLevel(const void* score, const NhwcShape& score_shape, int score_channel,
                         const void* box, const NhwcShape& box_shape, int box_channel,
                         int anchors_per_cell, int level_offset, int total_anchors, float* conf,
                         float* loc, StorageType type, cudaStream_t stream);

// One raw output: for each image i and pixel p of `in`, channels [0, channels) to
//   raw[i·raw_floats + raw_offset + p·channels + c] (FP32), the device's padding channels left out.
Status LaunchRawOutput(const void* in, const NhwcShape& in_shape, int channels, int64_t raw_offset,
                       int64_t raw_floats, float* raw, StorageType type, cudaStream_t stream);

}  // namespace mogserve::engine::cuda
