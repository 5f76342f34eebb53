// The CPU backend's execution of layer plans (engine/torch/plan_runner.h) against the FP64
// reference executor on the same plans and prepared weights: every MogFace variant at an even
// and an odd size (the FPN crop), both memory formats, and the real SSD on a real photo (TF SAME
// padding, depthwise groups, ReLU6, fused heads); then batch, layout and BF16 consistency.
#include "engine/torch/plan_runner.h"

#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <cmath>
#include <string>

#include "image/decode.h"
#include "image/resize.h"
#include "model/activation_scales.h"
#include "model/input_normalization.h"
#include "model/mogface/mogface_model.h"
#include "model/mogface/synthetic_weights.h"
#include "model/reference/reference_executor.h"
#include "model/ssd_model.h"
#include "model_test_util.h"
#include "support/cpu_skip.h"

namespace mogserve::engine::torch_backend {
namespace {

using model::LayerPlan;

std::unique_ptr<model::FaceModel> MogFace(model::mogface::Variant variant) {
  auto m =
      model::mogface::MogFaceModel::Create(model::mogface::SyntheticWeights(variant, 1, false));
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m).value() : nullptr;
}

// A real photo scaled to width x height, as the network's planar input (double).
std::vector<double> PhotoInput(const model::FaceModel& m, const std::string& name, int width,
                               int height) {
  auto decoded = image::Decode(testing_util::ReadBytes(testing_util::PhotoPath(name)));
  EXPECT_TRUE(decoded.ok()) << decoded.status().ToString();
  return model::NormalizePlanar(m.network()->normalization(),
                                image::Resize(decoded->image, width, height), width, height);
}

at::Tensor ToTensor(const std::vector<double>& chw, int h, int w, at::ScalarType dtype,
                    bool channels_last) {
  return at::from_blob(const_cast<double*>(chw.data()), {1, 3, h, w}, at::kDouble)
      .to(dtype)
      .contiguous(channels_last ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous);
}

double MaxAbsDiff(const at::Tensor& got, const std::vector<double>& want) {
  const at::Tensor flat = got.to(at::kDouble).contiguous().view({-1});
  EXPECT_EQ(static_cast<size_t>(flat.numel()), want.size());
  if (static_cast<size_t>(flat.numel()) != want.size()) return INFINITY;
  const double* p = flat.data_ptr<double>();
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::abs(p[i] - want[i]));
  return worst;
}

struct Diff {
  double scores = 0, boxes = 0;
};

Diff CompareWithReference(const model::FaceModel& m, const std::vector<double>& input, int h, int w,
                          bool channels_last) {
  c10::InferenceMode guard;
  auto plan = LayerPlan::Create(m.network(), h, w);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  auto ref = model::RunReference(*plan, m.weights(), input);
  EXPECT_TRUE(ref.ok()) << ref.status().ToString();
  const TorchWeights tw = MakeTorchWeights(*m.network(), m.weights(), at::kFloat, channels_last);
  const PlanOutputs out = RunPlan(*plan, tw, ToTensor(input, h, w, at::kFloat, channels_last));
  EXPECT_EQ(out.scores.sizes(), (std::vector<int64_t>{1, plan->anchors()}));
  EXPECT_EQ(out.boxes.sizes(), (std::vector<int64_t>{1, plan->anchors(), 4}));
  return {MaxAbsDiff(out.scores, ref->scores), MaxAbsDiff(out.boxes, ref->boxes)};
}

TEST(PlanRunner, MogFaceVariantsMatchTheFp64ReferenceExecutor) {
  for (auto v : {model::mogface::Variant::kR50, model::mogface::Variant::kE,
                 model::mogface::Variant::kR101}) {
    const auto m = MogFace(v);
    ASSERT_NE(m, nullptr);
    for (auto [h, w] : {std::pair{48, 64}, std::pair{41, 57}}) {
      const std::vector<double> input = PhotoInput(*m, "sample1.jpg", w, h);
      for (bool channels_last : {true, false}) {
        SCOPED_TRACE(m->variant() + " " + std::to_string(h) + "x" + std::to_string(w) +
                     (channels_last ? " channels-last" : " NCHW"));
        const Diff d = CompareWithReference(*m, input, h, w, channels_last);
        std::printf("%s %dx%d %s: max |d score| %.2e, max |d box| %.2e\n", m->variant().c_str(), h,
                    w, channels_last ? "CL" : "NCHW", d.scores, d.boxes);
        // Measured (2 cores, oneDNN 2.6): scores <= 2.3e-7, boxes <= 1.1e-6.
        EXPECT_LE(d.scores, 2e-6);
        EXPECT_LE(d.boxes, 1e-5);
      }
    }
  }
}

