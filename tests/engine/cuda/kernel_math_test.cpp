// The element functions of the CUDA kernels (engine/cuda/kernel_math.h), run on the host against
// the FP64 reference executor (model/reference/) on small random tensors: each test builds a
// tiny network around one op, runs the reference, and recomputes the op in FP32 with the
// functions the kernels use, indexing as the kernels do.
#include "engine/cuda/kernel_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <string>

#include "model/input_normalization.h"
#include "model/mogface/mogface_network.h"
#include "model/network_builder.h"
#include "model/reference/reference_executor.h"
#include "model/ssd_mobilenet_v1.h"

namespace mogserve::engine::cuda {
namespace {

using model::LayerPlan;

// A CHW map of doubles.
struct Map {
  int c = 0, h = 0, w = 0;
  std::vector<double> v;
  double at(int ch, int y, int x) const { return v[(static_cast<size_t>(ch) * h + y) * w + x]; }
};

// Builds and runs a tiny network. Tensors to inspect become output levels with 2 anchors per
// cell reading 8 box channels, so the reference hands back their values exactly.
class TinyNet {
 public:
  TinyNet() : b_("tiny") {}
  model::NetworkBuilder& b() { return b_; }
  // A 1x1 conv of the input to 8 channels with random weights, bias `bias`, stride `stride`.
  int Conv(int x, int stride, model::Activation act = model::Activation::kNone, int def = -1) {
    if (def < 0)
      def = b_.AddTorchConv(std::string("c").append(std::to_string(defs_++)), 8, b_.channels(x), 1,
                            true);
    model::NetworkBuilder::ConvArgs args;
    args.stride = stride;
    args.act = act;
    return b_.Conv(def, x, args);
  }
  void Inspect(int tensor) {
    b_.AddOutputLevel({tensor, 0, tensor, 0, 2});
    inspected_.push_back(tensor);
  }
  // Runs at h x w with random inputs in [-2, 2], weights in [-scale, scale], biases `bias`.
  void Run(int h, int w, double scale, double bias, uint32_t seed) {
    auto net = b_.Finish();
    ASSERT_TRUE(net.ok()) << net.status().ToString();
    auto plan = LayerPlan::Create(*net, h, w);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    plan_.emplace(std::move(plan).value());
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    model::PreparedWeights weights;
    for (const model::ConvDef& d : (*net)->convs()) {
      model::PreparedConv c;
      c.weight.shape = {d.out_channels, d.in_channels / d.groups, d.kernel, d.kernel};
      for (int64_t i = 0; i < c.weight.numel(); ++i) c.weight.values.push_back(scale * u(rng));
      for (int i = 0; i < d.out_channels; ++i) c.bias.values.push_back(bias + 0.1 * u(rng));
      c.bias.shape = {d.out_channels};
      weights.convs.push_back(std::move(c));
    }
    for (const model::NormDef& d : (*net)->norms()) {
      model::PreparedNorm n;
      for (int i = 0; i < d.channels; ++i) {
        n.gamma.values.push_back(1.0 + 0.5 * u(rng));
        n.beta.values.push_back(0.5 * u(rng));
      }
      weights.norms.push_back(std::move(n));
    }
    std::vector<double> input(static_cast<size_t>(3) * h * w);
    for (double& x : input) x = 2.0 * u(rng);
    auto out = model::RunReference(*plan_, weights, input);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    outputs_ = std::move(out).value();
    weights_ = std::move(weights);
  }
  const LayerPlan& plan() const { return *plan_; }
  // The random weights Run() generated and fed to the reference.
  const model::PreparedWeights& weights() const { return weights_; }
  const model::ReferenceOutputs& outputs() const { return outputs_; }
  // The values of inspected tensor number `k`.
  Map Values(int k) const {
    const model::TensorShape& s = plan_->shape(inspected_[k]);
    Map m{8, s.height, s.width, std::vector<double>(static_cast<size_t>(8) * s.height * s.width)};
    const size_t plane = static_cast<size_t>(s.height) * s.width;
    for (size_t p = 0; p < plane; ++p) {
      for (int c = 0; c < 8; ++c) {
        const size_t row = plan_->level_offset(k) + p * 2 + c / 4;
        m.v[c * plane + p] = outputs_.boxes[row * 4 + c % 4];
      }
    }
    return m;
  }

