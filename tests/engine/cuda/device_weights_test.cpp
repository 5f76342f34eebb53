// Weight preparation for the CUDA backend (engine/cuda/device_weights.h) and the FP16 / BF16
// rounding it uses (engine/cuda/float16.h): known bit patterns, every 16-bit value and every tie
// between neighbours, error bounds against FP64, the KRSC layout with its zero padding, and a
// whole MogFace network.
#include "engine/cuda/device_weights.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "engine/cuda/arena.h"
#include "engine/cuda/float16.h"
#include "model/element_type.h"
#include "model/mogface/mogface_network.h"
#include "model/mogface/synthetic_weights.h"
#include "model/network_builder.h"

namespace mogserve::engine::cuda {
namespace {

using ::testing::HasSubstr;

// Decoders independent of the code under test: the checkpoint loaders' (model/element_type.h).
float HalfToFloat(uint16_t bits) {
  return model::ElementToFloat(model::ElementType::kF16, reinterpret_cast<const uint8_t*>(&bits));
}
float Bf16ToFloat(uint16_t bits) {
  return model::ElementToFloat(model::ElementType::kBF16, reinterpret_cast<const uint8_t*>(&bits));
}
float FromBits(uint32_t bits) {
  return std::bit_cast<float>(bits);
}

TEST(Float16Test, HalfKnownBitPatterns) {
  EXPECT_EQ(FloatToHalfBits(1.0f), 0x3C00);
  EXPECT_EQ(FloatToHalfBits(-2.0f), 0xC000);
  EXPECT_EQ(FloatToHalfBits(0.0f), 0x0000);
  EXPECT_EQ(FloatToHalfBits(-0.0f), 0x8000);
  EXPECT_EQ(FloatToHalfBits(65504.0f), 0x7BFF);   // the largest half
  EXPECT_EQ(FloatToHalfBits(65519.99f), 0x7BFF);  // below the midpoint to 2^16
  EXPECT_EQ(FloatToHalfBits(65520.0f), 0x7C00);   // the midpoint: ties to even = inf
  EXPECT_EQ(FloatToHalfBits(-1e6f), 0xFC00);      // overflow
  EXPECT_EQ(FloatToHalfBits(INFINITY), 0x7C00);
  EXPECT_EQ(FloatToHalfBits(-INFINITY), 0xFC00);
  EXPECT_EQ(FloatToHalfBits(std::ldexp(1.0f, -14)), 0x0400);         // the smallest normal
  EXPECT_EQ(FloatToHalfBits(std::ldexp(1.0f, -24)), 0x0001);         // the smallest subnormal
  EXPECT_EQ(FloatToHalfBits(std::ldexp(1.0f, -25)), 0x0000);         // tie: to even (0)
  EXPECT_EQ(FloatToHalfBits(std::ldexp(1.5f, -25)), 0x0001);         // above the tie
  EXPECT_EQ(FloatToHalfBits(std::ldexp(3.0f, -25)), 0x0002);         // tie 1.5 units: to even (2)
  EXPECT_EQ(FloatToHalfBits(std::ldexp(1.0f, -30)), 0x0000);         // underflow
  EXPECT_EQ(FloatToHalfBits(FromBits(0x00000001)), 0x0000);          // a float subnormal
  EXPECT_EQ(FloatToHalfBits(1.0f + std::ldexp(1.0f, -11)), 0x3C00);  // tie: to even
  EXPECT_EQ(FloatToHalfBits(1.0f + std::ldexp(3.0f, -11)), 0x3C02);  // tie: to even (up)
  EXPECT_EQ(FloatToHalfBits(0.1f), 0x2E66);
  // NaN stays NaN (quiet), with its sign; never an infinity.
  const uint16_t nan = FloatToHalfBits(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7C00, 0x7C00);
  EXPECT_NE(nan & 0x03FF, 0);
  const uint16_t snan = FloatToHalfBits(FromBits(0xFF800001));  // signalling, payload in low bits
  EXPECT_EQ(snan & 0xFE00, 0xFE00);
}

TEST(Float16Test, Bf16KnownBitPatterns) {
  EXPECT_EQ(FloatToBf16Bits(1.0f), 0x3F80);
  EXPECT_EQ(FloatToBf16Bits(-0.0f), 0x8000);
  EXPECT_EQ(FloatToBf16Bits(FromBits(0x3F808000)), 0x3F80);  // tie: to even (down)
  EXPECT_EQ(FloatToBf16Bits(FromBits(0x3F818000)), 0x3F82);  // tie: to even (up)
  EXPECT_EQ(FloatToBf16Bits(FromBits(0x3F808001)), 0x3F81);  // above the tie
  EXPECT_EQ(FloatToBf16Bits(FromBits(0x7F7FFFFF)), 0x7F80);  // the largest float: inf
  EXPECT_EQ(FloatToBf16Bits(FromBits(0x7F7F7FFF)), 0x7F7F);  // stays the largest bf16
  EXPECT_EQ(FloatToBf16Bits(INFINITY), 0x7F80);
  EXPECT_EQ(FloatToBf16Bits(-INFINITY), 0xFF80);
  EXPECT_EQ(FloatToBf16Bits(FromBits(0x00008000)), 0x0000);  // subnormal tie: to even
  EXPECT_EQ(FloatToBf16Bits(FromBits(0x00018000)), 0x0002);
  EXPECT_EQ(FloatToBf16Bits(FromBits(0x00000001)), 0x0000);
  // NaN: the all-ones rounding carry must not turn a NaN into an infinity.
  EXPECT_EQ(FloatToBf16Bits(FromBits(0x7F800001)), 0x7FC0);
  EXPECT_EQ(FloatToBf16Bits(FromBits(0x7FFFFFFF)), 0x7FFF);
  EXPECT_EQ(FloatToBf16Bits(FromBits(0xFFC00000)), 0xFFC0);
}

// Every finite 16-bit value converts back to itself, and the midpoint of every pair of
// neighbours goes to the one with an even last bit.
template <typename ToBits, typename ToFloat>
void ExpectExhaustiveRoundTrip(ToBits to_bits, ToFloat to_float, uint16_t inf_bits) {
  for (uint32_t sign : {0u, 0x8000u}) {
    for (uint32_t b = 0; b < inf_bits; ++b) {
      const uint16_t bits = static_cast<uint16_t>(b | sign);
      const float v = to_float(bits);
      ASSERT_EQ(to_bits(v), bits) << std::hex << bits;
      const float next = to_float(static_cast<uint16_t>((b + 1) | sign));
      const float mid = static_cast<float>((static_cast<double>(v) + next) / 2);
      ASSERT_EQ(static_cast<double>(mid), (static_cast<double>(v) + next) / 2);  // exact
      const uint16_t even = (b & 1u) ? static_cast<uint16_t>((b + 1) | sign) : bits;
      ASSERT_EQ(to_bits(mid), even) << "midpoint after " << std::hex << bits;
    }
  }
}

TEST(Float16Test, EveryHalfAndEveryTie) {
  ExpectExhaustiveRoundTrip(FloatToHalfBits, HalfToFloat, 0x7C00);
}

TEST(Float16Test, EveryBf16AndEveryTie) {
  ExpectExhaustiveRoundTrip(FloatToBf16Bits, Bf16ToFloat, 0x7F80);
}

TEST(Float16Test, RandomValuesAreNearestAgainstFp64) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> exponent(-30.0, 17.0);
  for (int i = 0; i < 200000; ++i) {
    const double x = (i % 2 ? -1.0 : 1.0) * std::exp2(exponent(rng));
    const float f = static_cast<float>(x);
    const uint16_t h = FloatToHalfBits(f);
    if (std::abs(f) >= 65520.0f) {
      EXPECT_EQ(h & 0x7FFF, 0x7C00) << f;
    } else {
      // Within half a unit in the last place: 2^-11 relative for normals, 2^-25 absolute below.
      const double err = std::abs(HalfToFloat(h) - static_cast<double>(f));
      EXPECT_LE(err, std::max(std::ldexp(std::abs(double{f}), -11), std::ldexp(1.0, -25))) << f;
      // And no neighbour is nearer.
      for (int d : {-1, 1}) {
        const uint16_t n = static_cast<uint16_t>(h + d);
        if ((n & 0x7FFF) >= 0x7C00 || ((n ^ h) & 0x8000)) continue;
        EXPECT_GE(std::abs(HalfToFloat(n) - static_cast<double>(f)), err) << f;
      }
    }
    const uint16_t b = FloatToBf16Bits(f);
    const double berr = std::abs(Bf16ToFloat(b) - static_cast<double>(f));
    EXPECT_LE(berr, std::ldexp(std::abs(double{f}), -8)) << f;
  }
}

// A stem-like conv (3 -> 5, 3x3) and a depthwise one (16 channels): known values, then KRSC.
struct SmallNet {
  std::shared_ptr<const model::Network> net;
  model::PreparedWeights weights;
};

// groups 0: depthwise (one group per channel).
SmallNet MakeSmallNet(int depthwise_channels = 16, int groups = 0) {
  model::NetworkBuilder b("small");
  const int stem = b.AddTorchConv("stem", 5, 3, 3, true);
  const int dw = b.AddTorchConv("dw", depthwise_channels, depthwise_channels, 3, true, "",
                                groups > 0 ? groups : depthwise_channels);
  const int pw = b.AddTorchConv("pw", depthwise_channels, 5, 1, true);
  model::NetworkBuilder::ConvArgs args;
  args.padding.pad = 1;
  const int x = b.Conv(stem, b.input(), args);
  const int y = b.Conv(dw, b.Conv(pw, x, {}), args);
  b.AddOutputLevel({y, 0, y, 0, 1});
  SmallNet s;
  s.net = b.FinishOrAbort();
  for (const model::ConvDef& d : s.net->convs()) {
    model::PreparedConv c;
    c.weight.shape = {d.out_channels, d.in_channels / d.groups, d.kernel, d.kernel};
    // Value = a code of its OIHW position, so the layout can be read back: distinct integers
    // below 256, exact in BF16 and FP16 too, so every precision checks the permutation.
    EXPECT_LT(c.weight.numel(), 256);
    for (int64_t i = 0; i < c.weight.numel(); ++i) {
      c.weight.values.push_back(1.0f + static_cast<float>(i));
    }
    c.bias.shape = {d.out_channels};
    for (int o = 0; o < d.out_channels; ++o) c.bias.values.push_back(-1.0f - o);
    s.weights.convs.push_back(std::move(c));
  }
  return s;
}

float StoredValue(const std::vector<uint8_t>& bytes, size_t index, StorageType type) {
  if (type == StorageType::kF32) {
    float v;
    std::memcpy(&v, bytes.data() + index * 4, 4);
    return v;
  }
  uint16_t bits;
  std::memcpy(&bits, bytes.data() + index * 2, 2);
  return type == StorageType::kF16 ? HalfToFloat(bits) : Bf16ToFloat(bits);
}

float Rounded(float v, StorageType type) {
  if (type == StorageType::kF16) return HalfToFloat(FloatToHalfBits(v));
  if (type == StorageType::kBf16) return Bf16ToFloat(FloatToBf16Bits(v));
  return v;
}

TEST(DeviceWeightsTest, KrscLayoutWithZeroPadding) {
  const SmallNet s = MakeSmallNet();
  for (Precision p : {Precision::kFp32, Precision::kTf32, Precision::kFp16, Precision::kBf16}) {
    SCOPED_TRACE(PrecisionName(p));
    auto prepared = PrepareDeviceWeights(*s.net, s.weights, p);
    ASSERT_TRUE(prepared.ok()) << prepared.status().ToString();
    const StorageType type = prepared->type;
    EXPECT_EQ(type, StorageTypeOf(p));
    EXPECT_EQ(StorageBytes(type), p == Precision::kFp32 || p == Precision::kTf32 ? 4 : 2);
    int64_t bytes = 0;
    for (size_t i = 0; i < s.net->convs().size(); ++i) {
      const model::ConvDef& d = s.net->convs()[i];
      const DeviceConvWeights& w = prepared->convs[i];
      const std::vector<float>& src = s.weights.convs[i].weight.values;
      SCOPED_TRACE(d.name);
      EXPECT_EQ(w.out_channels % 8, 0);
      EXPECT_EQ(w.in_channels % 8, 0);
      EXPECT_EQ(w.real_out_channels, d.out_channels);
      EXPECT_EQ(w.groups, d.groups);
      const int k = d.kernel, cg = w.in_channels / w.groups, real_cg = d.in_channels / d.groups;
      ASSERT_EQ(w.weight.size(),
                static_cast<size_t>(w.out_channels) * k * k * cg * StorageBytes(type));
      ASSERT_EQ(w.bias.size(), static_cast<size_t>(w.out_channels) * StorageBytes(type));
      bytes += w.weight.size() + w.bias.size();
      for (int o = 0; o < w.out_channels; ++o) {
        const bool real_o = o < d.out_channels;
        EXPECT_EQ(StoredValue(w.bias, o, type), real_o ? Rounded(-1.0f - o, type) : 0.0f);
        for (int r = 0; r < k; ++r) {
          for (int c2 = 0; c2 < k; ++c2) {
            for (int c = 0; c < cg; ++c) {
              const float got =
                  StoredValue(w.weight, ((static_cast<size_t>(o) * k + r) * k + c2) * cg + c, type);
              const float want =
                  real_o && c < real_cg
                      ? Rounded(src[((static_cast<size_t>(o) * real_cg + c) * k + r) * k + c2],
                                type)
                      : 0.0f;
              ASSERT_EQ(got, want) << o << " " << r << " " << c2 << " " << c;
            }
          }
        }
      }
    }
    EXPECT_EQ(prepared->bytes(), bytes);
  }
  // The stem: 3 input channels padded to 8, 5 outputs to 8.
  auto f32 = PrepareDeviceWeights(*s.net, s.weights, Precision::kFp32);
  EXPECT_EQ(f32->convs[0].in_channels, 8);
  EXPECT_EQ(f32->convs[0].out_channels, 8);
  EXPECT_EQ(f32->convs[1].in_channels / f32->convs[1].groups, 1);  // depthwise: [16, 3, 3, 1]
}

TEST(DeviceWeightsTest, DepthwiseChannelsArePaddedToTheDevicesWithZeroKernels) {
  const SmallNet odd = MakeSmallNet(12);  // a depthwise conv over 12 channels
  auto r = PrepareDeviceWeights(*odd.net, odd.weights, Precision::kFp32);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const DeviceConvWeights& dw = r->convs[1];
  EXPECT_EQ(dw.groups, 16);
  EXPECT_EQ(dw.in_channels, 16);
  EXPECT_EQ(dw.out_channels, 16);
  EXPECT_EQ(dw.real_out_channels, 12);
  ASSERT_EQ(dw.weight.size(), 16u * 9 * 4);
  for (size_t i = 0; i < 16 * 9; ++i) {
    // KRSC with one channel per group: channel o's 9 taps, the real ones coded 1 + OIHW index.
    const float want = i < 12 * 9 ? 1.0f + static_cast<float>(i) : 0.0f;
    EXPECT_EQ(StoredValue(dw.weight, i, StorageType::kF32), want) << i;
  }
  for (int o = 12; o < 16; ++o) EXPECT_EQ(StoredValue(dw.bias, o, StorageType::kF32), 0.0f);
}

TEST(DeviceWeightsTest, ErrorsNameTheProblem) {
  const SmallNet odd = MakeSmallNet(12, 6);  // six groups of 2 channels
  auto r = PrepareDeviceWeights(*odd.net, odd.weights, Precision::kFp16);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
  EXPECT_THAT(r.status().message(), HasSubstr("dw"));
  EXPECT_THAT(r.status().message(), HasSubstr("multiples of 8"));

  SmallNet s = MakeSmallNet();
  s.weights.convs[1].bias.values.pop_back();
  r = PrepareDeviceWeights(*s.net, s.weights, Precision::kFp32);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("dw"));
  s.weights.convs.pop_back();
  r = PrepareDeviceWeights(*s.net, s.weights, Precision::kFp32);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("convolutions"));
}