TEST(PlanRunner, SsdOnARealPhotoMatchesTheFp64ReferenceExecutor) {
  auto ssd = model::SsdModel::Load(MOGSERVE_TEST_MODEL_DIR);
  ASSERT_TRUE(ssd.ok()) << ssd.status().ToString();
  const std::vector<double> input = PhotoInput(**ssd, "sample2.jpg", 512, 512);
  for (bool channels_last : {true, false}) {
    const Diff d = CompareWithReference(**ssd, input, 512, 512, channels_last);
    std::printf("SSD %s: max |d score| %.2e, max |d box| %.2e\n", channels_last ? "CL" : "NCHW",
                d.scores, d.boxes);
    // Measured: scores <= 8.7e-7, encodings <= 3.1e-5 (real weights, values up to ~10).
    EXPECT_LE(d.scores, 5e-6);
    EXPECT_LE(d.boxes, 2e-4);
  }
}

// The direct oneDNN convolutions (channels-last) against LibTorch's for the same weights: the
// SSD (TF SAME's asymmetric padding, depthwise, ReLU6) and R101 (residual sums, GroupNorm
// between), FP32 and BF16, batch 2; every convolution ran on a oneDNN kernel, none fell back.
TEST(PlanRunner, DirectOneDnnConvolutionsMatchLibTorch) {
  c10::InferenceMode guard;
  auto ssd = model::SsdModel::Load(MOGSERVE_TEST_MODEL_DIR);
  ASSERT_TRUE(ssd.ok()) << ssd.status().ToString();
  const auto r101 = MogFace(model::mogface::Variant::kR101);
  ASSERT_NE(r101, nullptr);
  at::manual_seed(5);
  std::vector<at::ScalarType> dtypes = {at::kFloat};
  if (mogserve::testing::NoBf16Reason().empty()) dtypes.push_back(at::kBFloat16);
  for (const model::FaceModel* m : {static_cast<const model::FaceModel*>(ssd->get()),
                                    static_cast<const model::FaceModel*>(r101.get())}) {
    const int side = m->network()->fixed_input_side() > 0 ? m->network()->fixed_input_side() : 97;
    auto plan = LayerPlan::Create(m->network(), side, side);
    ASSERT_TRUE(plan.ok());
    const at::Tensor x = at::rand({2, 3, side, side}) * 2 - 1;
    for (at::ScalarType dtype : dtypes) {
      SCOPED_TRACE(m->name() + (dtype == at::kFloat ? " fp32" : " bf16"));
      TorchWeights direct = MakeTorchWeights(*m->network(), m->weights(), dtype, true);
      direct.winograd.clear();  // WinogradConvolutions... compares those
      TorchWeights libtorch = direct;
      libtorch.onednn.clear();
      const at::Tensor in = x.to(dtype).contiguous(at::MemoryFormat::ChannelsLast);
      const PlanOutputs a = RunPlan(*plan, direct, in);
      const PlanOutputs b = RunPlan(*plan, libtorch, in);
      const double scores = (a.scores - b.scores).abs().max().item<double>();
      const double boxes = (a.boxes - b.boxes).abs().max().item<double>();
      std::printf("%s %s direct vs LibTorch: max |d score| %.2e, max |d box| %.2e\n",
                  m->name().c_str(), dtype == at::kFloat ? "fp32" : "bf16", scores, boxes);
      // The same oneDNN kernels in both. Measured (Zen 5, native and capped at AVX2): FP32
      // identical; BF16 MogFace 1.2e-3 / 4.3e-3 (the residual sum before the rounding to BF16
      // instead of after), the SSD identical.
      EXPECT_LE(scores, dtype == at::kFloat ? 1e-6 : 3e-3);
      EXPECT_LE(boxes, dtype == at::kFloat ? 1e-5 : 1e-2);
      for (const auto& conv : direct.onednn) {
        ASSERT_NE(conv, nullptr);
        const std::vector<std::string> kernels = conv->Kernels();
        EXPECT_FALSE(kernels.empty());  // it ran
        for (const std::string& kernel : kernels) EXPECT_NE(kernel, "");
      }
    }
  }
}

