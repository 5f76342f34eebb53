// Tests of ConvLayer: TF "SAME" padding (spec: shipped_face_models.md §1), memory formats,
// ReLU6 and the MAC count, against a reference convolution written here independently.
#include "model/conv_layer.h"

#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <string>
#include <vector>

namespace mogserve::model {
namespace {

// The spec's rule, written out again: out = ceil(in / s), total = max((out-1)*s + k - in, 0),
// floor(total / 2) before, the rest after; then a VALID convolution.
at::Tensor ReferenceSameConv(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                             int stride, int groups) {
  const int64_t k = w.size(2);
  int64_t pads[4];  // left, right, top, bottom
  for (int axis = 0; axis < 2; ++axis) {
    const int64_t in = x.size(3 - axis);  // width first, as constant_pad_nd wants
    const int64_t out = (in + stride - 1) / stride;
    const int64_t total = std::max<int64_t>((out - 1) * stride + k - in, 0);
    pads[2 * axis] = total / 2;
    pads[2 * axis + 1] = total - total / 2;
  }
  const at::Tensor padded = at::constant_pad_nd(x.contiguous(), pads, 0);
  const int64_t strides[2] = {stride, stride};
  const int64_t no_padding[2] = {0, 0};
  const int64_t dilation[2] = {1, 1};
  return at::conv2d(padded, w.contiguous(), b, strides, no_padding, dilation, groups);
}

double MaxAbsDiff(const at::Tensor& a, const at::Tensor& b) {
  return (a.contiguous() - b.contiguous()).abs().max().item<double>();
}

void ComputeSamePadSpecExamples() {
  struct Case {
    int in, kernel, stride, before, after;
  };
  const Case cases[] = {
      {256, 3, 2, 0, 1},                    // k=3 s=2 on an even input: (0, 1)
      {128, 5, 2, 1, 2},                    // k=5 s=2 on 128: out 64, total 63*2+5-128 = 3
      {128, 3, 1, 1, 1},                    // k=3 s=1: total 2
      {7, 3, 1, 1, 1},   {64, 1, 1, 0, 0},  // 1x1: no padding
      {63, 1, 2, 0, 0},                     // 1x1 stride 2 on odd: out 32, total 31*2+1-63 = 0
      {2, 3, 2, 0, 1},                      // out 1, total 0*2+3-2 = 1
      {7, 3, 2, 1, 1},                      // out 4, total 3*2+3-7 = 2
      {1, 3, 2, 1, 1},                      // out 1, total 2
      {1, 3, 1, 1, 1},   {9, 5, 3, 1, 1},   // out 3, total 2*3+5-9 = 2
      {10, 5, 3, 2, 2},                     // out 4, total 3*3+5-10 = 4
      {8, 4, 2, 1, 1},                      // even kernel: out 4, total 3*2+4-8 = 2
  };
  for (const Case& c : cases) {
    const int out = (c.in + c.stride - 1) / c.stride;
    const int total = std::max((out - 1) * c.stride + c.kernel - c.in, 0);
    const SamePad p = ComputeSamePad(c.in, c.kernel, c.stride);
    EXPECT_EQ(p.before, c.before) << "in=" << c.in << " k=" << c.kernel << " s=" << c.stride;
    EXPECT_EQ(p.after, c.after) << "in=" << c.in << " k=" << c.kernel << " s=" << c.stride;
    EXPECT_EQ(p.before + p.after, total);
  }
}

TEST(ConvLayerTest, SamePadForwardMatchesReferenceRelu6ClampsAndMacsFollowTheFormula) {
  {
    SCOPED_TRACE("ComputeSamePad");
    ComputeSamePadSpecExamples();
  }
  at::manual_seed(7);
  struct Case {
    int kernel, stride, in_channels, out_channels, groups, h, w;
  };
  const Case cases[] = {
      {3, 2, 3, 8, 1, 16, 16},  // asymmetric (0, 1) on both axes: the explicit-pad path
      {3, 2, 4, 6, 1, 7, 10},   // odd height (1, 1) and even width (0, 1): mixed
      {3, 1, 5, 4, 1, 9, 6},    // symmetric (1, 1): the conv pads itself
      {1, 1, 8, 16, 1, 5, 5},   // 1x1
      {1, 2, 4, 4, 1, 9, 8},    // 1x1 stride 2
      {5, 2, 3, 4, 1, 12, 11},  // k=5: (1, 2) and (2, 2)
      {3, 2, 6, 6, 6, 12, 13},  // depthwise, asymmetric
      {3, 1, 6, 6, 6, 8, 8},    // depthwise, symmetric
      {3, 2, 2, 3, 1, 1, 2},    // tiny input
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("k=" + std::to_string(c.kernel) + " s=" + std::to_string(c.stride) +
                 " in=" + std::to_string(c.h) + "x" + std::to_string(c.w) +
                 " groups=" + std::to_string(c.groups));
    const at::Tensor w = at::randn({c.out_channels, c.in_channels / c.groups, c.kernel, c.kernel});
    const at::Tensor b = at::randn({c.out_channels});
    const at::Tensor x = at::randn({2, c.in_channels, c.h, c.w});
    const at::Tensor want = ReferenceSameConv(x, w, b, c.stride, c.groups);
    ASSERT_EQ(want.size(2), (c.h + c.stride - 1) / c.stride);
    ASSERT_EQ(want.size(3), (c.w + c.stride - 1) / c.stride);

    for (bool channels_last : {false, true}) {
      const auto format =
          channels_last ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous;
      ConvLayer layer{w.contiguous(format), b, c.stride, c.groups, /*relu6=*/false};
      EXPECT_EQ(layer.kernel(), c.kernel);
      EXPECT_EQ(layer.out_channels(), c.out_channels);
      const at::Tensor got = layer.Forward(x.contiguous(format));
      ASSERT_EQ(got.sizes(), want.sizes()) << "channels_last=" << channels_last;
      EXPECT_LE(MaxAbsDiff(got, want), 1e-4) << "channels_last=" << channels_last;
    }
  }

  // ReLU6 and the MAC count.
  // Large weights so that plenty of outputs fall below 0 and above 6.
  const at::Tensor w = at::randn({8, 4, 3, 3}) * 3;
  const at::Tensor b = at::randn({8});
  const at::Tensor x = at::randn({1, 4, 10, 10});
  const at::Tensor raw = ReferenceSameConv(x, w, b, 2, 1);
  ASSERT_GT((raw < 0).sum().item<int64_t>(), 0);
  ASSERT_GT((raw > 6).sum().item<int64_t>(), 0);
  ConvLayer layer{w.contiguous(at::MemoryFormat::ChannelsLast), b, 2, 1, /*relu6=*/true};
  const at::Tensor y = layer.Forward(x.contiguous(at::MemoryFormat::ChannelsLast));
  EXPECT_GE(y.min().item<float>(), 0.0f);
  EXPECT_LE(y.max().item<float>(), 6.0f);
  EXPECT_EQ(y.max().item<float>(), 6.0f);  // some outputs were clamped to exactly 6
  EXPECT_LE(MaxAbsDiff(y, raw.clamp(0, 6)), 1e-4);

  // MACs: O * (I/groups) * k * k per output pixel, times out_h * out_w = ceil(in / stride).
  int oh = 0, ow = 0;
  EXPECT_EQ(layer.Macs(7, 9, &oh, &ow), int64_t{8} * 4 * 3 * 3 * 4 * 5);  // = 5760
  EXPECT_EQ(oh, 4);
  EXPECT_EQ(ow, 5);
  EXPECT_EQ(layer.Macs(512, 512, &oh, &ow), int64_t{8} * 4 * 9 * 256 * 256);
  EXPECT_EQ(oh, 256);
  // Depthwise 3x3 on 6 channels, stride 1, 10x10: 6 * 1 * 9 * 100.
  ConvLayer dw{at::randn({6, 1, 3, 3}), at::zeros({6}), 1, 6, true};
  EXPECT_EQ(dw.Macs(10, 10, &oh, &ow), 5400);
  EXPECT_EQ(oh, 10);
  EXPECT_EQ(ow, 10);
}

}  // namespace
}  // namespace mogserve::model
