// Tests of the MogFace network on synthetic weights: strict loading, output layout for every
// variant at even and odd sizes, BN folding, the LFPN upsampling, batch / memory-format / BF16
// consistency and the MAC counts of spec §8.
#include "model/mogface/mogface_net.h"

#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <chrono>
#include <cmath>
#include <string>

#include "model/mogface/conv2d.h"
#include "model/mogface/synthetic_weights.h"

namespace mogserve::model::mogface {
namespace {

double MaxAbsDiff(const at::Tensor& a, const at::Tensor& b) {
  return (a - b).abs().max().item<double>();
}

// A deterministic input in the pre-processed range (about +-0.01, spec §6a).
at::Tensor Input(int64_t n, int64_t h, int64_t w, uint64_t seed = 3) {
  at::manual_seed(seed);
  return at::randn({n, 3, h, w}, at::kFloat) * 0.01;
}

int64_t AnchorCount(int64_t h, int64_t w) {
  int64_t n = 0;
  for (const Size2& s : MogFaceNet::LevelSizes(h, w)) n += s.h * s.w;
  return n;
}

std::unique_ptr<MogFaceNet> Create(const HostTensorMap& w, MogFaceOptions options = {}) {
  StatusOr<std::unique_ptr<MogFaceNet>> net = MogFaceNet::Create(w, options);
  EXPECT_TRUE(net.ok()) << net.status().ToString();
  return net.ok() ? std::move(net).value() : nullptr;
}

void ExpectValidOutputs(const MogFaceOutputs& out, int64_t n, int64_t h, int64_t w) {
  const int64_t sigma = AnchorCount(h, w);
  ASSERT_EQ(out.conf.sizes(), (std::vector<int64_t>{n, sigma, 1})) << h << "x" << w;
  ASSERT_EQ(out.loc.sizes(), (std::vector<int64_t>{n, sigma, 4}));
  EXPECT_EQ(out.conf.scalar_type(), at::kFloat);
  EXPECT_EQ(out.loc.scalar_type(), at::kFloat);
  EXPECT_GT(out.conf.min().item<float>(), 0.0f);
  EXPECT_LT(out.conf.max().item<float>(), 1.0f);
  EXPECT_TRUE(out.loc.isfinite().all().item<bool>());
}

TEST(MogFaceNet, StrictLoadingAndHelpers) {
  // Σ at 640x640 (spec §4e) and the odd-size grid rule n -> (n+1)//2.
  EXPECT_EQ(AnchorCount(640, 640), 34125);
  const auto odd = MogFaceNet::LevelSizes(65, 97);
  EXPECT_EQ(odd[0].h, 17);
  EXPECT_EQ(odd[0].w, 25);
  EXPECT_EQ(odd[5].h, 1);
  EXPECT_EQ(odd[5].w, 1);

  const HostTensorMap good = SyntheticWeights(Variant::kR50, 11, false);
  struct Case {
    const char* what;
    HostTensorMap weights;
    std::string key;
  };
  std::vector<Case> cases;
  cases.push_back({"missing", good, "backbone.layer2.1.bn2.running_var"});
  cases.back().weights.erase(cases.back().key);
  cases.push_back({"extra", good, "pred_net.pred_cls.6.weight"});
  cases.back().weights[cases.back().key] = HostTensor{{1, 256, 3, 3}, std::vector<float>(2304)};
  cases.push_back({"shape", good, "fpn.ff_c4_c3.main_conv.weight"});
  cases.back().weights[cases.back().key] = HostTensor{{256, 512, 3, 1}, std::vector<float>(393216)};
  for (const Case& c : cases) {
    StatusOr<std::unique_ptr<MogFaceNet>> net = MogFaceNet::Create(c.weights, {});
    ASSERT_FALSE(net.ok()) << c.what;
    EXPECT_EQ(net.status().code(), StatusCode::kInvalidData) << c.what;
    EXPECT_NE(net.status().message().find(c.key), std::string::npos) << net.status().message();
  }
  // DataParallel `module.` prefixes load and give the same outputs.
  HostTensorMap prefixed;
  for (const auto& [name, t] : good) prefixed["module." + name] = t;
  std::unique_ptr<MogFaceNet> plain = Create(good);
  std::unique_ptr<MogFaceNet> stripped = Create(prefixed);
  ASSERT_TRUE(plain && stripped);
  EXPECT_EQ(stripped->variant(), Variant::kR50);
  const at::Tensor x = Input(1, 40, 56);
  EXPECT_EQ(MaxAbsDiff(plain->Forward(x)->conf, stripped->Forward(x)->conf), 0.0);
  // Bad inputs are errors, not exceptions.
  EXPECT_EQ(plain->Forward(at::zeros({1, 4, 8, 8})).status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(plain->Forward(at::zeros({1, 3, 8, 8}, at::kDouble)).ok());
  // HCAM is refused with a reason.
  HostTensorMap hcam = good;
  hcam["pred_net_1.pred_cls.0.weight"] = HostTensor{{1, 256, 3, 3}, std::vector<float>(2304)};
  EXPECT_EQ(MogFaceNet::Create(hcam, {}).status().code(), StatusCode::kUnsupported);
}

TEST(MogFaceNet, BatchNormFoldingAndUpsampling) {
  c10::InferenceMode guard;
  at::manual_seed(5);
  // conv(bias) + BN against the folded conv, in both memory formats.
  const at::Tensor x = at::randn({2, 8, 9, 7});
  Conv2d conv{at::randn({6, 8, 3, 3}) * 0.2, at::randn({6}), 2, 1, 1};
  const at::Tensor gamma = at::rand({6}) + 0.5, beta = at::randn({6}) * 0.1;
  const at::Tensor mean = at::randn({6}) * 0.1, var = at::rand({6}) + 0.5;
  const at::Tensor reference =
      at::batch_norm(at::conv2d(x, conv.weight, conv.bias, {2, 2}, {1, 1}), gamma, beta, mean, var,
                     /*training=*/false, 0.1, 1e-5, /*cudnn_enabled=*/false);
  FoldBatchNorm(conv, gamma, beta, mean, var, 1e-5);
  for (bool channels_last : {false, true}) {
    Conv2d c = conv;
    c.Prepare(at::kFloat, channels_last);
    EXPECT_LT(MaxAbsDiff(c.Forward(x), reference), 1e-5) << channels_last;
  }
  // Dilation 2, padding 2 keeps the size (the SSH convs).
  Conv2d dilated{at::randn({4, 8, 3, 3}), at::zeros({4}), 1, 2, 2};
  dilated.Prepare(at::kFloat, true);
  EXPECT_EQ(dilated.Forward(x).sizes(), (std::vector<int64_t>{2, 4, 9, 7}));
  EXPECT_LT(MaxAbsDiff(dilated.Forward(x),
                       at::conv2d(x, dilated.weight.contiguous(), dilated.bias, 1, 2, 2)),
            1e-4);

  // Bilinear x2, half-pixel, edge-clamped, cropped to the odd lateral size: written out.
  const at::Tensor top = at::randn({1, 2, 3, 4});
  const at::Tensor lateral = at::randn({1, 2, 5, 7});
  const at::Tensor got = UpsampleAdd(top, lateral);
  ASSERT_EQ(got.sizes(), lateral.sizes());
  auto src = [](int64_t dst, int64_t in, int64_t* i0, int64_t* i1, double* frac) {
    const double s = std::max(0.0, (dst + 0.5) / 2 - 0.5);
    *i0 = std::min<int64_t>(static_cast<int64_t>(s), in - 1);
    *i1 = std::min<int64_t>(*i0 + 1, in - 1);
    *frac = s - *i0;
  };
  const auto t = top.accessor<float, 4>();
  double worst = 0;
  for (int64_t ch = 0; ch < 2; ++ch) {
    for (int64_t y = 0; y < 5; ++y) {
      for (int64_t xx = 0; xx < 7; ++xx) {
        int64_t y0, y1, x0, x1;
        double fy, fx;
        src(y, 3, &y0, &y1, &fy);
        src(xx, 4, &x0, &x1, &fx);
        const double v = (1 - fy) * ((1 - fx) * t[0][ch][y0][x0] + fx * t[0][ch][y0][x1]) +
                         fy * ((1 - fx) * t[0][ch][y1][x0] + fx * t[0][ch][y1][x1]);
        const double want = v + lateral[0][ch][y][xx].item<double>();
        worst = std::max(worst, std::abs(want - got[0][ch][y][xx].item<double>()));
      }
    }
  }
  EXPECT_LT(worst, 1e-5);
}

TEST(MogFaceNet, ShapesAndMacsForEveryVariant) {
  // Spec §8 effective GMAC at 640x640, and at 640x480 / 1024x1024.
  struct Expect {
    Variant variant;
    double gmac_640, gmac_640x480, gmac_1024;
  };
  for (const Expect& e :
       {Expect{Variant::kR101, 779.3, 584.6, 1994.9}, Expect{Variant::kE, 320.5, 240.5, 820.5},
        Expect{Variant::kR50, 59.2, 44.4, 151.6}}) {
    SCOPED_TRACE(VariantName(e.variant));
    std::unique_ptr<MogFaceNet> net = Create(SyntheticWeights(e.variant, 1, true));
    ASSERT_TRUE(net);
    EXPECT_EQ(net->variant(), e.variant);
    EXPECT_NEAR(net->MacsPerImage(640, 640) / 1e9, e.gmac_640, e.gmac_640 * 0.01);
    EXPECT_NEAR(net->MacsPerImage(480, 640) / 1e9, e.gmac_640x480, e.gmac_640x480 * 0.01);
    EXPECT_NEAR(net->MacsPerImage(1024, 1024) / 1e9, e.gmac_1024, e.gmac_1024 * 0.01);
    for (auto [h, w] : {std::pair{64, 96}, std::pair{65, 97}}) {
      StatusOr<MogFaceOutputs> out = net->Forward(Input(1, h, w));
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      ExpectValidOutputs(*out, 1, h, w);
    }
    if (e.variant == Variant::kR50) {
      // Σ at 640x640 from a real forward pass (the cheapest variant, ~59 GMAC).
      StatusOr<MogFaceOutputs> out = net->Forward(Input(1, 640, 640));
      ASSERT_TRUE(out.ok());
      EXPECT_EQ(out->conf.size(1), 34125);
    }
  }
}

// Batch of 2 = two singles; NCHW = channels-last; BF16 close to FP32 (R101, the served model).
TEST(MogFaceNet, R101BatchLayoutAndPrecisionConsistency) {
  const HostTensorMap weights = SyntheticWeights(Variant::kR101, 1, false);
  std::unique_ptr<MogFaceNet> cl = Create(weights);
  std::unique_ptr<MogFaceNet> nchw = Create(weights, {.channels_last = false});
  std::unique_ptr<MogFaceNet> bf16 = Create(weights, {.dtype = at::kBFloat16});
  ASSERT_TRUE(cl && nchw && bf16);
  const at::Tensor x = Input(2, 65, 97);
  const MogFaceOutputs both = *cl->Forward(x);
  ExpectValidOutputs(both, 2, 65, 97);
  for (int64_t i = 0; i < 2; ++i) {
    const MogFaceOutputs one = *cl->Forward(x.narrow(0, i, 1));
    EXPECT_LT(MaxAbsDiff(one.conf, both.conf.narrow(0, i, 1)), 1e-4);
    EXPECT_LT(MaxAbsDiff(one.loc, both.loc.narrow(0, i, 1)), 1e-4);
  }
  const MogFaceOutputs plain = *nchw->Forward(x);
  EXPECT_LT(MaxAbsDiff(plain.conf, both.conf), 1e-4);
  EXPECT_LT(MaxAbsDiff(plain.loc, both.loc), 1e-4);
  // BF16 (8-bit mantissa) through ~120 layers: measured max |Δ| ~ see report; bounded here.
  const MogFaceOutputs low = *bf16->Forward(x);
  ExpectValidOutputs(low, 2, 65, 97);
  const double conf_diff = MaxAbsDiff(low.conf, both.conf);
  const double loc_diff = MaxAbsDiff(low.loc, both.loc);
  std::printf("R101 bf16 vs fp32: max |conf diff| %.4g, max |loc diff| %.4g (loc range %.3g)\n",
              conf_diff, loc_diff, both.loc.abs().max().item<double>());
  EXPECT_LT(conf_diff, 0.05);
  EXPECT_LT(loc_diff, 0.1);
}

}  // namespace
}  // namespace mogserve::model::mogface