// INT8 (the SSD's calibration; every INT8 convolution of the SSD has zero points of 0): the
// direct oneDNN convolutions against LibTorch's quantized ones on the same quantisation, on a
// real photo. Both round to the same u8 grid, so a difference is a step or two of a scale.
TEST(PlanRunner, DirectOneDnnInt8ConvolutionsMatchLibTorch) {
  c10::InferenceMode guard;
  auto ssd = model::SsdModel::Load(MOGSERVE_TEST_MODEL_DIR);
  ASSERT_TRUE(ssd.ok()) << ssd.status().ToString();
  const model::Network& net = *(*ssd)->network();
  auto scales = model::ReadActivationScales(MOGSERVE_TEST_SSD_CALIBRATION, net);
  ASSERT_TRUE(scales.ok()) << scales.status().ToString();
  auto plan = LayerPlan::Create((*ssd)->network(), 512, 512);
  ASSERT_TRUE(plan.ok());
  TorchWeights direct = MakeTorchWeights(net, (*ssd)->weights(), at::kFloat, true);
  AddInt8Convs(net, *scales, Int8Choice{}, &direct);
  TorchWeights libtorch = direct;
  int int8_ops = 0;
  for (auto& c : libtorch.int8) {
    if (c == nullptr) continue;
    ++int8_ops;
    ASSERT_NE(c->direct, nullptr);
    auto copy = std::make_shared<Int8Conv>(*c);
    copy->direct = nullptr;
    c = copy;
  }
  EXPECT_GE(int8_ops, 30);  // all but the input convolution and the 6 heads
  const at::Tensor in =
      ToTensor(PhotoInput(**ssd, "sample2.jpg", 512, 512), 512, 512, at::kFloat, true);
  const PlanOutputs a = RunPlan(*plan, direct, in);
  const PlanOutputs b = RunPlan(*plan, libtorch, in);
  const double scores = (a.scores - b.scores).abs().max().item<double>();
  const double boxes = (a.boxes - b.boxes).abs().max().item<double>();
  std::printf("SSD int8 direct vs LibTorch: max |d score| %.3g, max |d box| %.3g\n", scores, boxes);
  // Measured: 0.0102 / 0.31 (AVX-512 VNNI, Zen 5), 0.015 / 0.227 (the same CPU capped at AVX2).
  EXPECT_LE(scores, 0.03);
  EXPECT_LE(boxes, 0.6);
  for (const auto& c : direct.int8) {
    if (c == nullptr) continue;
    const std::vector<std::string> kernels = c->direct->Kernels();
    EXPECT_FALSE(kernels.empty());
    for (const std::string& kernel : kernels) EXPECT_NE(kernel, "");
  }
}

