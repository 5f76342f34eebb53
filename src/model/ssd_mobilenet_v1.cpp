#include "model/ssd_mobilenet_v1.h"

#include <cmath>
#include <string>

namespace mogserve::model {
namespace {

constexpr double kBatchNormEpsilon = 0.0010000000474974513;
constexpr int kLevels = 6;
constexpr int kAnchorsPerCell[kLevels] = {3, 6, 6, 6, 6, 6};
// Backbone layers whose outputs feed the first two prediction levels (pointwise 11 and 13).
constexpr int kFeature0Layer = 22;
constexpr int kFeature1Layer = 26;

// Looks up a tensor and checks its TF shape, so a wrong file fails with the name that is off.
class WeightReader {
 public:
  explicit WeightReader(const TfjsWeights& w) : weights_(w) {}

  StatusOr<at::Tensor> Get(const std::string& name, std::vector<int64_t> shape) const {
    auto it = weights_.find(name);
    if (it == weights_.end()) return InvalidData("SSD weights lack tensor '" + name + "'");
    if (it->second.shape != shape) {
      return InvalidData("SSD weights: tensor '" + name + "' has shape " +
                         ShapeString(it->second.shape) + ", expected " + ShapeString(shape));
    }
    // Copy out of the loader's storage: the model must own its weights.
    return at::from_blob(const_cast<float*>(it->second.values.data()), shape, at::kFloat).clone();
  }

