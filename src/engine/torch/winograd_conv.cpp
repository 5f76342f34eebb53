#include "engine/torch/winograd_conv.h"

#include <ATen/Parallel.h>

#include <dnnl.hpp>

#include <algorithm>
#include <cstring>
#include <optional>

#include "common/cpu_info.h"
#include "engine/torch/onednn_support.h"

namespace mogserve::engine::torch_backend {
namespace {

using dnnl::memory;

constexpr int kTile = 4;     // outputs per tile side: F(4x4, 3x3)
constexpr int kAlpha = 6;    // inputs per tile side
constexpr int kPoints = 36;  // kAlpha^2 GEMMs
constexpr int kBlock = 64;   // channels transformed together, vectorised across them
// Tiles per chunk at most, the tiles split evenly: a chunk's transformed input and output stay
// in cache between the transforms and the GEMM, and a large batch needs no gigabytes of them.
// Measured per layer against the direct kernel (Zen 5, 2 threads, PlanRunner's layer shapes):
// 128 was within 5 % of the best of 64-512 for every shape from 64 to 512 channels.
constexpr int64_t kChunkTiles = 128;
// Below this many tiles per call the direct kernel wins: the GEMMs read the transformed weights
// (36 x in x out floats, 4x the kernel's) whatever the tile count. Measured (Zen 5, 512 -> 512
// channels): 9 tiles (a 10x10 map) 0.7x the direct kernel's speed, 25 tiles (20x20) 1.7x.
constexpr int64_t kMinTiles = 16;

// The geometry of one call: the input (NHWC), its padding, the output and its tiles.
struct Geometry {
  int64_t h = 0, w = 0, c = 0;
  int64_t out_h = 0, out_w = 0, out_c = 0;
  int64_t pad_top = 0, pad_left = 0;
  int64_t tiles_h = 0, tiles_w = 0;
};

Geometry MakeGeometry(const at::Tensor& x, const model::ResolvedPadding& pad, int64_t out_c) {
  Geometry g;
  g.h = x.size(2);
  g.w = x.size(3);
  g.c = x.size(1);
  g.out_h = g.h + pad.top + pad.bottom - 2;
  g.out_w = g.w + pad.left + pad.right - 2;
  g.out_c = out_c;
  g.pad_top = pad.top;
  g.pad_left = pad.left;
  g.tiles_h = (g.out_h + kTile - 1) / kTile;
  g.tiles_w = (g.out_w + kTile - 1) / kTile;
  return g;
}

// B^T of F(4,3) applied to six values (a column or a row of a 6x6 block), n channels at a time.
[[gnu::always_inline]] inline void ApplyBt(const float* __restrict z0, const float* __restrict z1,
                                           const float* __restrict z2, const float* __restrict z3,
                                           const float* __restrict z4, const float* __restrict z5,
                                           float* __restrict r0, float* __restrict r1,
                                           float* __restrict r2, float* __restrict r3,
                                           float* __restrict r4, float* __restrict r5, int n) {
  for (int c = 0; c < n; ++c) {
    const float a = z4[c] - 4.0f * z2[c];  // shared by rows 1 and 2
    const float b = z3[c] - 4.0f * z1[c];
    const float d = z4[c] - z2[c];  // shared by rows 3 and 4
    const float e = 2.0f * (z3[c] - z1[c]);
    r0[c] = 4.0f * z0[c] - 5.0f * z2[c] + z4[c];
    r1[c] = a + b;
    r2[c] = a - b;
    r3[c] = d + e;
    r4[c] = d - e;
    r5[c] = 4.0f * z1[c] - 5.0f * z3[c] + z5[c];
  }
}

// A^T of F(4,3) applied to six values: four outputs.
[[gnu::always_inline]] inline void ApplyAt(const float* __restrict z0, const float* __restrict z1,
                                           const float* __restrict z2, const float* __restrict z3,
                                           const float* __restrict z4, const float* __restrict z5,
                                           float* __restrict r0, float* __restrict r1,
                                           float* __restrict r2, float* __restrict r3, int n) {
  for (int c = 0; c < n; ++c) {
    const float s12 = z1[c] + z2[c], d12 = z1[c] - z2[c];
    const float s34 = z3[c] + z4[c], d34 = z3[c] - z4[c];
    r0[c] = z0[c] + s12 + s34;
    r1[c] = d12 + 2.0f * d34;
    r2[c] = s12 + 4.0f * s34;
    r3[c] = d12 + 8.0f * d34 + z5[c];
  }
}

// V[p][t - first][c] for the tiles [begin, end) of a chunk starting at tile `first` with `rows`
// tiles; x NHWC of `images` images.
[[gnu::always_inline]] inline void InputTransformImpl(const Geometry& g, const float* x,
                                                      int64_t first, int64_t rows, int64_t begin,
                                                      int64_t end, float* v) {
  alignas(64) float d[kPoints][kBlock];
  alignas(64) float s[kPoints][kBlock];
  const int64_t per_image = g.tiles_h * g.tiles_w;
  for (int64_t t = begin; t < end; ++t) {
    const int64_t image = t / per_image, r = t % per_image;
    const int64_t y0 = r / g.tiles_w * kTile - g.pad_top;
    const int64_t x0 = r % g.tiles_w * kTile - g.pad_left;
    for (int64_t c0 = 0; c0 < g.c; c0 += kBlock) {
      const int n = static_cast<int>(std::min<int64_t>(kBlock, g.c - c0));
      for (int i = 0; i < kAlpha; ++i) {
        const int64_t yy = y0 + i;
        for (int j = 0; j < kAlpha; ++j) {
          const int64_t xx = x0 + j;
          float* dst = d[i * kAlpha + j];
          if (yy < 0 || yy >= g.h || xx < 0 || xx >= g.w) {
            std::memset(dst, 0, sizeof(float) * n);
          } else {
            std::memcpy(dst, x + ((image * g.h + yy) * g.w + xx) * g.c + c0, sizeof(float) * n);
          }
        }
      }
      for (int j = 0; j < kAlpha; ++j) {  // columns: s = B^T d
        ApplyBt(d[j], d[6 + j], d[12 + j], d[18 + j], d[24 + j], d[30 + j], s[j], s[6 + j],
                s[12 + j], s[18 + j], s[24 + j], s[30 + j], n);
      }
      float* out = v + (t - first) * g.c + c0;
      const int64_t plane = rows * g.c;
      for (int i = 0; i < kAlpha; ++i) {  // rows: V = s B, written to the 36 GEMM inputs
        float* o = out + i * kAlpha * plane;
        ApplyBt(s[i * 6], s[i * 6 + 1], s[i * 6 + 2], s[i * 6 + 3], s[i * 6 + 4], s[i * 6 + 5], o,
                o + plane, o + 2 * plane, o + 3 * plane, o + 4 * plane, o + 5 * plane, n);
      }
    }
  }
}

struct Epilogue {
  const float* bias = nullptr;
  bool accumulate = false;  // the output holds the residual: add to it
  model::Activation act = model::Activation::kNone;
};

// The output of the tiles [begin, end) of a chunk from M[p][t - first][o], plus bias, residual
// and activation, into y (NHWC).
[[gnu::always_inline]] inline void OutputTransformImpl(const Geometry& g, const float* m,
                                                       int64_t first, int64_t rows, int64_t begin,
                                                       int64_t end, const Epilogue& ep, float* y) {
  alignas(64) float s[4 * kAlpha][kBlock];
  alignas(64) float e[kTile][kBlock];
  const int64_t per_image = g.tiles_h * g.tiles_w;
  const int64_t plane = rows * g.out_c;
  const float upper = ep.act == model::Activation::kRelu6 ? 6.0f : 3.4e38f;
  const float lower = ep.act == model::Activation::kNone ? -3.4e38f : 0.0f;
  for (int64_t t = begin; t < end; ++t) {
    const int64_t image = t / per_image, r = t % per_image;
    const int64_t oy0 = r / g.tiles_w * kTile, ox0 = r % g.tiles_w * kTile;
    const float* tile = m + (t - first) * g.out_c;
    for (int64_t o0 = 0; o0 < g.out_c; o0 += kBlock) {
      const int n = static_cast<int>(std::min<int64_t>(kBlock, g.out_c - o0));
      const float* p = tile + o0;
      for (int j = 0; j < kAlpha; ++j) {  // columns: s = A^T M
        ApplyAt(p + j * plane, p + (6 + j) * plane, p + (12 + j) * plane, p + (18 + j) * plane,
                p + (24 + j) * plane, p + (30 + j) * plane, s[j], s[6 + j], s[12 + j], s[18 + j],
                n);
      }
      for (int i = 0; i < kTile && oy0 + i < g.out_h; ++i) {  // rows: s A
        ApplyAt(s[i * 6], s[i * 6 + 1], s[i * 6 + 2], s[i * 6 + 3], s[i * 6 + 4], s[i * 6 + 5],
                e[0], e[1], e[2], e[3], n);
        for (int k = 0; k < kTile && ox0 + k < g.out_w; ++k) {
          const int64_t at = ((image * g.out_h + oy0 + i) * g.out_w + ox0 + k) * g.out_c + o0;
          float* __restrict out = y + at;
          const float* __restrict b = ep.bias + o0;
          const float* __restrict value = e[k];
          if (ep.accumulate) {
            for (int c = 0; c < n; ++c) {
              out[c] = std::min(std::max(value[c] + b[c] + out[c], lower), upper);
            }
          } else {
            for (int c = 0; c < n; ++c) out[c] = std::min(std::max(value[c] + b[c], lower), upper);
          }
        }
      }
    }
  }
}

using InputTransformFn = void (*)(const Geometry&, const float*, int64_t, int64_t, int64_t, int64_t,
                                  float*);
using OutputTransformFn = void (*)(const Geometry&, const float*, int64_t, int64_t, int64_t,
                                   int64_t, const Epilogue&, float*);

// The transforms compiled for each vector width; the same arithmetic, so every ISA gives the
// same results up to the FMA contractions the compiler forms.
__attribute__((target("avx512f,prefer-vector-width=512"))) void InputTransformAvx512(
    const Geometry& g, const float* x, int64_t first, int64_t rows, int64_t begin, int64_t end,
    float* v) {
  InputTransformImpl(g, x, first, rows, begin, end, v);
}
__attribute__((target("avx2,fma"))) void InputTransformAvx2(const Geometry& g, const float* x,
                                                            int64_t first, int64_t rows,
                                                            int64_t begin, int64_t end, float* v) {
  InputTransformImpl(g, x, first, rows, begin, end, v);
}
void InputTransformPlain(const Geometry& g, const float* x, int64_t first, int64_t rows,
                         int64_t begin, int64_t end, float* v) {
  InputTransformImpl(g, x, first, rows, begin, end, v);
}
__attribute__((target("avx512f,prefer-vector-width=512"))) void OutputTransformAvx512(
    const Geometry& g, const float* m, int64_t first, int64_t rows, int64_t begin, int64_t end,
    const Epilogue& ep, float* y) {
  OutputTransformImpl(g, m, first, rows, begin, end, ep, y);
}
__attribute__((target("avx2,fma"))) void OutputTransformAvx2(const Geometry& g, const float* m,
                                                             int64_t first, int64_t rows,
                                                             int64_t begin, int64_t end,
                                                             const Epilogue& ep, float* y) {
  OutputTransformImpl(g, m, first, rows, begin, end, ep, y);
}
void OutputTransformPlain(const Geometry& g, const float* m, int64_t first, int64_t rows,
                          int64_t begin, int64_t end, const Epilogue& ep, float* y) {
  OutputTransformImpl(g, m, first, rows, begin, end, ep, y);
}

struct Transforms {
  InputTransformFn input;
  OutputTransformFn output;
};

const Transforms& HostTransforms() {
  static const Transforms transforms = [] {
    const CpuFeatures& cpu = HostCpu();
    if (cpu.avx512f) return Transforms{&InputTransformAvx512, &OutputTransformAvx512};
    if (cpu.avx2 && cpu.fma) return Transforms{&InputTransformAvx2, &OutputTransformAvx2};
    return Transforms{&InputTransformPlain, &OutputTransformPlain};
  }();
  return transforms;
}

// The tiles of each chunk: at most kChunkTiles, all chunks alike (no small last one).
int64_t ChunkTiles(int64_t tiles) {
  const int64_t chunks = (tiles + kChunkTiles - 1) / kChunkTiles;
  return (tiles + chunks - 1) / chunks;
}

}  // namespace

// The batched matmul of a chunk of `rows` tiles: [36, rows, in] x [36, in, out].
struct WinogradConv::Gemm {
  int64_t rows = 0;
  std::optional<dnnl::matmul::primitive_desc> pd;
  std::optional<dnnl::matmul> primitive;
  std::shared_ptr<const ReorderedWeights> weights;  // U in pd's layout
};

bool WinogradConv::Eligible(const model::ConvDef& def) {
  return def.kernel == 3 && def.groups == 1;
}

WinogradConv::WinogradConv(const model::ConvDef& def, const at::Tensor& weight,
                           const at::Tensor& bias)
    : out_channels_(def.out_channels),
      in_channels_(def.in_channels),
      weight_(weight),
      bias_(bias.to(at::kFloat).contiguous()) {}

WinogradConv::~WinogradConv() = default;

bool WinogradConv::Suits(const model::Op& op, const model::ResolvedPadding& pad,
                         const at::Tensor& x) const {
  if (op.stride != 1 || op.dilation != 1 || x.scalar_type() != at::kFloat || x.dim() != 4 ||
      !x.is_contiguous(at::MemoryFormat::ChannelsLast) || x.size(1) != in_channels_) {
    return false;
  }
  const Geometry g = MakeGeometry(x, pad, out_channels_);
  return g.out_h > 0 && g.out_w > 0 && x.size(0) * g.tiles_h * g.tiles_w >= kMinTiles;
}

at::Tensor WinogradConv::TransformedWeights() const {
  // U[p][c][o] = (G g G^T)[p] for the 3x3 kernel g of (o, c), in double.
  static constexpr double kG[kAlpha][3] = {{1.0 / 4, 0, 0},
                                           {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                           {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                           {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                           {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                           {0, 0, 1}};
  at::Tensor u = at::empty({kPoints, in_channels_, out_channels_}, at::kFloat);
  const at::Tensor kernels = weight_.to(at::kFloat).contiguous();
  const float* w = kernels.data_ptr<float>();
  float* out = u.data_ptr<float>();
  const int64_t plane = static_cast<int64_t>(in_channels_) * out_channels_;
  for (int64_t o = 0; o < out_channels_; ++o) {
    for (int64_t c = 0; c < in_channels_; ++c) {
      const float* k = w + (o * in_channels_ + c) * 9;
      double gk[kAlpha][3];  // G g
      for (int i = 0; i < kAlpha; ++i) {
        for (int j = 0; j < 3; ++j) {
          gk[i][j] = kG[i][0] * k[j] + kG[i][1] * k[3 + j] + kG[i][2] * k[6 + j];
        }
      }
      for (int i = 0; i < kAlpha; ++i) {
        for (int j = 0; j < kAlpha; ++j) {
          const double value = gk[i][0] * kG[j][0] + gk[i][1] * kG[j][1] + gk[i][2] * kG[j][2];
          out[(i * kAlpha + j) * plane + c * out_channels_ + o] = static_cast<float>(value);
        }
      }
    }
  }
  return u;
}

const WinogradConv::Gemm* WinogradConv::FindGemm(int64_t rows) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& g : gemms_) {
    if (g->rows == rows) return g.get();
  }
  auto g = std::make_unique<Gemm>();
  g->rows = rows;
  using Tag = memory::format_tag;
  const auto f32 = memory::data_type::f32;
  const memory::desc src({kPoints, rows, in_channels_}, f32, Tag::abc);
  const memory::desc weights_any({kPoints, in_channels_, out_channels_}, f32, Tag::any);
  const memory::desc dst({kPoints, rows, out_channels_}, f32, Tag::abc);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // per call: concurrent instances
  g->pd.emplace(dnnl::matmul::desc(src, weights_any, dst), attr, OneDnnCpuEngine());
  g->primitive.emplace(*g->pd);
  const memory::desc wanted = g->pd->weights_desc();
  for (const auto& other : gemms_) {
    if (other->weights->memory.get_desc() == wanted) g->weights = other->weights;
  }
  if (!g->weights) {
    const at::Tensor u = TransformedWeights();
    g->weights = ReorderWeights(memory({{kPoints, in_channels_, out_channels_}, f32, Tag::abc},
                                       OneDnnCpuEngine(), u.data_ptr()),
                                wanted);
  }
  gemms_.push_back(std::move(g));
  return gemms_.back().get();
}

at::Tensor WinogradConv::Run(const model::Op& op, const model::ResolvedPadding& pad,
                             const at::Tensor& x, const at::Tensor& residual,
                             bool residual_reusable) const {
  const Geometry g = MakeGeometry(x, pad, out_channels_);
  const int64_t n = x.size(0);
  // With a residual the output starts as the residual and the output transform adds to it;
  // each element is read and written once, so the residual's own buffer may serve.
  const at::Tensor y = ResidualOutput({n, out_channels_, g.out_h, g.out_w}, x.options(), residual,
                                      residual_reusable);
  Epilogue ep;
  ep.bias = bias_.data_ptr<float>();
  ep.accumulate = residual.defined();
  ep.act = op.act;
  const int64_t tiles = n * g.tiles_h * g.tiles_w;
  const int64_t chunk = ChunkTiles(tiles);
  const at::Tensor v = at::empty({kPoints * chunk * g.c}, at::kFloat);
  const at::Tensor m = at::empty({kPoints * chunk * g.out_c}, at::kFloat);
  const Transforms& transforms = HostTransforms();
  const float* in = x.data_ptr<float>();
  float* out = y.data_ptr<float>();
  for (int64_t first = 0; first < tiles; first += chunk) {
    const int64_t rows = std::min(chunk, tiles - first);
    const Gemm* gemm = FindGemm(rows);
    at::parallel_for(first, first + rows, 4, [&](int64_t begin, int64_t end) {
      transforms.input(g, in, first, rows, begin, end, v.data_ptr<float>());
    });
    ExecuteWithScratchpad(
        *gemm->primitive, gemm->pd->scratchpad_desc(),
        {{DNNL_ARG_SRC, memory(gemm->pd->src_desc(), OneDnnCpuEngine(), v.data_ptr())},
         {DNNL_ARG_WEIGHTS, gemm->weights->memory},
         {DNNL_ARG_DST, memory(gemm->pd->dst_desc(), OneDnnCpuEngine(), m.data_ptr())}});
    at::parallel_for(first, first + rows, 4, [&](int64_t begin, int64_t end) {
      transforms.output(g, m.data_ptr<float>(), first, rows, begin, end, ep, out);
    });
  }
  return y;
}

}  // namespace mogserve::engine::torch_backend
