#include "model/mogface/resnet_backbone.h"

#include <string>

namespace mogserve::model::mogface {

at::Tensor Bottleneck::Forward(const at::Tensor& x) const {
  at::Tensor y = conv1.Forward(x).relu_();
  y = conv2.Forward(y).relu_();
  y = conv3.Forward(y);
  y.add_(downsample ? downsample->Forward(x) : x);
  return y.relu_();
}

int64_t Bottleneck::Macs(Size2 in, Size2* out) const {
  const Size2 mid = conv2.OutSize(in);
  *out = mid;
  return conv1.Macs(in) + conv2.Macs(in) + conv3.Macs(mid) +
         (downsample ? downsample->Macs(in) : 0);
}

ResNetBackbone ResNetBackbone::Load(const CheckpointReader& r, const std::array<int, 4>& blocks) {
  ResNetBackbone net;
  net.stem_ = r.ConvBn("backbone.conv1", "backbone.bn1", 2, 3);
  for (int stage = 0; stage < 4; ++stage) {
    const int stride = stage == 0 ? 1 : 2;
    for (int i = 0; i < blocks[stage]; ++i) {
      const std::string p = "backbone.layer" + std::to_string(stage + 1) + "." + std::to_string(i);
      Bottleneck b;
      b.conv1 = r.ConvBn(p + ".conv1", p + ".bn1", 1, 0);
      b.conv2 = r.ConvBn(p + ".conv2", p + ".bn2", i == 0 ? stride : 1, 1);
      b.conv3 = r.ConvBn(p + ".conv3", p + ".bn3", 1, 0);
      if (i == 0) b.downsample = r.ConvBn(p + ".downsample.0", p + ".downsample.1", stride, 0);
      net.stages_[stage].push_back(std::move(b));
    }
  }
  return net;
}

std::array<at::Tensor, 4> ResNetBackbone::Forward(const at::Tensor& x) const {
  at::Tensor y = stem_.Forward(x).relu_();
  y = at::max_pool2d(y, {3, 3}, {2, 2}, {1, 1});
  std::array<at::Tensor, 4> features;
  for (int stage = 0; stage < 4; ++stage) {
    for (const Bottleneck& b : stages_[stage]) y = b.Forward(y);
    features[stage] = y;
  }
  return features;
}

int64_t ResNetBackbone::Macs(Size2 in, std::array<Size2, 4>* features) const {
  int64_t macs = stem_.Macs(in);
  Size2 s = stem_.OutSize(in);
  s = {(s.h + 1) / 2, (s.w + 1) / 2};  // the 3x3 stride-2 pad-1 max-pool
  for (int stage = 0; stage < 4; ++stage) {
    for (const Bottleneck& b : stages_[stage]) macs += b.Macs(s, &s);
    (*features)[stage] = s;
  }
  return macs;
}

void ResNetBackbone::Prepare(at::ScalarType dtype, bool channels_last) {
  stem_.Prepare(dtype, channels_last);
  for (auto& stage : stages_) {
    for (Bottleneck& b : stage) {
      for (Conv2d* c : {&b.conv1, &b.conv2, &b.conv3}) c->Prepare(dtype, channels_last);
      if (b.downsample) b.downsample->Prepare(dtype, channels_last);
    }
  }
}

}  // namespace mogserve::model::mogface
