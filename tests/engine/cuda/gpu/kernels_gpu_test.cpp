// The CUDA backend's own kernels (engine/cuda/kernels.h) on a GPU, against the same element
// functions run on the host (engine/cuda/kernel_math.h, which cuda_host_tests checks against the
// FP64 reference executor), in every storage type. Outputs are poisoned (all bits set: NaN)
// before each launch, so an element a kernel forgets to write fails. Without a CUDA device they
// skip (label gpu); the launchers' argument checks are in cuda_host_tests.
#include <cuda_runtime_api.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "engine/cuda/float16.h"
#include "engine/cuda/kernels.h"
#include "model/element_type.h"

namespace mogserve::engine::cuda {
namespace {

bool HaveDevice() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

#define SKIP_WITHOUT_DEVICE() \
  if (!HaveDevice()) GTEST_SKIP() << "no CUDA device"

// Host values <-> device bytes of a storage type.
std::vector<uint8_t> Encode(const std::vector<float>& v, StorageType type) {
  std::vector<uint8_t> out(v.size() * StorageBytes(type));
  for (size_t i = 0; i < v.size(); ++i) {
    if (type == StorageType::kF32) {
      std::memcpy(out.data() + 4 * i, &v[i], 4);
    } else {
      const uint16_t bits =
          type == StorageType::kF16 ? FloatToHalfBits(v[i]) : FloatToBf16Bits(v[i]);
      std::memcpy(out.data() + 2 * i, &bits, 2);
    }
  }
  return out;
}

std::vector<float> Decode(const std::vector<uint8_t>& bytes, StorageType type) {
  const model::ElementType e = type == StorageType::kF32   ? model::ElementType::kF32
                               : type == StorageType::kF16 ? model::ElementType::kF16
                                                           : model::ElementType::kBF16;
  std::vector<float> out(bytes.size() / StorageBytes(type));
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = model::ElementToFloat(e, bytes.data() + i * StorageBytes(type));
  }
  return out;
}

// What the device holds after storing `v`: v rounded to the storage type.
float Stored(float v, StorageType type) {
  return Decode(Encode({v}, type), type)[0];
}

// A device buffer, poisoned with 0xFF bytes (NaN in every float type) when created.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    EXPECT_EQ(cudaMalloc(&ptr_, bytes), cudaSuccess);
    EXPECT_EQ(cudaMemset(ptr_, 0xFF, bytes), cudaSuccess);
  }
  explicit DeviceBuffer(const std::vector<uint8_t>& host) : DeviceBuffer(host.size()) {
    EXPECT_EQ(cudaMemcpy(ptr_, host.data(), host.size(), cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~DeviceBuffer() { cudaFree(ptr_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return ptr_; }
  std::vector<uint8_t> Read() const {
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<uint8_t> host(bytes_);
    EXPECT_EQ(cudaMemcpy(host.data(), ptr_, bytes_, cudaMemcpyDeviceToHost), cudaSuccess);
    return host;
  }
  std::vector<float> ReadAs(StorageType type) const { return Decode(Read(), type); }

 private:
  void* ptr_ = nullptr;
  size_t bytes_;
};

std::vector<float> Random(size_t n, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// Half an ulp of the storage type relative to the magnitude, plus FP32 arithmetic slack.
double Tolerance(StorageType type, double magnitude) {
  const double rel = type == StorageType::kF32 ? 2e-6 : (type == StorageType::kF16 ? 1e-3 : 8e-3);
  return rel * std::max(1.0, magnitude);
}

const StorageType kTypes[] = {StorageType::kF32, StorageType::kF16, StorageType::kBf16};

TEST(KernelsGpuTest, PreprocessWritesEveryChannelOfEveryPixel) {
  SKIP_WITHOUT_DEVICE();
  const NhwcShape s{2, 13, 17, 8};
  std::mt19937 rng(1);
  std::vector<uint8_t> canvases(static_cast<size_t>(s.n) * s.h * s.w * 3);
  for (uint8_t& v : canvases) v = static_cast<uint8_t>(rng());
  const std::vector<int> sizes = {17, 13, 9, 6};  // (width, height) per image
  DeviceBuffer d_canvas(canvases);
  std::vector<uint8_t> size_bytes(sizes.size() * sizeof(int));
  std::memcpy(size_bytes.data(), sizes.data(), size_bytes.size());
  DeviceBuffer d_sizes(size_bytes);
  for (bool zero_padding : {true, false}) {
    PreprocessParams p;
    p.mean[0] = 104;
    p.mean[1] = 117;
    p.mean[2] = 123;
    p.divisor[0] = 58.4f;
    p.divisor[1] = 57.1f;
    p.divisor[2] = 57.4f;
    p.zero_padding = zero_padding;
    for (StorageType type : kTypes) {
      DeviceBuffer out(s.elements() * StorageBytes(type));
      ASSERT_TRUE(LaunchPreprocess(static_cast<const uint8_t*>(d_canvas.get()),
                                   static_cast<const int*>(d_sizes.get()), p, type, out.get(), s,
                                   nullptr)
                      .ok());
      const std::vector<float> got = out.ReadAs(type);
      for (int64_t px = 0; px < int64_t{s.n} * s.h * s.w; ++px) {
        const int x = px % s.w, y = px / s.w % s.h, i = px / (s.w * s.h);
        const bool inside = x < sizes[2 * i] && y < sizes[2 * i + 1];
        for (int c = 0; c < s.c; ++c) {
          const uint8_t v = c < 3 ? canvases[px * 3 + c] : 0;
          ASSERT_EQ(got[px * s.c + c], Stored(PreprocessValue(p, c, v, inside), type))
              << px << " " << c;
        }
      }
    }
  }
}

TEST(KernelsGpuTest, MaxPoolMatchesTheHost) {
  SKIP_WITHOUT_DEVICE();
  const NhwcShape is{2, 11, 9, 16}, os{2, 6, 5, 16};
  const std::vector<float> in = Random(is.elements(), -3, 1, 2);
  for (StorageType type : kTypes) {
    DeviceBuffer d_in(Encode(in, type)), d_out(os.elements() * StorageBytes(type));
    ASSERT_TRUE(LaunchMaxPool(d_in.get(), is, d_out.get(), os, 3, 2, 1, 1, type, nullptr).ok());
    const std::vector<float> got = d_out.ReadAs(type);
    for (int64_t i = 0; i < os.elements(); ++i) {
      const int c = i % os.c, x = i / os.c % os.w, y = i / (os.c * os.w) % os.h,
                n = i / (os.c * os.w * os.h);
      const float want =
          MaxOverWindow(PoolWindowAt(y, x, is.h, is.w, 3, 2, 1, 1), [&](int yy, int xx) {
            return Stored(in[((static_cast<int64_t>(n) * is.h + yy) * is.w + xx) * is.c + c], type);
          });
      ASSERT_EQ(got[i], want) << i;
    }
  }
}

// Runs GroupNorm statistics + apply on `in` (shape s, `channels` real channels in `groups`
// groups, random gamma/beta, eps 1e-5), in place or into a poisoned buffer, and checks the
// statistics and every output against FP64 on the stored input; padding channels must be 0.
void CheckGroupNorm(const NhwcShape& s, int channels, int groups, const std::vector<float>& in,
                    StorageType type, int act, bool in_place) {
  SCOPED_TRACE(std::string(StorageTypeName(type)) + " act " + std::to_string(act) +
               (in_place ? " in place" : ""));
  const std::vector<float> gamma = Random(s.c, 0.5f, 1.5f, 4), beta = Random(s.c, -0.5f, 0.5f, 5);
  std::vector<uint8_t> gb(s.c * 4), bb(s.c * 4);
  std::memcpy(gb.data(), gamma.data(), gb.size());
  std::memcpy(bb.data(), beta.data(), bb.size());
  DeviceBuffer d_gamma(gb), d_beta(bb);
  const std::vector<uint8_t> encoded = Encode(in, type);
  const std::vector<float> x = Decode(encoded, type);  // what the device holds
  DeviceBuffer d_x(encoded);
  std::optional<DeviceBuffer> d_out;
  if (!in_place) d_out.emplace(s.elements() * StorageBytes(type));
  void* y = in_place ? d_x.get() : d_out->get();
  const int64_t ws_bytes = GroupNormWorkspaceBytes(s.n, groups);
  DeviceBuffer d_ws(ws_bytes), d_stats(s.n * groups * 2 * 4);
  ASSERT_TRUE(LaunchGroupNormStats(d_x.get(), s, channels, groups, 1e-5f, d_ws.get(), ws_bytes,
                                   static_cast<float*>(d_stats.get()), type, nullptr)
                  .ok());
  ASSERT_TRUE(LaunchGroupNormApply(d_x.get(), s, channels, groups,
                                   static_cast<const float*>(d_stats.get()),
                                   static_cast<const float*>(d_gamma.get()),
                                   static_cast<const float*>(d_beta.get()), act, y, type, nullptr)
                  .ok());
  const std::vector<float> stats = d_stats.ReadAs(StorageType::kF32);
  const std::vector<float> got = (in_place ? d_x : *d_out).ReadAs(type);
  const int64_t plane = int64_t{s.h} * s.w;
  const int per_group = channels / groups;
  for (int n = 0; n < s.n; ++n) {
    for (int g = 0; g < groups; ++g) {
      double sum = 0, sq = 0;
      const double count = static_cast<double>(plane) * per_group;
      auto at = [&](int64_t p, int j) { return (n * plane + p) * s.c + g * per_group + j; };
      for (int64_t p = 0; p < plane; ++p) {
        for (int j = 0; j < per_group; ++j) sum += x[at(p, j)];
      }
      const double mean = sum / count;
      for (int64_t p = 0; p < plane; ++p) {
        for (int j = 0; j < per_group; ++j) sq += (x[at(p, j)] - mean) * (x[at(p, j)] - mean);
      }
      const double inv_std = 1.0 / std::sqrt(sq / count + 1e-5);
      ASSERT_NEAR(stats[2 * (n * groups + g)], mean, 1e-5 * std::abs(mean) + 1e-6);
      ASSERT_NEAR(stats[2 * (n * groups + g) + 1], inv_std, 1e-4 * inv_std);
      for (int64_t p = 0; p < plane; ++p) {
        for (int j = 0; j < per_group; ++j) {
          const int c = g * per_group + j;
          double want = (x[at(p, j)] - mean) * inv_std * gamma[c] + beta[c];
          if (act != kActNone) want = std::max(0.0, want);
          if (act == kActRelu6) want = std::min(6.0, want);
          ASSERT_NEAR(got[at(p, j)], want, Tolerance(type, std::abs(want)) + 1e-4) << at(p, j);
        }
      }
    }
    for (int64_t p = 0; p < plane; ++p) {
      for (int c = channels; c < s.c; ++c) ASSERT_EQ(got[(n * plane + p) * s.c + c], 0.0f);
    }
  }
}

TEST(KernelsGpuTest, GroupNormMatchesFp64WithPaddingChannelsZero) {
  SKIP_WITHOUT_DEVICE();
  const NhwcShape s{2, 20, 19, 64};
  const std::vector<float> in = Random(s.elements(), 40, 44, 3);  // a large mean, a small spread
  for (StorageType type : kTypes) {
    for (int act : {kActNone, kActRelu, kActRelu6}) {
      for (bool in_place : {false, true}) {
        CheckGroupNorm(s, 60, 4, in, type, act, in_place);  // 4 padding channels
        if (HasFatalFailure()) return;
      }
    }
  }
}

// Large enough for the grid-stride loops' second pass (26.2 M elements > 65536 blocks x 256
// threads) and for the 64-split cap of the statistics (819 200 values per group), in place as
// the arena runs it: R101's P2 towers at batch 2, FP16 (52 MB).
TEST(KernelsGpuTest, GroupNormInPlaceOnALargeMap) {
  SKIP_WITHOUT_DEVICE();
  const NhwcShape s{2, 160, 160, 512};
  ASSERT_GT(s.elements(), int64_t{65536} * 256);
  ASSERT_GT(int64_t{s.h} * s.w * (512 / 16), int64_t{kGroupNormMaxSplits} * 256 * 16);
  const std::vector<float> in = Random(s.elements(), -1, 3, 30);
  CheckGroupNorm(s, 512, 16, in, StorageType::kF16, kActRelu, true);
}

TEST(KernelsGpuTest, UpsampleAddMatchesTheHostInPlaceOrNot) {
  SKIP_WITHOUT_DEVICE();
  const NhwcShape ts{2, 7, 6, 16}, os{2, 13, 11, 16};
  const std::vector<float> top = Random(ts.elements(), -2, 2, 6);
  const std::vector<float> lateral = Random(os.elements(), -2, 2, 7);
  for (StorageType type : kTypes) {
    for (int variant = 0; variant < 4; ++variant) {
      const bool in_place = variant & 1, nearest = variant & 2;
      DeviceBuffer d_top(Encode(top, type)), d_lat(Encode(lateral, type));
      DeviceBuffer d_out(os.elements() * StorageBytes(type));  // poisoned
      DeviceBuffer& out = in_place ? d_lat : d_out;
      ASSERT_TRUE(
          LaunchUpsampleAdd(d_top.get(), ts, d_lat.get(), out.get(), os, nearest, type, nullptr)
              .ok());
      const std::vector<float> got = out.ReadAs(type);
      for (int64_t i = 0; i < os.elements(); ++i) {
        const int c = i % os.c, x = i / os.c % os.w, y = i / (os.c * os.w) % os.h,
                  n = i / (os.c * os.w * os.h);
        const UpsampleTap ty = UpsampleAxis(y, ts.h, nearest), tx = UpsampleAxis(x, ts.w, nearest);
        auto at = [&](int yy, int xx) {
          return Stored(top[((static_cast<int64_t>(n) * ts.h + yy) * ts.w + xx) * ts.c + c], type);
        };
        const float want = Stored(
            Stored(lateral[i], type) + Bilerp(at(ty.i0, tx.i0), at(ty.i0, tx.i1), at(ty.i1, tx.i0),
                                              at(ty.i1, tx.i1), ty.frac, tx.frac),
            type);
        ASSERT_NEAR(got[i], want, Tolerance(type, 4.0))
            << (in_place ? "in place " : "") << (nearest ? "nearest " : "") << i;
      }
    }
  }
}

// A concat whose real channels (4 + 8) fall short of the output's stride (16): the last input
// zeroes channels 12..15 of the poisoned output, which the next convolution reads (× 0 weights).
TEST(KernelsGpuTest, ConcatZeroesThePaddingChannels) {
  SKIP_WITHOUT_DEVICE();
  const NhwcShape a{2, 3, 5, 8}, b{2, 3, 5, 8}, out{2, 3, 5, 16};
  const std::vector<float> va = Random(a.elements(), -9, 9, 20),
                           vb = Random(b.elements(), -9, 9, 21);
  for (StorageType type : kTypes) {
    DeviceBuffer d_a(Encode(va, type)), d_b(Encode(vb, type));
    DeviceBuffer d_out(out.elements() * StorageBytes(type));  // poisoned: NaN
    ASSERT_TRUE(
        LaunchCopyChannels(d_a.get(), a, 4, d_out.get(), out, 0, false, type, nullptr).ok());
    ASSERT_TRUE(LaunchCopyChannels(d_b.get(), b, 8, d_out.get(), out, 4, true, type, nullptr).ok());
    const std::vector<float> got = d_out.ReadAs(type);
    for (int64_t p = 0; p < int64_t{out.n} * out.h * out.w; ++p) {
      for (int c = 0; c < 16; ++c) {
        const float want =
            c < 4 ? Stored(va[p * 8 + c], type) : (c < 12 ? Stored(vb[p * 8 + c - 4], type) : 0.0f);
        ASSERT_EQ(got[p * 16 + c], want) << StorageTypeName(type) << " " << p << " " << c;
      }
    }
  }
}

TEST(KernelsGpuTest, ConcatClampAndOutputStage) {
  SKIP_WITHOUT_DEVICE();
  const NhwcShape a{2, 5, 4, 8}, b{2, 5, 4, 16}, out{2, 5, 4, 24};
  const std::vector<float> va = Random(a.elements(), -9, 9, 8), vb = Random(b.elements(), -9, 9, 9);
  for (StorageType type : kTypes) {
    DeviceBuffer d_a(Encode(va, type)), d_b(Encode(vb, type));
    DeviceBuffer d_out(out.elements() * StorageBytes(type));
    ASSERT_TRUE(
        LaunchCopyChannels(d_a.get(), a, 8, d_out.get(), out, 0, false, type, nullptr).ok());
    ASSERT_TRUE(
        LaunchCopyChannels(d_b.get(), b, 16, d_out.get(), out, 8, true, type, nullptr).ok());
    ASSERT_TRUE(LaunchClamp(d_out.get(), out.elements(), 0.0f, 6.0f, type, nullptr).ok());
    const std::vector<float> got = d_out.ReadAs(type);
    for (int64_t p = 0; p < int64_t{out.n} * out.h * out.w; ++p) {
      for (int c = 0; c < 24; ++c) {
        const float v = c < 8 ? va[p * 8 + c] : vb[p * 16 + c - 8];
        ASSERT_EQ(got[p * 24 + c], Clamp(Stored(v, type), 0.0f, 6.0f)) << p << " " << c;
      }
    }
    // Output stage: 2 anchors per cell, scores from channel 1, boxes from channel 8 of one map;
    // the level starts at row 3 of 3 + 40 rows.
    const int total = 3 + 5 * 4 * 2;
    DeviceBuffer conf(int64_t{out.n} * total * 4), loc(int64_t{out.n} * total * 16);
    ASSERT_TRUE(LaunchOutputLevel(d_b.get(), b, 1, d_b.get(), b, 8, 2, 3, total,
                                  static_cast<float*>(conf.get()), static_cast<float*>(loc.get()),
                                  type, nullptr)
                    .ok());
    const std::vector<float> vc = conf.ReadAs(StorageType::kF32);
    const std::vector<float> vl = loc.ReadAs(StorageType::kF32);
    for (int n = 0; n < out.n; ++n) {
      for (int64_t p = 0; p < 20; ++p) {
        for (int k = 0; k < 2; ++k) {
          const int64_t row = n * total + AnchorRow(3, p, 2, k);
          const int64_t px = (n * 20 + p) * 16;
          EXPECT_NEAR(vc[row], Sigmoid(Stored(vb[px + 1 + k], type)), 1e-6);
          for (int j = 0; j < 4; ++j) {
            ASSERT_EQ(vl[row * 4 + j], Stored(vb[px + 8 + 4 * k + j], type));
          }
        }
      }
      for (int r = 0; r < 3; ++r) EXPECT_TRUE(std::isnan(vc[n * total + r]));  // not this level's
    }
  }
}

}  // namespace
}  // namespace mogserve::engine::cuda
