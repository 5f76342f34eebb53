// The FP64 reference executor op by op on tiny networks whose outputs are worked out by hand:
// TF SAME (asymmetric) padding, dilation, groups, residual + ReLU/ReLU6, max-pool with -inf
// padding, GroupNorm, the bilinear x2 upsample-add with its top-left crop, concat, and the output
// stage's layout. The whole networks are checked against the Python reference in tests/parity.
#include "model/reference/reference_executor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "model/network_builder.h"

namespace mogserve::model {
namespace {

// A conv of the given geometry with all-ones weights and zero bias.
int OnesConv(NetworkBuilder& b, PreparedWeights& w, int in, int out, int k, int groups = 1) {
  ConvDef d;
  d.name = "conv" + std::to_string(w.convs.size());
  d.out_channels = out;
  d.in_channels = in;
  d.kernel = k;
  d.groups = groups;
  d.parts = {{KernelLayout::kOihw, d.name, "", out, 0, 1, out}};
  const int index = b.AddConvDef(d);
  PreparedConv c;
  c.weight.shape = {out, in / groups, k, k};
  c.weight.values.assign(static_cast<size_t>(out) * (in / groups) * k * k, 1.0f);
  c.bias.shape = {out};
  c.bias.values.assign(out, 0.0f);
  w.convs.push_back(c);
  return index;
}

std::vector<double> Execute(const std::shared_ptr<const Network>& net, const PreparedWeights& w,
                            int h, int w_px, const std::vector<double>& input,
                            std::vector<double>* boxes = nullptr) {
  auto plan = LayerPlan::Create(net, h, w_px);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  auto out = RunReference(*plan, w, input);
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  if (boxes != nullptr) *boxes = out->boxes;
  return out->scores;
}

double Logit(double p) {
  return std::log(p / (1 - p));
}

// Reads back an output tensor's values through the output stage: scores = sigmoid(channel 0).
void OutputAsScores(NetworkBuilder& b, PreparedWeights& w, int tensor) {
  // A 1x1 identity conv from `tensor`'s first channel gives a 1-channel score map, and the box
  // channels come from four copies of it.
  const int c = b.channels(tensor);
  ConvDef d;
  d.name = "pick";
  d.out_channels = 5;
  d.in_channels = c;
  d.kernel = 1;
  d.parts = {{KernelLayout::kOihw, "pick", "", 5, 0, 1, 5}};
  const int def = b.AddConvDef(d);
  PreparedConv p;
  p.weight.shape = {5, c, 1, 1};
  p.weight.values.assign(static_cast<size_t>(5) * c, 0.0f);
  for (int o = 0; o < 5; ++o) p.weight.values[o * c] = 1.0f;
  p.bias.shape = {5};
  p.bias.values.assign(5, 0.0f);
  w.convs.push_back(p);
  const int out = b.Conv(def, tensor, {});
  b.AddOutputLevel({out, 0, out, 1, 1});
}

std::vector<double> Logits(const std::vector<double>& scores) {
  std::vector<double> out;
  for (double s : scores) out.push_back(Logit(s));
  return out;
}

void ExpectNear(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-9) << "at " << i;
}

TEST(ReferenceExecutor, TfSamePaddingStrideTwoIsAsymmetric) {
  // 3x3 stride 2 on 4x4 ones: pad (0, 1); window sums 9, 6 / 6, 4; ReLU6 caps at 6.
  for (Activation act : {Activation::kNone, Activation::kRelu6}) {
    NetworkBuilder b("same");
    PreparedWeights w;
    NetworkBuilder::ConvArgs args;
    args.stride = 2;
    args.padding.tf_same = true;
    args.act = act;
    const int y = b.Conv(OnesConv(b, w, 3, 1, 3), b.input(), args);
    OutputAsScores(b, w, y);
    const auto logits =
        Logits(Execute(b.FinishOrAbort(), w, 4, 4, std::vector<double>(48, 1.0 / 3)));
    if (act == Activation::kNone) {
      ExpectNear(logits, {9, 6, 6, 4});
    } else {
      ExpectNear(logits, {6, 6, 6, 4});
    }
  }
}

TEST(ReferenceExecutor, DilationGroupsResidualAndRelu) {
  NetworkBuilder b("dilated");
  PreparedWeights w;
  NetworkBuilder::ConvArgs dilated;
  dilated.dilation = 2;
  dilated.padding.pad = 2;
  // Group conv: output 0 sums input channel 0 only, output 1 channel 1; channel 2 is ignored.
  const int grouped = OnesConv(b, w, 2, 2, 3, 2);
  const int first2 = OnesConv(b, w, 3, 2, 1);
  w.convs[first2].weight.values = {1, 0, 0, 0, 1, 0};  // picks channels 0 and 1
  const int x2 = b.Conv(first2, b.input(), {});
  const int d = b.Conv(grouped, x2, dilated);
  // Residual: act(conv(d) + bias + x2) with bias −3 and ReLU.
  const int mix = OnesConv(b, w, 2, 2, 1);
  w.convs[mix].bias.values = {-3, -3};
  NetworkBuilder::ConvArgs res;
  res.residual = x2;
  res.act = Activation::kRelu;
  OutputAsScores(b, w, b.Conv(mix, d, res));
  // 5x5 input: channel 0 = 0.1, channel 1 = 0.2, channel 2 = 100.
  std::vector<double> in(75);
  for (int i = 0; i < 75; ++i) in[i] = i < 25 ? 0.1 : i < 50 ? 0.2 : 100;
  const auto net = b.FinishOrAbort();
  const auto logits = Logits(Execute(net, w, 5, 5, in));
  // Dilated taps at offsets -2, 0, 2: the centre sees 9 of them, a corner 4, an edge middle 6.
  // mix = 0.1·taps + 0.2·taps = 0.3·taps; out = relu(0.3·taps − 3 + 0.1).
  ASSERT_EQ(logits.size(), 25u);
  EXPECT_NEAR(logits[12], 0.0, 1e-9);  // 2.7 − 2.9 → 0
  EXPECT_NEAR(logits[0], 0.0, 1e-9);   // corner 1.2 − 2.9 → 0
  w.convs[mix].bias.values = {0, 0};
  const auto again = Logits(Execute(net, w, 5, 5, in));
  EXPECT_NEAR(again[12], 2.7 + 0.1, 1e-9);
  EXPECT_NEAR(again[0], 1.2 + 0.1, 1e-9);
  EXPECT_NEAR(again[2], 1.8 + 0.1, 1e-9);  // top edge middle: 2 x 3 taps
}

TEST(ReferenceExecutor, MaxPoolPadsWithMinusInfinity) {
  NetworkBuilder b("pool");
  PreparedWeights w;
  OutputAsScores(b, w, b.MaxPool(b.input(), 3, 2, 1));
  std::vector<double> in(48);
  for (int i = 0; i < 16; ++i) in[i] = i - 20.0;  // all negative: padding must not win
  const auto logits = Logits(Execute(b.FinishOrAbort(), w, 4, 4, in));
  ExpectNear(logits, {5 - 20.0, 7 - 20.0, 13 - 20.0, 15 - 20.0});
}

TEST(ReferenceExecutor, GroupNormUsesEachGroupsStatistics) {
  NetworkBuilder b("gn");
  PreparedWeights w;
  const int widen = OnesConv(b, w, 3, 4, 1);
  // Channels: 0 = x0, 1 = 3·x0, 2 = x1, 3 = −x1 (groups {0,1}, {2,3}).
  w.convs[widen].weight.values = {1, 0, 0, 3, 0, 0, 0, 1, 0, 0, -1, 0};
  const int norm = b.AddNormDef({"gn", 4, 2, 1e-5, "g", "b"});
  PreparedNorm n;
  n.gamma = {{4}, {2, 2, 1, 1}};
  n.beta = {{4}, {1, 1, 0, 0}};
  w.norms.push_back(n);
  const int y = b.GroupNorm(norm, b.Conv(widen, b.input(), {}), Activation::kRelu);
  OutputAsScores(b, w, y);
  // 1x2 input: x0 = (1, 3), x1 = (2, 2).
  const std::vector<double> in = {1, 3, 2, 2, 0, 0};
  const auto logits = Logits(Execute(b.FinishOrAbort(), w, 1, 2, in));
  // Group 0 values {1, 3, 3, 9}: mean 4, var 9 → channel 0 = ((1, 3) − 4) / 3 · 2 + 1.
  const double s = std::sqrt(9 + 1e-5);
  ExpectNear(logits, {std::max(0.0, (1 - 4) / s * 2 + 1), std::max(0.0, (3 - 4) / s * 2 + 1)});
}

TEST(ReferenceExecutor, UpsampleAddCropsTheDoubledMapAndConcatKeepsOrder) {
  NetworkBuilder b("up");
  PreparedWeights w;
  // lateral: the input's channel 1 (2 x 3); top: a 2x2 stride-2 SAME conv reading tap (0, 0)
  // of channel 0 (1 x 2).
  NetworkBuilder::ConvArgs pick;
  const int lat_conv = OnesConv(b, w, 3, 1, 1);
  w.convs[lat_conv].weight.values = {0, 1, 0};
  const int lateral = b.Conv(lat_conv, b.input(), pick);  // 2 x 3
  const int top_conv = OnesConv(b, w, 3, 1, 2);
  w.convs[top_conv].weight.values.assign(12, 0.0f);
  w.convs[top_conv].weight.values[0] = 1;  // channel 0, tap (0, 0)
  NetworkBuilder::ConvArgs down;
  down.stride = 2;
  down.padding.tf_same = true;
  const int top = b.Conv(top_conv, b.input(), down);  // 1 x 2
  const int sum = b.UpsampleAdd(top, lateral, "t");
  OutputAsScores(b, w, b.Concat({sum, lateral}));
  // 2 x 3 input: channel 0 = [[0, 9, 4], [9, 9, 9]] → top = [0, 4]; channel 1 = 10 + index.
  const std::vector<double> in = {0, 9, 4, 9, 9, 9, 10, 11, 12, 13, 14, 15, 0, 0, 0, 0, 0, 0};
  const auto logits = Logits(Execute(b.FinishOrAbort(), w, 2, 3, in));
  // Bilinear x2 of [0, 4] along x: 0, 1, 3, (4 cropped); both rows alike.
  ExpectNear(logits, {10 + 0, 11 + 1, 12 + 3, 13 + 0, 14 + 1, 15 + 3});
}

TEST(ReferenceExecutor, OutputStageInterleavesAnchorsAndRejectsWrongInputs) {
  // Two anchors per cell from one 10-channel map: boxes in channels 0-7, logits in 8-9.
  NetworkBuilder b("out");
  PreparedWeights w;
  const int head = OnesConv(b, w, 3, 10, 1);
  std::vector<float>& k = w.convs[head].weight.values;
  k.assign(30, 0.0f);
  for (int o = 0; o < 10; ++o) k[o * 3] = static_cast<float>(o);  // output o = o · x0
  const int y = b.Conv(head, b.input(), {});
  b.AddOutputLevel({y, 8, y, 0, 2});
  const auto net = b.FinishOrAbort();
  std::vector<double> boxes;
  // 1 x 2 input, x0 = (0.1, 0.2).
  const auto scores = Execute(net, w, 1, 2, {0.1, 0.2, 0, 0, 0, 0}, &boxes);
  ExpectNear(Logits(scores), {0.8, 0.9, 1.6, 1.8});  // anchor = cell · 2 + a
  ASSERT_EQ(boxes.size(), 16u);
  ExpectNear({boxes[4], boxes[5], boxes[8]}, {0.4, 0.5, 0.0});  // anchor 1 = channels 4-7
  auto plan = LayerPlan::Create(net, 1, 2);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(RunReference(*plan, w, std::vector<double>(5)).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(ReferenceExecutor, FixedSidesPadChannelsAndRawOutputs) {
  // A 1x1 sum of the three channels with fixed sides (1 row on top, 2 columns on the right),
  // then 3 channels by zero padding, handed back raw as [H, W, C]; and a max-pool 2x2 stride 2
  // with fixed sides (0 top, 1 left) as a second raw output.
  NetworkBuilder b("raw");
  PreparedWeights w;
  NetworkBuilder::ConvArgs args;
  args.padding = Padding::Sides(1, 0, 0, 2);
  const int sum = b.Conv(OnesConv(b, w, 3, 1, 1), b.input(), args);  // 1 x 3 x 4
  const int padded = b.PadChannels(sum, 3, "pad");
  const int pooled = b.MaxPool(sum, 2, 2, Padding::Sides(0, 1, 0, 0));  // 1 x 1 x 2
  b.AddRawOutput(padded);
  b.AddRawOutput(pooled);
  const auto net = b.FinishOrAbort();
  auto plan = LayerPlan::Create(net, 2, 2);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->shape(padded).channels, 3);
  EXPECT_EQ(plan->shape(padded).height, 3);
  EXPECT_EQ(plan->shape(padded).width, 4);
  ASSERT_EQ(plan->raw_floats(), 3 * 4 * 3 + 2);
  EXPECT_EQ(plan->raw_offset(1), 36);
  // 2 x 2 input, channel sums [[1, 2], [3, 4]].
  const std::vector<double> in = {1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 0, 0};
  auto out = RunReference(*plan, w, in);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  std::vector<double> want(38, 0.0);
  // Row 0 is padding; rows 1-2 hold the sums in columns 0-1, channel 0 only.
  want[(1 * 4 + 0) * 3] = 1;
  want[(1 * 4 + 1) * 3] = 2;
  want[(2 * 4 + 0) * 3] = 3;
  want[(2 * 4 + 1) * 3] = 4;
  // The pool over the 3 x 4 sums padded by a column of -inf on the left: windows (rows 0-1,
  // columns -1..0) = max(0, 1) and (rows 0-1, columns 1-2) = max(0, 0, 2, 0).
  want[36] = 1;
  want[37] = 2;
  ExpectNear(out->raw, want);
}

}  // namespace
}  // namespace mogserve::model