TEST(DeviceWeightsTest, MogFaceR50FromSyntheticWeights) {
  using model::mogface::Variant;
  const auto net = model::mogface::BuildMogFaceNetwork(Variant::kR50);
  auto prepared =
      model::PrepareWeights(*net, model::mogface::SyntheticWeights(Variant::kR50, 1, false), "r50");
  ASSERT_TRUE(prepared.ok()) << prepared.status().ToString();
  for (Precision p : {Precision::kFp16, Precision::kBf16}) {
    SCOPED_TRACE(PrecisionName(p));
    auto d = PrepareDeviceWeights(*net, *prepared, p);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    const double rel = p == Precision::kFp16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
    int64_t params = 0;
    for (size_t i = 0; i < net->convs().size(); ++i) {
      const model::ConvDef& def = net->convs()[i];
      const DeviceConvWeights& w = d->convs[i];
      EXPECT_EQ(w.in_channels, DeviceChannels(def.in_channels)) << def.name;
      EXPECT_EQ(w.out_channels, DeviceChannels(def.out_channels)) << def.name;
      // Every real weight within half an ulp (FP64 comparison), sampled every 7th.
      const std::vector<float>& src = prepared->convs[i].weight.values;
      const int k = def.kernel, cin = def.in_channels, cg = w.in_channels;
      for (size_t j = 0; j < src.size(); j += 7) {
        const size_t c = j / (k * k) % cin, o = j / (k * k * cin), rs = j % (k * k);
        const float got = StoredValue(w.weight, (o * k * k + rs) * cg + c, d->type);
        ASSERT_LE(std::abs(static_cast<double>(got) - src[j]),
                  rel * std::abs(src[j]) + std::ldexp(1.0, -25))
            << def.name << " " << j;
      }
      params += static_cast<int64_t>(src.size());
    }
    EXPECT_GT(params, 1'000'000);
    EXPECT_EQ(d->norms.size(), net->norms().size());
    EXPECT_GE(d->bytes(), params * 2);
  }
}

}  // namespace
}  // namespace mogserve::engine::cuda
