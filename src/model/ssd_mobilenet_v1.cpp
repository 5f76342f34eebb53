#include "model/ssd_mobilenet_v1.h"

#include <string>

#include "model/network_builder.h"
#include "model/ssd_box_coder.h"

namespace mogserve::model {
namespace {

using ConvArgs = NetworkBuilder::ConvArgs;

constexpr double kBatchNormEpsilon = 0.0010000000474974513;
constexpr int kLevels = 6;
constexpr int kAnchorsPerCell[kLevels] = {3, 6, 6, 6, 6, 6};

ConvArgs Same(int stride, Activation act) {
  ConvArgs a;
  a.stride = stride;
  a.padding.tf_same = true;
  a.act = act;
  return a;
}

// A TF conv `prefix`/weights [k, k, in, out] with its folded bias `prefix`/convolution_bn_offset.
int AddTfConv(NetworkBuilder& b, const std::string& prefix, int k, int in, int out) {
  ConvDef d;
  d.name = prefix;
  d.out_channels = out;
  d.in_channels = in;
  d.kernel = k;
  d.parts.push_back({KernelLayout::kTfHwio, prefix + "/weights", prefix + "/convolution_bn_offset",
                     out, 0, 1, out});
  return b.AddConvDef(std::move(d));
}

// Depthwise 3x3 [3, 3, C, 1] followed by its BatchNorm, folded.
int AddDepthwise(NetworkBuilder& b, int index, int channels) {
  const std::string p = "MobilenetV1/Conv2d_" + std::to_string(index) + "_depthwise/";
  ConvDef d;
  d.name = p + "depthwise_weights";
  d.out_channels = d.in_channels = d.groups = channels;
  d.kernel = 3;
  d.parts.push_back(
      {KernelLayout::kTfDepthwise, p + "depthwise_weights", "", channels, 0, 1, channels});
  d.batch_norm = BatchNormKeys{p + "BatchNorm/gamma",
                               p + "BatchNorm/beta",
                               p + "BatchNorm/moving_mean",
                               p + "BatchNorm/moving_variance",
                               "",
                               kBatchNormEpsilon};
  return b.AddConvDef(std::move(d));
}

// One level's box head and the face column of its class head (channel a·3 + 1 of anchor a;
// 0 is background, 2 unused), fused into one 1x1 conv.
int AddHead(NetworkBuilder& b, int level, int in, int anchors) {
  const std::string p = "Prediction/BoxPredictor_" + std::to_string(level) + "/";
  ConvDef d;
  d.name = p + "fused";
  d.out_channels = anchors * 5;
  d.in_channels = in;
  d.kernel = 1;
  d.parts.push_back({KernelLayout::kTfHwio, p + "BoxEncodingPredictor/weights",
                     p + "BoxEncodingPredictor/biases", anchors * 4, 0, 1, anchors * 4});
  d.parts.push_back({KernelLayout::kTfHwio, p + "ClassPredictor/weights",
                     p + "ClassPredictor/biases", anchors * 3, 1, 3, anchors});
  return b.AddConvDef(std::move(d));
}

// conv_0 and the 13 depthwise + pointwise pairs; returns F0 (pointwise 11) and F1 (13).
std::pair<int, int> AddBackbone(NetworkBuilder& b) {
  struct Block {
    int in, out, stride;
  };
  static constexpr Block kBlocks[13] = {
      {32, 64, 1},   {64, 128, 2},   {128, 128, 1},  {128, 256, 2}, {256, 256, 1},
      {256, 512, 2}, {512, 512, 1},  {512, 512, 1},  {512, 512, 1}, {512, 512, 1},
      {512, 512, 1}, {512, 1024, 2}, {1024, 1024, 1}};
  const int conv0 = AddTfConv(b, "MobilenetV1/Conv2d_0_pointwise", 3, 3, 32);
  int x = b.Conv(conv0, b.input(), Same(2, Activation::kRelu6));
  int f0 = -1;
  for (int i = 1; i <= 13; ++i) {
    const Block& k = kBlocks[i - 1];
    const int dw = AddDepthwise(b, i, k.in);
    const int pw =
        AddTfConv(b, "MobilenetV1/Conv2d_" + std::to_string(i) + "_pointwise", 1, k.in, k.out);
    x = b.Conv(dw, x, Same(k.stride, Activation::kRelu6));
    x = b.Conv(pw, x, Same(1, Activation::kRelu6));
    if (i == 11) f0 = x;
  }
  return {f0, x};
}

}  // namespace

std::shared_ptr<const Network> BuildSsdMobilenetV1Network() {
  NetworkBuilder b("SSD-MobileNetV1");
  InputNormalization n;  // v / 127.5 − 1: [-1, 1]
  for (int c = 0; c < 3; ++c) n.mean[c] = n.divisor[c] = 127.5;
  b.SetNormalization(n);
  b.SetFixedInputSide(kSsdInputSize);
  b.AllowUnlistedKeys();  // the manifest also holds TF graph constants
  const auto [f0, f1] = AddBackbone(b);
  int features[kLevels] = {f0, f1};
  // Extra layers: (1x1 in→mid) then (3x3 s2 mid→out) four times, giving F2..F5.
  static constexpr int kExtras[4][3] = {
      {1024, 256, 512}, {512, 128, 256}, {256, 128, 256}, {256, 64, 128}};
  int x = f1;
  for (int j = 0; j < 4; ++j) {
    const std::string p = "Prediction/Conv2d_";
    const int reduce =
        AddTfConv(b, p + std::to_string(2 * j) + "_pointwise", 1, kExtras[j][0], kExtras[j][1]);
    const int conv =
        AddTfConv(b, p + std::to_string(2 * j + 1) + "_pointwise", 3, kExtras[j][1], kExtras[j][2]);
    x = b.Conv(reduce, x, Same(1, Activation::kRelu6));
    x = b.Conv(conv, x, Same(2, Activation::kRelu6));
    features[2 + j] = x;
  }
  for (int level = 0; level < kLevels; ++level) {
    const int a = kAnchorsPerCell[level];
    const int head = AddHead(b, level, b.channels(features[level]), a);
    const int out = b.Conv(head, features[level], Same(1, Activation::kNone));
    b.AddOutputLevel({out, a * 4, out, 0, a});
  }
  b.AddOtherKey({kSsdAnchorsKey, {1, kSsdAnchorCount, 4}, true});
  return b.FinishOrAbort();
}

}  // namespace mogserve::model