// One Winograd F(4x4, 3x3) convolution against LibTorch's in double precision: channel counts
// off the 64-channel blocks, sizes off the 4x4 tiles (partial edge tiles), symmetric and TF
// SAME's asymmetric padding, batch 2, ReLU / ReLU6, the residual sum in place and not.
TEST(PlanRunner, WinogradConvolutionMatchesLibTorchInDouble) {
  c10::InferenceMode guard;
  at::manual_seed(11);
  struct Case {
    int in, out, h, w;
    model::ResolvedPadding pad;
    model::Activation act;
    bool residual, in_place;
  };
  const Case cases[] = {
      {72, 40, 37, 29, {1, 1, 1, 1}, model::Activation::kNone, false, false},
      {16, 136, 23, 41, {0, 1, 0, 1}, model::Activation::kRelu6, false, false},
      {64, 64, 32, 32, {1, 1, 1, 1}, model::Activation::kRelu, true, true},
      {130, 96, 18, 50, {1, 1, 1, 1}, model::Activation::kRelu, true, false},
      {8, 8, 40, 40, {0, 0, 0, 0}, model::Activation::kNone, false, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::to_string(c.in) + "->" + std::to_string(c.out) + " at " +
                 std::to_string(c.h) + "x" + std::to_string(c.w));
    model::ConvDef def;
    def.in_channels = c.in;
    def.out_channels = c.out;
    def.kernel = 3;
    ASSERT_TRUE(WinogradConv::Eligible(def));
    const at::Tensor weight = at::randn({c.out, c.in, 3, 3}) / std::sqrt(9.0 * c.in);
    const at::Tensor bias = at::randn({c.out}) * 0.1;
    const WinogradConv conv(def, weight, bias);
    model::Op op;
    op.act = c.act;
    op.inputs = c.residual ? std::vector<int>{0, 1} : std::vector<int>{0};
    const at::Tensor x = at::randn({2, c.in, c.h, c.w}).contiguous(at::MemoryFormat::ChannelsLast);
    ASSERT_TRUE(conv.Suits(op, c.pad, x));
    // The reference: the padded input, LibTorch's convolution, all in double.
    const at::Tensor padded =
        at::constant_pad_nd(x.to(at::kDouble), {c.pad.left, c.pad.right, c.pad.top, c.pad.bottom});
    at::Tensor want = at::conv2d(padded, weight.to(at::kDouble), bias.to(at::kDouble));
    at::Tensor residual;
    if (c.residual) {
      residual = at::randn(want.sizes()).contiguous(at::MemoryFormat::ChannelsLast);
      want = want + residual.to(at::kDouble);
    }
    if (c.act == model::Activation::kRelu) want = want.clamp_min(0);
    if (c.act == model::Activation::kRelu6) want = want.clamp(0, 6);
    const at::Tensor residual_copy = c.residual ? residual.clone() : at::Tensor();
    const at::Tensor got = conv.Run(op, c.pad, x, residual, c.in_place);
    ASSERT_EQ(got.sizes(), want.sizes());
    EXPECT_TRUE(got.is_contiguous(at::MemoryFormat::ChannelsLast));
    if (c.residual) {
      // In place: the output is the residual's buffer; otherwise the residual is untouched.
      EXPECT_EQ(got.data_ptr() == residual.data_ptr(), c.in_place);
      if (!c.in_place) {
        EXPECT_TRUE(at::equal(residual, residual_copy));
      }
    }
    const double err = (got.to(at::kDouble) - want).abs().max().item<double>();
    const double scale = want.abs().max().item<double>();
    std::printf("winograd %d->%d %dx%d: max |error| %.2e of max |output| %.2f\n", c.in, c.out, c.h,
                c.w, err, scale);
    // FP32 arithmetic on outputs of ~4-6; F(4,3)'s transforms (factors up to 8) cost about a
    // digit. Measured (Zen 5): 1.0e-5 to 3.6e-5 with the AVX-512 and the AVX2 transforms.
    EXPECT_LE(err, 1e-4 * std::max(1.0, scale));
  }
  // Not for Winograd: strided or dilated convolutions, and maps of too few tiles.
  model::ConvDef def;
  def.in_channels = def.out_channels = 8;
  def.kernel = 3;
  const WinogradConv conv(def, at::randn({8, 8, 3, 3}), at::zeros({8}));
  const at::Tensor x = at::randn({1, 8, 64, 64}).contiguous(at::MemoryFormat::ChannelsLast);
  model::Op op;
  op.inputs = {0};
  EXPECT_TRUE(conv.Suits(op, {1, 1, 1, 1}, x));
  op.stride = 2;
  EXPECT_FALSE(conv.Suits(op, {1, 1, 1, 1}, x));
  op.stride = 1;
  op.dilation = 2;
  EXPECT_FALSE(conv.Suits(op, {2, 2, 2, 2}, x));
  op.dilation = 1;
  const at::Tensor small = at::randn({1, 8, 12, 12}).contiguous(at::MemoryFormat::ChannelsLast);
  EXPECT_FALSE(conv.Suits(op, {1, 1, 1, 1}, small));                   // 9 tiles
  EXPECT_TRUE(conv.Suits(op, {1, 1, 1, 1}, at::cat({small, small})));  // 18 tiles in a batch
  EXPECT_FALSE(conv.Suits(op, {1, 1, 1, 1}, x.contiguous()));          // NCHW
  EXPECT_FALSE(conv.Suits(op, {1, 1, 1, 1}, x.to(at::kBFloat16)));     // not FP32
  model::ConvDef depthwise = def;
  depthwise.groups = 8;
  EXPECT_FALSE(WinogradConv::Eligible(depthwise));
}