 private:
  model::NetworkBuilder b_;
  int defs_ = 0;
  std::vector<int> inspected_;
  std::optional<LayerPlan> plan_;
  model::ReferenceOutputs outputs_;
  model::PreparedWeights weights_;
};

// FP32 arithmetic on FP64 data: a few ulps of the magnitudes involved.
void ExpectClose(double want, float got, double magnitude, const std::string& where) {
  EXPECT_NEAR(got, want, 4e-6 * std::max(1.0, magnitude)) << where;
}

TEST(KernelMathTest, PreprocessMatchesTheHostNormalisation) {
  std::mt19937 rng(3);
  image::Image picture(10, 7);
  for (uint8_t& v : picture.data) v = static_cast<uint8_t>(rng());
  const int canvas_w = 16, canvas_h = 12;
  for (const auto& net : {model::mogface::BuildMogFaceNetwork(model::mogface::Variant::kR50),
                          model::BuildSsdMobilenetV1Network()}) {
    SCOPED_TRACE(net->name());
    const model::InputNormalization& n = net->normalization();
    const std::vector<double> want = model::NormalizePlanar(n, picture, canvas_w, canvas_h);
    PreprocessParams p;
    for (int c = 0; c < 3; ++c) {
      p.mean[c] = static_cast<float>(n.mean[c]);
      p.divisor[c] = static_cast<float>(n.divisor[c]);
    }
    p.zero_padding = n.zero_padding;
    for (int y = 0; y < canvas_h; ++y) {
      for (int x = 0; x < canvas_w; ++x) {
        const bool inside = x < picture.width && y < picture.height;
        // The canvas holds the picture at the top-left; its padding bytes are arbitrary.
        const uint8_t* rgb = inside ? picture.pixel(x, y) : nullptr;
        for (int c = 0; c < 8; ++c) {
          const uint8_t byte = inside && c < 3 ? rgb[c] : static_cast<uint8_t>(77);
          const float got = PreprocessValue(p, c, byte, inside);
          if (c >= 3) {
            EXPECT_EQ(got, 0.0f);
            continue;
          }
          const double w = want[(static_cast<size_t>(c) * canvas_h + y) * canvas_w + x];
          ExpectClose(w, got, std::abs(w),
                      std::to_string(x) + "," + std::to_string(y) + " c" + std::to_string(c));
        }
      }
    }
  }
}

TEST(KernelMathTest, MaxPoolMatchesTheReference) {
  TinyNet t;
  const int a = t.Conv(t.b().input(), 1);
  const int pooled = t.b().MaxPool(a, 3, 2, 1);
  t.Inspect(a);
  t.Inspect(pooled);
  t.Run(13, 11, 1.0, -0.5, 11);
  const Map in = t.Values(0), want = t.Values(1);
  const int op = static_cast<int>(t.plan().network().ops().size()) - 1;
  const model::ResolvedPadding& pad = t.plan().padding(op);
  for (int c = 0; c < 8; ++c) {
    for (int y = 0; y < want.h; ++y) {
      for (int x = 0; x < want.w; ++x) {
        const PoolWindow w = PoolWindowAt(y, x, in.h, in.w, 3, 2, pad.top, pad.left);
        ASSERT_LT(w.y0, w.y1);
        ASSERT_LT(w.x0, w.x1);
        const float got =
            MaxOverWindow(w, [&](int yy, int xx) { return static_cast<float>(in.at(c, yy, xx)); });
        EXPECT_EQ(got, static_cast<float>(want.at(c, y, x))) << c << " " << y << " " << x;
      }
    }
  }
  // −inf padding: an all-negative window's maximum is negative, not a padded 0.
  const PoolWindow corner = PoolWindowAt(0, 0, 4, 4, 3, 2, 1, 1);
  EXPECT_EQ(corner.y0, 0);
  EXPECT_EQ(corner.y1, 2);
  EXPECT_EQ(MaxOverWindow(corner, [](int, int) { return -3.0f; }), -3.0f);
  EXPECT_EQ(MaxOverWindow(PoolWindow{2, 2, 0, 1}, [](int, int) { return 1.0f; }), -INFINITY);
  // A NaN tap wins wherever it is in the window (first, middle or last).
  for (int nan_at : {0, 4, 8}) {
    EXPECT_TRUE(std::isnan(MaxOverWindow(PoolWindow{0, 3, 0, 3}, [&](int y, int x) {
      return y * 3 + x == nan_at ? std::numeric_limits<float>::quiet_NaN() : 5.0f;
    }))) << nan_at;
  }
}

// Welford statistics split as the GPU splits them: `blocks` contiguous chunks, each strided
// over `threads` per-thread Welford states, merged with Chan's formula (pairwise within a block,
// then the blocks in order). A numerics check of the FP32 Welford + Chan scheme, not a replica
// of the kernel's reduction order (shuffles within 32 lanes, then warps, then splits).
Welford SplitWelfordStatistics(const std::vector<float>& values, int blocks, int threads) {
  Welford total;
  const size_t chunk = (values.size() + blocks - 1) / blocks;
  for (int b = 0; b < blocks; ++b) {
    const size_t begin = b * chunk, end = std::min(values.size(), begin + chunk);
    std::vector<Welford> lanes(threads);
    for (size_t k = begin; k < end; ++k) WelfordAdd(lanes[(k - begin) % threads], values[k]);
    for (int stride = 1; stride < threads; stride *= 2) {  // a tree, like the shuffles
      for (int i = 0; i + stride < threads; i += 2 * stride) {
        lanes[i] = WelfordMerge(lanes[i], lanes[i + stride]);
      }
    }
    total = WelfordMerge(total, lanes[0]);
  }
  return total;
}

// The statistics and the apply of the kernels against the FP64 reference's GroupNorm output,
// with the weights the reference used (random gamma and beta from TinyNet) and the norm
// definition's eps: a different variance or eps convention (unbiased variance, eps outside the
// square root, another eps) changes every output by far more than the tolerance.
TEST(KernelMathTest, GroupNormMatchesTheReference) {
  struct Case {
    int h, w;
    double scale, bias;  // the conv before the norm: weights in [-scale, scale], biases ~bias
    double tolerance;    // FP32 on FP64 data at this mean and spread
  };
  // A large mean next to a small spread (what a one-pass sum of squares gets wrong in FP32);
  // then small groups (528 values) near 0 whose variance (~5e-3) makes eps 0.2 % of it and the
  // biased/unbiased difference 0.2 %: each convention error moves outputs by ~1e-3, far beyond
  // the tolerance of 2e-5.
  for (const Case& k : {Case{40, 37, 0.5, 50.0, 1e-4}, Case{12, 11, 0.05, 0.0, 2e-5}}) {
    SCOPED_TRACE(std::to_string(k.h) + "x" + std::to_string(k.w));
    TinyNet t;
    const int a = t.Conv(t.b().input(), 1);
    const int norm = t.b().AddNormDef({"gn", 8, 2, 1e-5, "gn.weight", "gn.bias"});
    const int y = t.b().GroupNorm(norm, a, model::Activation::kRelu);
    t.Inspect(a);
    t.Inspect(y);
    t.Run(k.h, k.w, k.scale, k.bias, 12);
    const model::NormDef& def = t.plan().network().norms()[norm];
    const std::vector<float>& gamma = t.weights().norms[norm].gamma.values;
    const std::vector<float>& beta = t.weights().norms[norm].beta.values;
    ASSERT_EQ(gamma.size(), 8u);
    const Map in = t.Values(0), want = t.Values(1);
    const size_t plane = static_cast<size_t>(in.h) * in.w;
    int positive = 0;
    for (int g = 0; g < 2; ++g) {
      std::vector<float> values;
      double sum = 0;
      for (int c = 4 * g; c < 4 * g + 4; ++c) {
        for (size_t p = 0; p < plane; ++p) {
          values.push_back(static_cast<float>(in.v[c * plane + p]));
          sum += values.back();
        }
      }
      const double mean = sum / values.size();
      double sq = 0;
      for (float v : values) sq += (v - mean) * (v - mean);
      const double var = sq / values.size();
      for (int blocks : {1, 3, 7}) {
        const Welford w = SplitWelfordStatistics(values, blocks, 64);
        EXPECT_EQ(w.count, static_cast<int>(values.size()));
        EXPECT_NEAR(w.mean, mean, 1e-6 * std::abs(mean));
        EXPECT_NEAR(w.m2 / w.count, var, 1e-4 * var) << blocks << " blocks";
        const float inv_std = InvStd(w, static_cast<float>(def.eps));
        for (int c = 4 * g; c < 4 * g + 4; ++c) {
          for (size_t p = 0; p < plane; ++p) {
            const double expected = want.v[c * plane + p];
            positive += expected > 0;
            const float got = GroupNormApply(static_cast<float>(in.v[c * plane + p]), w.mean,
                                             inv_std, gamma[c], beta[c], kActRelu);
            ASSERT_NEAR(got, expected, k.tolerance) << "channel " << c << ", pixel " << p;
          }
        }
      }
    }
    EXPECT_GT(positive, static_cast<int>(plane));  // the ReLU does not hide the comparison
  }
}

class KernelMathUpsample : public ::testing::TestWithParam<bool> {};

TEST_P(KernelMathUpsample, UpsampleAddMatchesTheReference) {
  const bool nearest = GetParam();
  TinyNet t;
  const int top = t.Conv(t.b().input(), 2);      // 7 x 6
  const int lateral = t.Conv(t.b().input(), 1);  // 13 x 11: the top-left crop of 14 x 12
  const int sum = t.b().UpsampleAdd(top, lateral, "up", nearest);
  t.Inspect(top);
  t.Inspect(lateral);
  t.Inspect(sum);
  t.Run(13, 11, 1.0, 0.0, 13);
  const Map tm = t.Values(0), lm = t.Values(1), want = t.Values(2);
  ASSERT_EQ(tm.h, 7);
  ASSERT_EQ(tm.w, 6);
  for (int c = 0; c < 8; ++c) {
    for (int y = 0; y < want.h; ++y) {
      const UpsampleTap ty = UpsampleAxis(y, tm.h, nearest);
      for (int x = 0; x < want.w; ++x) {
        const UpsampleTap tx = UpsampleAxis(x, tm.w, nearest);
        auto at = [&](int yy, int xx) { return static_cast<float>(tm.at(c, yy, xx)); };
        const float got = static_cast<float>(lm.at(c, y, x)) +
                          Bilerp(at(ty.i0, tx.i0), at(ty.i0, tx.i1), at(ty.i1, tx.i0),
                                 at(ty.i1, tx.i1), ty.frac, tx.frac);
        ExpectClose(want.at(c, y, x), got, 4.0, std::to_string(y) + "," + std::to_string(x));
      }
    }
  }
  // Edges: the first row samples row 0 only; the last source row is clamped.
  EXPECT_EQ(UpsampleAxis(0, 7).i0, 0);
  EXPECT_EQ(UpsampleAxis(0, 7).frac, 0.0f);
  EXPECT_EQ(UpsampleAxis(13, 7).i0, 6);
  EXPECT_EQ(UpsampleAxis(13, 7).i1, 6);
  EXPECT_EQ(UpsampleAxis(3, 7).i0, 1);
  EXPECT_EQ(UpsampleAxis(3, 7).frac, 0.25f);
  // Nearest: dst / 2 rounded down, one tap, clamped.
  EXPECT_EQ(UpsampleAxis(3, 7, true).i0, 1);
  EXPECT_EQ(UpsampleAxis(3, 7, true).i1, 1);
  EXPECT_EQ(UpsampleAxis(3, 7, true).frac, 0.0f);
  EXPECT_EQ(UpsampleAxis(13, 6, true).i0, 5);
}

INSTANTIATE_TEST_SUITE_P(BilinearAndNearest, KernelMathUpsample, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Nearest" : "Bilinear"; });

TEST(KernelMathTest, ActivationsAndSigmoidMatchTheReference) {
  TinyNet t;
  const int def = t.b().AddTorchConv("shared", 8, 3, 1, true);
  const int none = t.Conv(t.b().input(), 1, model::Activation::kNone, def);
  const int relu = t.Conv(t.b().input(), 1, model::Activation::kRelu, def);
  const int relu6 = t.Conv(t.b().input(), 1, model::Activation::kRelu6, def);
  t.Inspect(none);
  t.Inspect(relu);
  t.Inspect(relu6);
  t.Run(9, 8, 4.0, 1.0, 14);  // values well beyond 6 and below 0
  const Map raw = t.Values(0), r = t.Values(1), r6 = t.Values(2);
  int above6 = 0, below0 = 0;
  for (size_t i = 0; i < raw.v.size(); ++i) {
    const float x = static_cast<float>(raw.v[i]);
    above6 += x > 6;
    below0 += x < 0;
    EXPECT_EQ(Activate(x, kActRelu), static_cast<float>(r.v[i]));
    EXPECT_EQ(Activate(x, kActRelu6), static_cast<float>(r6.v[i]));
    EXPECT_EQ(Activate(x, kActNone), x);
  }
  EXPECT_GT(above6, 0);
  EXPECT_GT(below0, 0);
  // The output stage's scores: sigmoid of channels 0 and 1 (2 anchors per cell) of each level.
  const size_t plane = static_cast<size_t>(raw.h) * raw.w;
  for (size_t p = 0; p < plane; ++p) {
    for (int a = 0; a < 2; ++a) {
      const size_t row = AnchorRow(t.plan().level_offset(0), static_cast<int64_t>(p), 2, a);
      const double want = t.outputs().scores[row];
      EXPECT_NEAR(Sigmoid(static_cast<float>(raw.v[a * plane + p])), want, 1e-6 * want + 1e-7);
    }
  }
  EXPECT_EQ(Sigmoid(-200.0f), 0.0f);
  EXPECT_EQ(Sigmoid(200.0f), 1.0f);
  EXPECT_TRUE(std::isnan(Sigmoid(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::isnan(Activate(std::numeric_limits<float>::quiet_NaN(), kActRelu6)));
}

TEST(KernelMathTest, WelfordMergeIsOrderFreeAndAccurate) {
  std::mt19937 rng(16);
  std::normal_distribution<float> d(1000.0f, 0.5f);
  std::vector<float> values(200000);
  double sum = 0;
  for (float& v : values) sum += v = d(rng);
  const double mean = sum / values.size();
  double sq = 0;
  for (float v : values) sq += (v - mean) * (v - mean);
  const double var = sq / values.size();
  for (int blocks : {1, 16, 64}) {
    const Welford w = SplitWelfordStatistics(values, blocks, 256);
    EXPECT_NEAR(w.mean, mean, 1e-6 * mean);
    EXPECT_NEAR(w.m2 / w.count, var, 2e-3 * var) << blocks;
  }
  Welford a, b;
  WelfordAdd(a, 1.0f);
  WelfordAdd(a, 3.0f);
  WelfordAdd(b, 5.0f);
  const Welford ab = WelfordMerge(a, b), ba = WelfordMerge(b, a);
  EXPECT_EQ(ab.count, 3);
  EXPECT_FLOAT_EQ(ab.mean, 3.0f);
  EXPECT_FLOAT_EQ(ab.m2, 8.0f);
  EXPECT_FLOAT_EQ(ba.mean, ab.mean);
  EXPECT_FLOAT_EQ(ba.m2, ab.m2);
  EXPECT_EQ(WelfordMerge(Welford{}, a).m2, a.m2);
}

}  // namespace
}  // namespace mogserve::engine::cuda
