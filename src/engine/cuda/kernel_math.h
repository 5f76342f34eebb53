// The per-element arithmetic of the CUDA backend's own kernels (kernels.cu), as inline
// functions that compile both for the device (nvcc: __host__ __device__) and for the host (any
// C++ compiler, no CUDA headers), so host tests check them against the FP64 reference executor
// (model/reference/) and the kernels only add indexing around them. All arithmetic is FP32;
// storage types are converted by the kernels.
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define MOGSERVE_HD __host__ __device__ __forceinline__
#else
#define MOGSERVE_HD inline
#endif

namespace mogserve::engine::cuda {

// A batch of NHWC maps; c is the channel stride (DeviceChannels of the tensor's channels).
struct NhwcShape {
  int n = 0, h = 0, w = 0, c = 0;
  MOGSERVE_HD int64_t elements() const { return int64_t{n} * h * w * c; }
};

// --- Pre-processing (model::InputNormalization in FP32) ---

struct PreprocessParams {
  float mean[3] = {0, 0, 0};
  float divisor[3] = {1, 1, 1};
  bool zero_padding = false;  // the canvas outside the picture is 0 after normalisation
};

// Channel c (0 .. DeviceChannels(3) − 1) of the normalised input at a canvas pixel whose RGB
// value in channel c is `value`; `inside`: the pixel lies in the picture (x < width and y <
// height of its geometry). Channels >= 3 are the zero padding of the stem's input. Outside the
// picture: 0 with zero_padding (MogFace), else a black pixel's value (the SSD), as
// model::NormalizePlanar.
MOGSERVE_HD float PreprocessValue(const PreprocessParams& p, int c, uint8_t value, bool inside) {
  if (c >= 3) return 0.0f;
  if (!inside) return p.zero_padding ? 0.0f : (0.0f - p.mean[c]) / p.divisor[c];
  return (static_cast<float>(value) - p.mean[c]) / p.divisor[c];
}

// --- Activations ---

// model::Activation's values, repeated here so kernels take a plain int.
enum ActivationCode : int { kActNone = 0, kActRelu = 1, kActRelu6 = 2 };

// Clamp to [lo, hi]; NaN stays NaN (comparisons with NaN are false).
MOGSERVE_HD float Clamp(float x, float lo, float hi) {
  return x < lo ? lo : (x > hi ? hi : x);
}

MOGSERVE_HD float Activate(float x, int act) {
  if (act == kActRelu) return Clamp(x, 0.0f, INFINITY);
  if (act == kActRelu6) return Clamp(x, 0.0f, 6.0f);
  return x;
}

MOGSERVE_HD float Sigmoid(float x) {
  return 1.0f / (1.0f + expf(-x));
}

// --- Max-pool: kernel x kernel, stride, padding of −inf (padded taps never win) ---

// The input rows [y0, y1) and columns [x0, x1) of output pixel (oy, ox), clipped to the map.
struct PoolWindow {
  int y0, y1, x0, x1;
};

MOGSERVE_HD PoolWindow PoolWindowAt(int oy, int ox, int in_h, int in_w, int kernel, int stride,
                                    int pad_top, int pad_left) {
  PoolWindow w;
  w.y0 = oy * stride - pad_top;
  w.x0 = ox * stride - pad_left;
  w.y1 = w.y0 + kernel < in_h ? w.y0 + kernel : in_h;
  w.x1 = w.x0 + kernel < in_w ? w.x0 + kernel : in_w;
  w.y0 = w.y0 > 0 ? w.y0 : 0;
  w.x0 = w.x0 > 0 ? w.x0 : 0;
  return w;
}

// The maximum of load(y, x) over the window; −inf for an empty window; NaN when a tap is NaN
// (as PyTorch's max_pool2d: a non-finite value must reach the parity checks).
template <typename Load>
MOGSERVE_HD float MaxOverWindow(const PoolWindow& w, const Load& load) {
  float best = -INFINITY;
  for (int y = w.y0; y < w.y1; ++y) {
    for (int x = w.x0; x < w.x1; ++x) {
      const float v = load(y, x);
      best = (v > best || v != v) ? v : best;
    }
  }
  return best;
}

// --- x2 upsampling, used with a top-left crop: bilinear (half-pixel centres, edge-clamped) or
// nearest ---

// The two source indices and the weight of the second along one axis for destination index
// `dst` of a map upsampled from `in_size`: bilinear, source = max((dst + 0.5) / 2 − 0.5, 0),
// exact in FP32 (the weights are 0, 0.25 or 0.75); nearest, both indices dst / 2 (rounded down,
// clamped), weight 0.
struct UpsampleTap {
  int i0, i1;
  float frac;
};

MOGSERVE_HD UpsampleTap UpsampleAxis(int dst, int in_size, bool nearest = false) {
  if (nearest) {
    const int i = dst / 2 < in_size - 1 ? dst / 2 : in_size - 1;
    return UpsampleTap{i, i, 0.0f};
  }
  float src = (static_cast<float>(dst) + 0.5f) * 0.5f - 0.5f;
  src = src > 0.0f ? src : 0.0f;
  UpsampleTap t;
  t.i0 = static_cast<int>(src);
  t.i0 = t.i0 < in_size - 1 ? t.i0 : in_size - 1;
  t.i1 = t.i0 + 1 < in_size - 1 ? t.i0 + 1 : in_size - 1;
  t.frac = src - static_cast<float>(t.i0);
  return t;
}

MOGSERVE_HD float Bilerp(float v00, float v01, float v10, float v11, float fy, float fx) {
  return (1.0f - fy) * ((1.0f - fx) * v00 + fx * v01) + fy * ((1.0f - fx) * v10 + fx * v11);
}

// --- GroupNorm statistics: Welford per thread, Chan's merge across threads and blocks ---

struct Welford {
  float mean = 0.0f;
  float m2 = 0.0f;  // Σ (x − mean)²
  int count = 0;
};

MOGSERVE_HD void WelfordAdd(Welford& w, float x) {
  w.count += 1;
  const float delta = x - w.mean;
  w.mean += delta / static_cast<float>(w.count);
  w.m2 += delta * (x - w.mean);
}

// Chan, Golub and LeVeque's pairwise combination.
MOGSERVE_HD Welford WelfordMerge(const Welford& a, const Welford& b) {
  if (a.count == 0) return b;
  if (b.count == 0) return a;
  Welford out;
  out.count = a.count + b.count;
  const float delta = b.mean - a.mean;
  const float share_b = static_cast<float>(b.count) / static_cast<float>(out.count);
  out.mean = a.mean + delta * share_b;
  out.m2 = a.m2 + b.m2 + delta * delta * static_cast<float>(a.count) * share_b;
  return out;
}

// 1 / sqrt(biased variance + eps).
MOGSERVE_HD float InvStd(const Welford& w, float eps) {
  const float var = w.count > 0 ? w.m2 / static_cast<float>(w.count) : 0.0f;
  return 1.0f / sqrtf((var > 0.0f ? var : 0.0f) + eps);
}

MOGSERVE_HD float GroupNormApply(float x, float mean, float inv_std, float gamma, float beta,
                                 int act) {
  return Activate((x - mean) * inv_std * gamma + beta, act);
}

// --- Output stage ---

// The row of the [N, anchors] score / [N, anchors, 4] box outputs for anchor `a` of pixel
// `pixel` (y·W + x) of a level starting at `level_offset`.
MOGSERVE_HD int64_t AnchorRow(int level_offset, int64_t pixel, int anchors_per_cell, int a) {
  return level_offset + pixel * anchors_per_cell + a;
}

}  // namespace mogserve::engine::cuda