// The whole R101 network in FP32 with its 3x3 convolutions through Winograd where they suit
// against the direct kernels alone: batch 2 at 160x224 (the stride-4 maps: 40x56, 140 tiles).
TEST(PlanRunner, WinogradConvolutionsKeepR101Fp32Outputs) {
  c10::InferenceMode guard;
  const auto m = MogFace(model::mogface::Variant::kR101);
  ASSERT_NE(m, nullptr);
  auto plan = LayerPlan::Create(m->network(), 160, 224);
  ASSERT_TRUE(plan.ok());
  at::manual_seed(8);
  const at::Tensor x =
      (at::rand({2, 3, 160, 224}) * 2 - 1).contiguous(at::MemoryFormat::ChannelsLast);
  const TorchWeights winograd = MakeTorchWeights(*m->network(), m->weights(), at::kFloat, true);
  if (winograd.winograd.empty()) GTEST_SKIP() << "MOGSERVE_WINOGRAD=0 or no direct convolutions";
  TorchWeights direct = winograd;
  direct.winograd.clear();
  const PlanOutputs a = RunPlan(*plan, winograd, x);
  const PlanOutputs b = RunPlan(*plan, direct, x);
  const double scores = (a.scores - b.scores).abs().max().item<double>();
  const double boxes = (a.boxes - b.boxes).abs().max().item<double>();
  std::printf("R101 fp32 Winograd vs direct: max |d score| %.2e, max |d box| %.2e\n", scores,
              boxes);
  // Measured (Zen 5; native and capped at AVX2): scores 4.2e-7, boxes 1.6e-6 to 1.9e-6.
  EXPECT_LE(scores, 1e-5);
  EXPECT_LE(boxes, 5e-5);
  EXPECT_GT((a.boxes).abs().max().item<double>(), 0.01);  // not all zeros on both sides
}

// Batch of 2 = two singles; NCHW = channels-last; BF16 close to FP32 (R101, the served model).
TEST(PlanRunner, R101BatchLayoutAndPrecisionConsistency) {
  c10::InferenceMode guard;
  const auto m = MogFace(model::mogface::Variant::kR101);
  ASSERT_NE(m, nullptr);
  auto plan = LayerPlan::Create(m->network(), 65, 97);
  ASSERT_TRUE(plan.ok());
  at::manual_seed(3);
  const at::Tensor x = at::randn({2, 3, 65, 97}) * 0.01;
  auto run = [&](at::ScalarType dtype, bool channels_last, const at::Tensor& in) {
    const TorchWeights w = MakeTorchWeights(*m->network(), m->weights(), dtype, channels_last);
    return RunPlan(*plan, w,
                   in.to(dtype).contiguous(channels_last ? at::MemoryFormat::ChannelsLast
                                                         : at::MemoryFormat::Contiguous));
  };
  auto max_diff = [](const at::Tensor& a, const at::Tensor& b) {
    return (a - b).abs().max().item<double>();
  };
  const PlanOutputs both = run(at::kFloat, true, x);
  EXPECT_GT(both.scores.min().item<float>(), 0.0f);
  EXPECT_LT(both.scores.max().item<float>(), 1.0f);
  EXPECT_TRUE(both.boxes.isfinite().all().item<bool>());
  for (int64_t i = 0; i < 2; ++i) {
    const PlanOutputs one = run(at::kFloat, true, x.narrow(0, i, 1));
    EXPECT_LT(max_diff(one.scores, both.scores.narrow(0, i, 1)), 1e-4);
    EXPECT_LT(max_diff(one.boxes, both.boxes.narrow(0, i, 1)), 1e-4);
  }
  const PlanOutputs plain = run(at::kFloat, false, x);
  EXPECT_LT(max_diff(plain.scores, both.scores), 1e-4);
  EXPECT_LT(max_diff(plain.boxes, both.boxes), 1e-4);
  // BF16 (8-bit mantissa) through ~120 layers.
  MOGSERVE_SKIP_WITHOUT_BF16();
  const PlanOutputs low = run(at::kBFloat16, true, x);
  const double conf_diff = max_diff(low.scores, both.scores);
  const double loc_diff = max_diff(low.boxes, both.boxes);
  std::printf("R101 bf16 vs fp32: max |conf diff| %.4g, max |loc diff| %.4g\n", conf_diff,
              loc_diff);
  EXPECT_LT(conf_diff, 0.05);
  EXPECT_LT(loc_diff, 0.1);
}

}  // namespace
}  // namespace mogserve::engine::torch_backend
