// The CUDA backend's own kernels (kernels.h): indexing around the element functions of
// kernel_math.h, one grid-stride loop per kernel, templated on the storage type.
#include "engine/cuda/kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <string>

#include "engine/cuda/cuda_status.h"
#include "engine/cuda/program.h"

namespace mogserve::engine::cuda {
namespace {

constexpr int kThreads = 256;
// Grid-stride loops cover any size; more blocks than this only add scheduling.
constexpr int64_t kMaxBlocks = 65536;

static_assert(kActNone == 0 && kActRelu == 1 && kActRelu6 == 2);

int Blocks(int64_t work) {
  const int64_t blocks = (work + kThreads - 1) / kThreads;
  return static_cast<int>(blocks < 1 ? 1 : (blocks > kMaxBlocks ? kMaxBlocks : blocks));
}

template <typename T>
__host__ __device__ __forceinline__ float Load(const T* p, int64_t i);
template <>
__host__ __device__ __forceinline__ float Load<float>(const float* p, int64_t i) {
  return p[i];
}
template <>
__host__ __device__ __forceinline__ float Load<__half>(const __half* p, int64_t i) {
  return __half2float(p[i]);
}
template <>
__host__ __device__ __forceinline__ float Load<__nv_bfloat16>(const __nv_bfloat16* p, int64_t i) {
  return __bfloat162float(p[i]);
}

template <typename T>
__host__ __device__ __forceinline__ void Store(T* p, int64_t i, float v);
template <>
__host__ __device__ __forceinline__ void Store<float>(float* p, int64_t i, float v) {
  p[i] = v;
}
template <>
__host__ __device__ __forceinline__ void Store<__half>(__half* p, int64_t i, float v) {
  p[i] = __float2half_rn(v);
}
template <>
__host__ __device__ __forceinline__ void Store<__nv_bfloat16>(__nv_bfloat16* p, int64_t i,
                                                              float v) {
  p[i] = __float2bfloat16_rn(v);
}

#define MOGSERVE_GRID_STRIDE(i, total)                                                       \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (total); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

// --- Pre-processing: one thread per canvas pixel, all out.c channels ---

template <typename T>
__global__ void PreprocessKernel(const uint8_t* __restrict__ canvases,
                                 const int* __restrict__ picture_size, PreprocessParams params,
                                 T* __restrict__ out, NhwcShape s) {
  const int64_t pixels = int64_t{s.n} * s.h * s.w;
  MOGSERVE_GRID_STRIDE(p, pixels) {
    const int x = static_cast<int>(p % s.w);
    const int y = static_cast<int>(p / s.w % s.h);
    const int i = static_cast<int>(p / (int64_t{s.w} * s.h));
    const bool inside = x < picture_size[2 * i] && y < picture_size[2 * i + 1];
    const uint8_t* rgb = canvases + p * 3;
    for (int c = 0; c < s.c; ++c) {
      Store(out, p * s.c + c, PreprocessValue(params, c, c < 3 ? rgb[c] : uint8_t{0}, inside));
    }
  }
}

// --- Max-pool: one thread per output element ---

template <typename T>
struct NhwcLoad {
  const T* base;  // image n, channel c already applied
  int w, c;
  __host__ __device__ float operator()(int y, int x) const {
    return Load(base, (static_cast<int64_t>(y) * w + x) * c);
  }
};

// The (image, row, column, channel) of element i of an NHWC tensor.
struct NhwcIndex {
  int n, y, x, c;
};
__device__ inline NhwcIndex Unflatten(int64_t i, const NhwcShape& s) {
  const int64_t pixel = i / s.c;
  return {static_cast<int>(pixel / (int64_t{s.w} * s.h)), static_cast<int>(pixel / s.w % s.h),
          static_cast<int>(pixel % s.w), static_cast<int>(i % s.c)};
}

template <typename T>
__global__ void MaxPoolKernel(const T* __restrict__ in, NhwcShape is, T* __restrict__ out,
                              NhwcShape os, int kernel, int stride, int pad_top, int pad_left) {
  MOGSERVE_GRID_STRIDE(i, os.elements()) {
    const auto [n, y, x, c] = Unflatten(i, os);
    const PoolWindow win = PoolWindowAt(y, x, is.h, is.w, kernel, stride, pad_top, pad_left);
    const NhwcLoad<T> load{in + int64_t{n} * is.h * is.w * is.c + c, is.w, is.c};
    Store(out, i, MaxOverWindow(win, load));
  }
}

// --- GroupNorm ---

// Merges the Welford states of a block into thread 0's; shared arrays hold one per warp.
__device__ Welford BlockWelford(Welford w) {
  __shared__ float mean[32], m2[32];
  __shared__ int count[32];
  for (int offset = 16; offset > 0; offset /= 2) {
    Welford other;
    other.mean = __shfl_down_sync(0xffffffffu, w.mean, offset);
    other.m2 = __shfl_down_sync(0xffffffffu, w.m2, offset);
    other.count = __shfl_down_sync(0xffffffffu, w.count, offset);
    w = WelfordMerge(w, other);
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) {
    mean[warp] = w.mean;
    m2[warp] = w.m2;
    count[warp] = w.count;
  }
  __syncthreads();
  Welford total;
  if (threadIdx.x == 0) {
    for (int k = 0; k < static_cast<int>(blockDim.x / 32); ++k) {
      Welford part;
      part.mean = mean[k];
      part.m2 = m2[k];
      part.count = count[k];
      total = WelfordMerge(total, part);
    }
  }
  return total;
}

struct WelfordPartial {
  float mean, m2;
  int count;
};

// grid (splits, groups, n): block `split` accumulates its slice of group g of image n.
template <typename T>
__global__ void GroupNormPartialKernel(const T* __restrict__ x, NhwcShape s, int channels,
                                       int groups, WelfordPartial* __restrict__ partials) {
  const int split = blockIdx.x, g = blockIdx.y, n = blockIdx.z, splits = gridDim.x;
  const int per_group = channels / groups;
  const int64_t count = int64_t{s.h} * s.w * per_group;
  const int64_t chunk = (count + splits - 1) / splits;
  const int64_t begin = split * chunk;
  const int64_t end = begin + chunk < count ? begin + chunk : count;
  const T* base = x + int64_t{n} * s.h * s.w * s.c + int64_t{g} * per_group;
  Welford w;
  for (int64_t k = begin + threadIdx.x; k < end; k += blockDim.x) {
    const int64_t pixel = k / per_group;
    WelfordAdd(w, Load(base, pixel * s.c + k % per_group));
  }
  w = BlockWelford(w);
  if (threadIdx.x == 0) {
    partials[(int64_t{n} * groups + g) * splits + split] = {w.mean, w.m2, w.count};
  }
}

__global__ void GroupNormFinalizeKernel(const WelfordPartial* __restrict__ partials, int64_t rows,
                                        int splits, float eps, float* __restrict__ stats) {
  MOGSERVE_GRID_STRIDE(row, rows) {
    Welford total;
    for (int k = 0; k < splits; ++k) {
      const WelfordPartial& p = partials[row * splits + k];
      Welford part;
      part.mean = p.mean;
      part.m2 = p.m2;
      part.count = p.count;
      total = WelfordMerge(total, part);
    }
    stats[2 * row] = total.mean;
    stats[2 * row + 1] = InvStd(total, eps);
  }
}

template <typename T>
__global__ void GroupNormApplyKernel(const T* x, NhwcShape s, int channels, int groups,
                                     const float* __restrict__ stats,
                                     const float* __restrict__ gamma,
                                     const float* __restrict__ beta, int act, T* y) {
  const int per_group = channels / groups;
  MOGSERVE_GRID_STRIDE(i, s.elements()) {
    const int c = static_cast<int>(i % s.c);
    if (c >= channels) {
      Store(y, i, 0.0f);
      continue;
    }
    const int n = static_cast<int>(i / (int64_t{s.h} * s.w * s.c));
    const int64_t row = int64_t{n} * groups + c / per_group;
    Store(y, i,
          GroupNormApply(Load(x, i), stats[2 * row], stats[2 * row + 1], gamma[c], beta[c], act));
  }
}

// --- Upsample-add (in place allowed: each element is read, then written, by one thread) ---

template <typename T>
__global__ void UpsampleAddKernel(const T* __restrict__ top, NhwcShape ts, const T* lateral, T* out,
                                  NhwcShape os, bool nearest) {
  MOGSERVE_GRID_STRIDE(i, os.elements()) {
    const auto [n, y, x, c] = Unflatten(i, os);
    const UpsampleTap ty = UpsampleAxis(y, ts.h, nearest), tx = UpsampleAxis(x, ts.w, nearest);
    const T* t = top + int64_t{n} * ts.h * ts.w * ts.c + c;
    auto at = [&](int yy, int xx) { return Load(t, (int64_t{yy} * ts.w + xx) * ts.c); };
    const float up = Bilerp(at(ty.i0, tx.i0), at(ty.i0, tx.i1), at(ty.i1, tx.i0), at(ty.i1, tx.i1),
                            ty.frac, tx.frac);
    Store(out, i, Load(lateral, i) + up);
  }
}

// --- Concat, clamp, output stage ---

// Writes channels [channel_offset, channel_offset + width) of every output pixel: the first
// `channels` from `in`, the rest (the padding channels, for the last input) 0.
template <typename T>
__global__ void CopyChannelsKernel(const T* __restrict__ in, int in_c, int channels, int width,
                                   T* __restrict__ out, int out_c, int channel_offset,
                                   int64_t pixels) {
  MOGSERVE_GRID_STRIDE(i, pixels * width) {
    const int64_t pixel = i / width;
    const int c = static_cast<int>(i % width);
    if (c < channels) {
      out[pixel * out_c + channel_offset + c] = in[pixel * in_c + c];
    } else {
      Store(out, pixel * out_c + channel_offset + c, 0.0f);
    }
  }
}

template <typename T>
__global__ void PadKernel(const T* __restrict__ in, NhwcShape is, T* __restrict__ out, NhwcShape os,
                          int pad_top, int pad_left) {
  MOGSERVE_GRID_STRIDE(i, os.elements()) {
    const auto [n, y, x, c] = Unflatten(i, os);
    const int iy = y - pad_top, ix = x - pad_left;
    if (iy >= 0 && iy < is.h && ix >= 0 && ix < is.w) {
      out[i] = in[((int64_t{n} * is.h + iy) * is.w + ix) * is.c + c];
    } else {
      Store(out, i, 0.0f);
    }
  }
}

template <typename T>
__global__ void BiasActivationKernel(T* y, NhwcShape s, const T* __restrict__ bias,
                                     const T* __restrict__ z, int act) {
  MOGSERVE_GRID_STRIDE(i, s.elements()) {
    float v = Load(y, i) + Load(bias, i % s.c);
    if (z != nullptr) v += Load(z, i);
    Store(y, i, Activate(v, act));
  }
}

template <typename T>
__global__ void ClampKernel(T* x, int64_t count, float lo, float hi) {
  MOGSERVE_GRID_STRIDE(i, count) {
    Store(x, i, Clamp(Load(x, i), lo, hi));
  }
}

template <typename T>
__global__ void OutputLevelKernel(const T* __restrict__ score, NhwcShape ss, int score_channel,
                                  const T* __restrict__ box, NhwcShape bs, int box_channel,
                                  int anchors, int level_offset, int total_anchors,
                                  float* __restrict__ conf, float* __restrict__ loc) {
  const int64_t plane = int64_t{ss.h} * ss.w;
  MOGSERVE_GRID_STRIDE(i, ss.n * plane * anchors) {
    const int a = static_cast<int>(i % anchors);
    const int64_t pixel = i / anchors % plane;
    const int n = static_cast<int>(i / (anchors * plane));
    const int64_t row = int64_t{n} * total_anchors + AnchorRow(level_offset, pixel, anchors, a);
    conf[row] = Sigmoid(Load(score, (n * plane + pixel) * ss.c + score_channel + a));
    const int64_t b = (n * plane + pixel) * bs.c + box_channel + 4 * a;
    for (int k = 0; k < 4; ++k) loc[row * 4 + k] = Load(box, b + k);
  }
}

template <typename T>
__global__ void RawOutputKernel(const T* __restrict__ in, NhwcShape is, int channels,
                                int64_t raw_offset, int64_t raw_floats, float* __restrict__ raw) {
  const int64_t plane = int64_t{is.h} * is.w;
  MOGSERVE_GRID_STRIDE(i, is.n * plane * channels) {
    const int c = static_cast<int>(i % channels);
    const int64_t pixel = i / channels % plane;
    const int64_t n = i / (channels * plane);
    raw[n * raw_floats + raw_offset + pixel * channels + c] = Load(in, (n * plane + pixel) * is.c + c);
  }
}

// --- Launch helpers ---

Status Launched(const char* kernel) {
  return CudaCall(cudaGetLastError(), kernel);
}

bool Valid(const NhwcShape& s) {
  return s.n > 0 && s.h > 0 && s.w > 0 && s.c > 0;
}


Status BadShape(const char* what, const NhwcShape& s) {
  return InvalidArgument(std::string(what) + ": every dimension must be >= 1, not " + ShapeText(s));
}

// Calls f(T{}) with T the C++ type of `type`.
template <typename F>
void Dispatch(StorageType type, F&& f) {
  switch (type) {
    case StorageType::kF32:
      f(float{});
      return;
    case StorageType::kF16:
      f(__half{});
      return;
    case StorageType::kBf16:
      f(__nv_bfloat16{});
      return;
  }
}

}  // namespace

Status LaunchPreprocess(const uint8_t* canvases, const int* picture_size,
                        const PreprocessParams& params, StorageType type, void* out,
                        const NhwcShape& out_shape, cudaStream_t stream) {
  if (canvases == nullptr || picture_size == nullptr || out == nullptr) {
    return InvalidArgument("pre-processing: null canvases, picture sizes or output");
  }
  if (!Valid(out_shape) || out_shape.c < 3) {
    return InvalidArgument("pre-processing: output " + ShapeText(out_shape) +
                           " needs every dimension >= 1 and >= 3 channels");
  }
  const int blocks = Blocks(int64_t{out_shape.n} * out_shape.h * out_shape.w);
  Dispatch(type, [&](auto t) {
    using T = decltype(t);
    PreprocessKernel<T><<<blocks, kThreads, 0, stream>>>(canvases, picture_size, params,
                                                         static_cast<T*>(out), out_shape);
  });
  return Launched("PreprocessKernel");
}

Status LaunchMaxPool(const void* in, const NhwcShape& in_shape, void* out,
                     const NhwcShape& out_shape, int kernel, int stride, int pad_top, int pad_left,
                     StorageType type, cudaStream_t stream) {
  if (in == nullptr || out == nullptr) return InvalidArgument("max-pool: null input or output");
  if (!Valid(in_shape)) return BadShape("max-pool input", in_shape);
  if (!Valid(out_shape)) return BadShape("max-pool output", out_shape);
  if (in_shape.n != out_shape.n || in_shape.c != out_shape.c) {
    return InvalidArgument("max-pool: input " + ShapeText(in_shape) + " and output " + ShapeText(out_shape) +
                           " differ in batch or channels");
  }
  if (kernel < 1 || stride < 1 || pad_top < 0 || pad_left < 0 || pad_top >= kernel ||
      pad_left >= kernel) {
    return InvalidArgument("max-pool: kernel " + std::to_string(kernel) + ", stride " +
                           std::to_string(stride) + ", padding " + std::to_string(pad_top) + "/" +
                           std::to_string(pad_left) +
                           ": need kernel, stride >= 1 and 0 <= padding < kernel");
  }
  Dispatch(type, [&](auto t) {
    using T = decltype(t);
    MaxPoolKernel<T><<<Blocks(out_shape.elements()), kThreads, 0, stream>>>(
        static_cast<const T*>(in), in_shape, static_cast<T*>(out), out_shape, kernel, stride,
        pad_top, pad_left);
  });
  return Launched("MaxPoolKernel");
}

int64_t GroupNormWorkspaceBytes(int n, int groups) {
  return int64_t{n} * groups * kGroupNormMaxSplits * static_cast<int64_t>(sizeof(WelfordPartial));
}

namespace {

Status CheckGroupNorm(const char* what, const NhwcShape& shape, int channels, int groups) {
  if (!Valid(shape)) return BadShape(what, shape);
  if (groups < 1 || channels < groups || channels % groups != 0 || channels > shape.c) {
    return InvalidArgument(std::string(what) + ": " + std::to_string(channels) + " channels in " +
                           std::to_string(groups) + " groups over " + ShapeText(shape) +
                           ": need groups >= 1 dividing the channels, channels <= the stride");
  }
  return Status::Ok();
}

}  // namespace

Status LaunchGroupNormStats(const void* x, const NhwcShape& shape, int channels, int groups,
                            float eps, void* workspace, int64_t workspace_bytes, float* stats,
                            StorageType type, cudaStream_t stream) {
  if (x == nullptr || workspace == nullptr || stats == nullptr) {
    return InvalidArgument("GroupNorm statistics: null input, workspace or statistics");
  }
  MOGSERVE_RETURN_IF_ERROR(CheckGroupNorm("GroupNorm statistics", shape, channels, groups));
  if (shape.n > 65535 || groups > 65535) {
    return InvalidArgument("GroupNorm statistics: batch and groups must be <= 65535");
  }
  if (!(eps > 0.0f)) return InvalidArgument("GroupNorm statistics: eps must be > 0");
  if (workspace_bytes < GroupNormWorkspaceBytes(shape.n, groups)) {
    return InvalidArgument("GroupNorm statistics: a workspace of " +
                           std::to_string(workspace_bytes) + " bytes, " +
                           std::to_string(GroupNormWorkspaceBytes(shape.n, groups)) + " needed");
  }
  // About 16 elements per thread per slice, at most kGroupNormMaxSplits slices per group.
  const int64_t count = int64_t{shape.h} * shape.w * (channels / groups);
  int64_t splits = (count + kThreads * 16 - 1) / (kThreads * 16);
  splits = splits < 1 ? 1 : (splits > kGroupNormMaxSplits ? kGroupNormMaxSplits : splits);
  auto* partials = static_cast<WelfordPartial*>(workspace);
  const dim3 grid(static_cast<unsigned>(splits), static_cast<unsigned>(groups),
                  static_cast<unsigned>(shape.n));
  Dispatch(type, [&](auto t) {
    using T = decltype(t);
    GroupNormPartialKernel<T><<<grid, kThreads, 0, stream>>>(static_cast<const T*>(x), shape,
                                                             channels, groups, partials);
  });
  MOGSERVE_RETURN_IF_ERROR(Launched("GroupNormPartialKernel"));
  const int64_t rows = int64_t{shape.n} * groups;  // both up to 65535: beyond int
  GroupNormFinalizeKernel<<<Blocks(rows), kThreads, 0, stream>>>(
      partials, rows, static_cast<int>(splits), eps, stats);
  return Launched("GroupNormFinalizeKernel");
}

Status LaunchGroupNormApply(const void* x, const NhwcShape& shape, int channels, int groups,
                            const float* stats, const float* gamma, const float* beta, int act,
                            void* y, StorageType type, cudaStream_t stream) {
  if (x == nullptr || stats == nullptr || gamma == nullptr || beta == nullptr || y == nullptr) {
    return InvalidArgument("GroupNorm apply: null input, statistics, gamma, beta or output");
  }
  MOGSERVE_RETURN_IF_ERROR(CheckGroupNorm("GroupNorm apply", shape, channels, groups));
  if (act != kActNone && act != kActRelu && act != kActRelu6) {
    return InvalidArgument("GroupNorm apply: activation " + std::to_string(act) +
                           " is not known; allowed: 0 (none), 1 (ReLU), 2 (ReLU6)");
  }
  Dispatch(type, [&](auto t) {
    using T = decltype(t);
    GroupNormApplyKernel<T><<<Blocks(shape.elements()), kThreads, 0, stream>>>(
        static_cast<const T*>(x), shape, channels, groups, stats, gamma, beta, act,
        static_cast<T*>(y));
  });
  return Launched("GroupNormApplyKernel");
}

Status LaunchUpsampleAdd(const void* top, const NhwcShape& top_shape, const void* lateral,
                         void* out, const NhwcShape& out_shape, bool nearest, StorageType type,
                         cudaStream_t stream) {
  if (top == nullptr || lateral == nullptr || out == nullptr) {
    return InvalidArgument("upsample-add: null top, lateral or output");
  }
  if (!Valid(top_shape)) return BadShape("upsample-add top", top_shape);
  if (!Valid(out_shape)) return BadShape("upsample-add output", out_shape);
  if (top_shape.n != out_shape.n || top_shape.c != out_shape.c || 2 * top_shape.h < out_shape.h ||
      2 * top_shape.w < out_shape.w) {
    return InvalidArgument("upsample-add: top " + ShapeText(top_shape) + " cannot cover output " +
                           ShapeText(out_shape) + " (need equal batch and channels, 2·top >= output)");
  }
  if (top == out) return InvalidArgument("upsample-add: the output cannot be the top map");
  Dispatch(type, [&](auto t) {
    using T = decltype(t);
    UpsampleAddKernel<T><<<Blocks(out_shape.elements()), kThreads, 0, stream>>>(
        static_cast<const T*>(top), top_shape, static_cast<const T*>(lateral), static_cast<T*>(out),
        out_shape, nearest);
  });
  return Launched("UpsampleAddKernel");
}

Status LaunchCopyChannels(const void* in, const NhwcShape& in_shape, int channels, void* out,
                          const NhwcShape& out_shape, int channel_offset, bool last_input,
                          StorageType type, cudaStream_t stream) {
  if (in == nullptr || out == nullptr) return InvalidArgument("concat: null input or output");
  if (!Valid(in_shape)) return BadShape("concat input", in_shape);
  if (!Valid(out_shape)) return BadShape("concat output", out_shape);
  if (in_shape.n != out_shape.n || in_shape.h != out_shape.h || in_shape.w != out_shape.w ||
      channels < 1 || channels > in_shape.c || channel_offset < 0 ||
      channel_offset + channels > out_shape.c) {
    return InvalidArgument("concat: " + std::to_string(channels) + " channels of " +
                           ShapeText(in_shape) + " at channel " + std::to_string(channel_offset) +
                           " of " + ShapeText(out_shape) + " do not fit");
  }
  const int64_t pixels = int64_t{in_shape.n} * in_shape.h * in_shape.w;
  const int width = last_input ? out_shape.c - channel_offset : channels;
  Dispatch(type, [&](auto t) {
    using T = decltype(t);
    CopyChannelsKernel<T><<<Blocks(pixels * width), kThreads, 0, stream>>>(
        static_cast<const T*>(in), in_shape.c, channels, width, static_cast<T*>(out), out_shape.c,
        channel_offset, pixels);
  });
  return Launched("CopyChannelsKernel");
}

Status LaunchPad(const void* in, const NhwcShape& in_shape, void* out, const NhwcShape& out_shape,
                 int pad_top, int pad_left, StorageType type, cudaStream_t stream) {
  if (in == nullptr || out == nullptr) return InvalidArgument("pad: null input or output");
  if (!Valid(in_shape)) return BadShape("pad input", in_shape);
  if (!Valid(out_shape)) return BadShape("pad output", out_shape);
  if (in_shape.n != out_shape.n || in_shape.c != out_shape.c || pad_top < 0 || pad_left < 0 ||
      out_shape.h < in_shape.h + pad_top || out_shape.w < in_shape.w + pad_left) {
    return InvalidArgument("pad: input " + ShapeText(in_shape) + " at row " + std::to_string(pad_top) +
                           ", column " + std::to_string(pad_left) + " does not fit output " +
                           ShapeText(out_shape));
  }
  if (in == out) return InvalidArgument("pad: the output cannot be the input");
  Dispatch(type, [&](auto t) {
    using T = decltype(t);
    PadKernel<T><<<Blocks(out_shape.elements()), kThreads, 0, stream>>>(
        static_cast<const T*>(in), in_shape, static_cast<T*>(out), out_shape, pad_top, pad_left);
  });
  return Launched("PadKernel");
}

Status LaunchBiasActivation(void* y, const NhwcShape& shape, const void* bias, const void* z,
                            int act, StorageType type, cudaStream_t stream) {
  if (y == nullptr || bias == nullptr) return InvalidArgument("bias-activation: null y or bias");
  if (!Valid(shape)) return BadShape("bias-activation", shape);
  if (act != kActNone && act != kActRelu && act != kActRelu6) {
    return InvalidArgument("bias-activation: activation " + std::to_string(act) +
                           " is not known; allowed: 0 (none), 1 (ReLU), 2 (ReLU6)");
  }
  Dispatch(type, [&](auto t) {
    using T = decltype(t);
    BiasActivationKernel<T><<<Blocks(shape.elements()), kThreads, 0, stream>>>(
        static_cast<T*>(y), shape, static_cast<const T*>(bias), static_cast<const T*>(z), act);
  });
  return Launched("BiasActivationKernel");
}

Status LaunchClamp(void* x, int64_t count, float lo, float hi, StorageType type,
                   cudaStream_t stream) {
  if (x == nullptr) return InvalidArgument("clamp: null tensor");
  if (count < 1) return InvalidArgument("clamp: count must be >= 1");
  if (!(lo <= hi)) return InvalidArgument("clamp: lo must be <= hi");
  Dispatch(type, [&](auto t) {
    using T = decltype(t);
    ClampKernel<T><<<Blocks(count), kThreads, 0, stream>>>(static_cast<T*>(x), count, lo, hi);
  });
  return Launched("ClampKernel");
}

Status LaunchOutputLevel(const void* score, const NhwcShape& score_shape, int score_channel,
                         const void* box, const NhwcShape& box_shape, int box_channel,
                         int anchors_per_cell, int level_offset, int total_anchors, float* conf,
                         float* loc, StorageType type, cudaStream_t stream) {
  if (score == nullptr || box == nullptr || conf == nullptr || loc == nullptr) {
    return InvalidArgument("output stage: null score, box, conf or loc");
  }
  if (!Valid(score_shape)) return BadShape("output stage scores", score_shape);
  if (!Valid(box_shape)) return BadShape("output stage boxes", box_shape);
  if (score_shape.n != box_shape.n || score_shape.h != box_shape.h ||
      score_shape.w != box_shape.w) {
    return InvalidArgument("output stage: score map " + ShapeText(score_shape) + " and box map " +
                           ShapeText(box_shape) + " differ in batch or size");
  }
  const int64_t anchors = int64_t{score_shape.h} * score_shape.w * anchors_per_cell;
  if (anchors_per_cell < 1 || score_channel < 0 || box_channel < 0 ||
      score_channel + anchors_per_cell > score_shape.c ||
      box_channel + 4 * anchors_per_cell > box_shape.c || level_offset < 0 ||
      level_offset + anchors > total_anchors) {
    return InvalidArgument("output stage: level at anchor " + std::to_string(level_offset) +
                           " with " + std::to_string(anchors_per_cell) +
                           " anchors per cell does not fit the maps or the " +
                           std::to_string(total_anchors) + " output rows");
  }
  Dispatch(type, [&](auto t) {
    using T = decltype(t);
    OutputLevelKernel<T><<<Blocks(score_shape.n * anchors), kThreads, 0, stream>>>(
        static_cast<const T*>(score), score_shape, score_channel, static_cast<const T*>(box),
        box_shape, box_channel, anchors_per_cell, level_offset, total_anchors, conf, loc);
  });
  return Launched("OutputLevelKernel");
}

Status LaunchRawOutput(const void* in, const NhwcShape& in_shape, int channels, int64_t raw_offset,
                       int64_t raw_floats, float* raw, StorageType type, cudaStream_t stream) {
  if (in == nullptr || raw == nullptr) return InvalidArgument("raw output: null input or output");
  if (!Valid(in_shape)) return BadShape("raw output", in_shape);
  const int64_t values = int64_t{in_shape.h} * in_shape.w * channels;
  if (channels < 1 || channels > in_shape.c || raw_offset < 0 ||
      raw_offset + values > raw_floats) {
    return InvalidArgument("raw output: " + std::to_string(channels) + " channels of " +
                           ShapeText(in_shape) + " at value " + std::to_string(raw_offset) +
                           " do not fit an image's " + std::to_string(raw_floats) + " values");
  }
  Dispatch(type, [&](auto t) {
    using T = decltype(t);
    RawOutputKernel<T><<<Blocks(in_shape.n * values), kThreads, 0, stream>>>(
        static_cast<const T*>(in), in_shape, channels, raw_offset, raw_floats, raw);
  });
  return Launched("RawOutputKernel");
}

}  // namespace mogserve::engine::cuda