 private:
  const TfjsWeights& weights_;
};

// TF conv kernel [kh, kw, in, out] → OIHW.
at::Tensor ConvKernel(const at::Tensor& tf) {
  return tf.permute({3, 2, 0, 1}).contiguous();
}
// TF depthwise kernel [kh, kw, C, 1] → [C, 1, kh, kw].
at::Tensor DepthwiseKernel(const at::Tensor& tf) {
  return tf.permute({2, 3, 0, 1}).contiguous();
}

StatusOr<ConvLayer> LoadConv(const WeightReader& r, const std::string& prefix, int k, int in,
                             int out, int stride) {
  MOGSERVE_ASSIGN_OR_RETURN(at::Tensor w, r.Get(prefix + "/weights", {k, k, in, out}));
  MOGSERVE_ASSIGN_OR_RETURN(at::Tensor b, r.Get(prefix + "/convolution_bn_offset", {out}));
  return ConvLayer{ConvKernel(w), b, stride, 1, true};
}

// Depthwise 3x3 followed by BatchNorm, folded: w' = w * s, b' = beta - mean * s with
// s = gamma / sqrt(var + eps).
StatusOr<ConvLayer> LoadDepthwise(const WeightReader& r, int index, int channels, int stride) {
  const std::string p = "MobilenetV1/Conv2d_" + std::to_string(index) + "_depthwise/";
  const std::vector<int64_t> c = {channels};
  MOGSERVE_ASSIGN_OR_RETURN(at::Tensor w, r.Get(p + "depthwise_weights", {3, 3, channels, 1}));
  MOGSERVE_ASSIGN_OR_RETURN(at::Tensor gamma, r.Get(p + "BatchNorm/gamma", c));
  MOGSERVE_ASSIGN_OR_RETURN(at::Tensor beta, r.Get(p + "BatchNorm/beta", c));
  MOGSERVE_ASSIGN_OR_RETURN(at::Tensor mean, r.Get(p + "BatchNorm/moving_mean", c));
  MOGSERVE_ASSIGN_OR_RETURN(at::Tensor var, r.Get(p + "BatchNorm/moving_variance", c));
  const at::Tensor scale = gamma / at::sqrt(var + kBatchNormEpsilon);
  at::Tensor kernel = DepthwiseKernel(w) * scale.view({channels, 1, 1, 1});
  return ConvLayer{kernel, beta - mean * scale, stride, channels, true};
}

// One level's box head and the face column of its class head, fused into a single 1x1 conv
// whose outputs are [A*4 box encodings | A face logits].
StatusOr<ConvLayer> LoadHead(const WeightReader& r, int level, int in, int anchors) {
  const std::string p = "Prediction/BoxPredictor_" + std::to_string(level) + "/";
  MOGSERVE_ASSIGN_OR_RETURN(at::Tensor bw,
                            r.Get(p + "BoxEncodingPredictor/weights", {1, 1, in, anchors * 4}));
  MOGSERVE_ASSIGN_OR_RETURN(at::Tensor bb, r.Get(p + "BoxEncodingPredictor/biases", {anchors * 4}));
  MOGSERVE_ASSIGN_OR_RETURN(at::Tensor cw,
                            r.Get(p + "ClassPredictor/weights", {1, 1, in, anchors * 3}));
  MOGSERVE_ASSIGN_OR_RETURN(at::Tensor cb, r.Get(p + "ClassPredictor/biases", {anchors * 3}));
  // Class channel a*3+1 is anchor a's face logit (0 = background, 2 unused).
  const at::Tensor face = at::arange(anchors, at::kLong) * 3 + 1;
  at::Tensor weight = at::cat({ConvKernel(bw), ConvKernel(cw).index_select(0, face)}, 0);
  at::Tensor bias = at::cat({bb, cb.index_select(0, face)}, 0);
  return ConvLayer{weight.contiguous(), bias, 1, 1, false};
}

Status LoadBackbone(const WeightReader& r, std::vector<ConvLayer>& layers) {
  // (in, out, depthwise stride) for Conv2d_1..13.
  struct Block {
    int in, out, stride;
  };
  static constexpr Block kBlocks[13] = {
      {32, 64, 1},   {64, 128, 2},   {128, 128, 1},  {128, 256, 2}, {256, 256, 1},
      {256, 512, 2}, {512, 512, 1},  {512, 512, 1},  {512, 512, 1}, {512, 512, 1},
      {512, 512, 1}, {512, 1024, 2}, {1024, 1024, 1}};
  MOGSERVE_ASSIGN_OR_RETURN(ConvLayer conv0,
                            LoadConv(r, "MobilenetV1/Conv2d_0_pointwise", 3, 3, 32, 2));
  layers.push_back(std::move(conv0));
  for (int i = 1; i <= 13; ++i) {
    const Block& b = kBlocks[i - 1];
    MOGSERVE_ASSIGN_OR_RETURN(ConvLayer dw, LoadDepthwise(r, i, b.in, b.stride));
    MOGSERVE_ASSIGN_OR_RETURN(
        ConvLayer pw,
        LoadConv(r, "MobilenetV1/Conv2d_" + std::to_string(i) + "_pointwise", 1, b.in, b.out, 1));
    layers.push_back(std::move(dw));
    layers.push_back(std::move(pw));
  }
  return Status::Ok();
}

Status LoadExtras(const WeightReader& r, std::vector<ConvLayer>& layers) {
  struct Extra {
    int k, in, out, stride;
  };
  static constexpr Extra kExtras[8] = {{1, 1024, 256, 1}, {3, 256, 512, 2}, {1, 512, 128, 1},
                                       {3, 128, 256, 2},  {1, 256, 128, 1}, {3, 128, 256, 2},
                                       {1, 256, 64, 1},   {3, 64, 128, 2}};
  for (int j = 0; j < 8; ++j) {
    const Extra& e = kExtras[j];
    MOGSERVE_ASSIGN_OR_RETURN(
        ConvLayer c, LoadConv(r, "Prediction/Conv2d_" + std::to_string(j) + "_pointwise", e.k, e.in,
                              e.out, e.stride));
    layers.push_back(std::move(c));
  }
  return Status::Ok();
}

void ToMemoryFormat(std::vector<ConvLayer>& layers, bool channels_last) {
  const auto format = channels_last ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous;
  for (ConvLayer& l : layers) l.weight = l.weight.contiguous(format);
}

}  // namespace

StatusOr<std::unique_ptr<SsdMobilenetV1>> SsdMobilenetV1::Create(const TfjsWeights& weights,
                                                                 bool channels_last) {
  try {
    c10::InferenceMode inference_mode;
    std::unique_ptr<SsdMobilenetV1> net(new SsdMobilenetV1());
    net->channels_last_ = channels_last;
    WeightReader r(weights);
    MOGSERVE_RETURN_IF_ERROR(LoadBackbone(r, net->backbone_));
    MOGSERVE_RETURN_IF_ERROR(LoadExtras(r, net->extras_));
    static constexpr int kHeadInputs[kLevels] = {512, 1024, 512, 256, 256, 128};
    for (int level = 0; level < kLevels; ++level) {
      MOGSERVE_ASSIGN_OR_RETURN(ConvLayer head,
                                LoadHead(r, level, kHeadInputs[level], kAnchorsPerCell[level]));
      net->heads_.push_back(std::move(head));
      net->anchors_per_cell_.push_back(kAnchorsPerCell[level]);
    }
    MOGSERVE_ASSIGN_OR_RETURN(at::Tensor anchors,
                              r.Get("Output/extra_dim", {1, kSsdAnchorCount, 4}));
    MOGSERVE_ASSIGN_OR_RETURN(net->anchors_, AnchorsFromRows({anchors.data_ptr<float>(),
                                                              static_cast<size_t>(anchors.numel())},
                                                             kSsdAnchorCount));
    ToMemoryFormat(net->backbone_, channels_last);
    ToMemoryFormat(net->extras_, channels_last);
    ToMemoryFormat(net->heads_, channels_last);
    return net;
  } catch (const c10::Error& e) {
    return Internal(std::string("building SSD-MobileNetV1 failed: ") + e.what_without_backtrace());
  }
}

SsdRawOutputs SsdMobilenetV1::Forward(const at::Tensor& images) const {
  const int64_t n = images.size(0);
  // NHWC uint8 → float in [-1, 1]; the NCHW permutation of an NHWC tensor is channels-last.
  at::Tensor x = images.to(at::kFloat).mul_(1.0 / 127.5).sub_(1.0).permute({0, 3, 1, 2});
  x = x.contiguous(channels_last_ ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous);
  std::vector<at::Tensor> features;
  for (size_t i = 0; i < backbone_.size(); ++i) {
    x = backbone_[i].Forward(x);
    if (i == kFeature0Layer || i == kFeature1Layer) features.push_back(x);
  }
  for (size_t j = 0; j < extras_.size(); ++j) {
    x = extras_[j].Forward(x);
    if (j % 2 == 1) features.push_back(x);  // the 3x3 stride-2 layers give F2..F5
  }
  std::vector<at::Tensor> boxes, logits;
  for (size_t level = 0; level < heads_.size(); ++level) {
    const int64_t a = anchors_per_cell_[level];
    // [N, A*5, h, w] → [N, h*w, A*5]: anchor index (y*w + x)*A + a.
    at::Tensor y = heads_[level].Forward(features[level]).permute({0, 2, 3, 1}).contiguous();
    y = y.view({n, -1, a * 5});
    boxes.push_back(y.narrow(2, 0, a * 4).reshape({n, -1, 4}));
    logits.push_back(y.narrow(2, a * 4, a).reshape({n, -1}));
  }
  return {at::cat(boxes, 1), at::sigmoid(at::cat(logits, 1))};
}

int64_t SsdMobilenetV1::MacsPerImage() const {
  int h = kInputSize, w = kInputSize;
  int64_t macs = 0;
  std::vector<std::pair<int, int>> feature_sizes;
  for (size_t i = 0; i < backbone_.size(); ++i) {
    macs += backbone_[i].Macs(h, w, &h, &w);
    if (i == kFeature0Layer || i == kFeature1Layer) feature_sizes.emplace_back(h, w);
  }
  for (size_t j = 0; j < extras_.size(); ++j) {
    macs += extras_[j].Macs(h, w, &h, &w);
    if (j % 2 == 1) feature_sizes.emplace_back(h, w);
  }
  for (size_t level = 0; level < heads_.size(); ++level) {
    int oh, ow;
    macs += heads_[level].Macs(feature_sizes[level].first, feature_sizes[level].second, &oh, &ow);
  }
  return macs;
}

}  // namespace mogserve::model
