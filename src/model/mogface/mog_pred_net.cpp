#include "model/mogface/mog_pred_net.h"

#include <string>

namespace mogserve::model::mogface {
namespace {

constexpr int kGroups = 16;
constexpr double kGroupNormEpsilon = 1e-5;

enum SshConv { kSsh1, kSsh2, kSsh21, kSsh22, kSsh221 };
enum CpmConv {
  kBranch1,
  kBranch2a,
  kBranch2b,
  kBranch2c,
  kCpmSsh1,
  kDimRed,
  kCpmSsh2,
  kSsh3a,
  kSsh3b
};

}  // namespace

at::Tensor CastDense(const at::Tensor& x, at::ScalarType dtype) {
  if (x.scalar_type() == dtype) return x;
  if (!x.is_non_overlapping_and_dense() || x.is_contiguous()) return x.to(dtype);
  // LibTorch 1.13's copy kernel converts BF16 -> FP32 ~100x slower for channels-last strides
  // than for contiguous ones (40 ms vs 0.4 ms for 512x80x80): convert the dense buffer as 1-D.
  return x.as_strided({x.numel()}, {1}).to(dtype).as_strided(x.sizes(), x.strides());
}

at::Tensor GroupNormRelu(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta) {
  // A group at P2 spans ~800k values; BF16 sums would lose the mean (spec §10.3).
  at::Tensor y = at::group_norm(CastDense(x, at::kFloat), kGroups, gamma, beta, kGroupNormEpsilon);
  return CastDense(y.relu_(), x.scalar_type());
}

at::Tensor MogPredNet::Tower::Forward(const at::Tensor& x) const {
  at::Tensor y = x;
  for (int i = 0; i < 4; ++i) y = GroupNormRelu(conv.Forward(y), gamma[i], beta[i]);
  return y;
}

std::unique_ptr<MogPredNet> MogPredNet::Load(const CheckpointReader& r, Variant variant) {
  std::unique_ptr<MogPredNet> net(new MogPredNet());
  net->cpm_ = variant == Variant::kE;
  if (net->cpm_) {
    const std::string p = "pred_net.conv_CPM.";
    net->context_ = {r.ConvBn(p + "branch1.conv1", p + "branch1.bn1", 1, 0),
                     r.ConvBn(p + "branch2a.conv1", p + "branch2a.bn1", 1, 0),
                     r.ConvBn(p + "branch2b.conv1", p + "branch2b.bn1", 1, 1),
                     r.ConvBn(p + "branch2c.conv1", p + "branch2c.bn1", 1, 0),
                     r.Conv(p + "ssh_1", 1, 1),
                     r.Conv(p + "ssh_dimred", 1, 1),
                     r.Conv(p + "ssh_2", 1, 1),
                     r.Conv(p + "ssh_3a", 1, 1),
                     r.Conv(p + "ssh_3b", 1, 1)};
  } else {
    const std::string p = "pred_net.conv_SSH.";
    net->context_ = {r.Conv(p + "conv1", 1, 1), r.Conv(p + "conv2", 1, 2, 2),
                     r.Conv(p + "conv2_1", 1, 1), r.Conv(p + "conv2_2", 1, 2, 2),
                     r.Conv(p + "conv2_2_1", 1, 1)};
  }
  for (auto [tower, name] :
       {std::pair{&net->cls_tower_, "cls"}, std::pair{&net->loc_tower_, "loc"}}) {
    const std::string p = std::string("pred_net.deep_") + name + "_head.";
    tower->conv = r.Conv(p + "conv1", 1, 1);
    for (int i = 0; i < 4; ++i) {
      tower->gamma[i] = r.Tensor(p + "gn" + std::to_string(i + 1) + ".weight");
      tower->beta[i] = r.Tensor(p + "gn" + std::to_string(i + 1) + ".bias");
    }
  }
  net->pred_cls_ = r.Conv("pred_net.pred_cls", 1, 1);
  net->pred_loc_ = r.Conv("pred_net.pred_loc", 1, 1);
  return net;
}

at::Tensor MogPredNet::Ssh(const at::Tensor& x) const {
  const at::Tensor a = context_[kSsh1].Forward(x).relu_();
  const at::Tensor t = context_[kSsh2].Forward(x).relu_();
  const at::Tensor b = context_[kSsh21].Forward(t).relu_();
  const at::Tensor c = context_[kSsh221].Forward(context_[kSsh22].Forward(t).relu_()).relu_();
  return at::cat({a, b, c}, 1);
}

at::Tensor MogPredNet::Cpm(const at::Tensor& x) const {
  at::Tensor r = context_[kBranch1].Forward(x);
  at::Tensor b = context_[kBranch2a].Forward(x).relu_();
  b = context_[kBranch2b].Forward(b).relu_();
  r.add_(context_[kBranch2c].Forward(b)).relu_();
  const at::Tensor s1 = context_[kCpmSsh1].Forward(r);
  const at::Tensor d = context_[kDimRed].Forward(r).relu_();
  const at::Tensor s2 = context_[kCpmSsh2].Forward(d);
  const at::Tensor s3 = context_[kSsh3b].Forward(context_[kSsh3a].Forward(d).relu_());
  return at::cat({s1, s2, s3}, 1).relu_();
}

LevelOutputs MogPredNet::Forward(int /*level*/, const at::Tensor& feature) const {
  const at::Tensor context = cpm_ ? Cpm(feature) : Ssh(feature);
  return {pred_cls_.Forward(cls_tower_.Forward(context)),
          pred_loc_.Forward(loc_tower_.Forward(context))};
}

int64_t MogPredNet::Macs(int /*level*/, Size2 s) const {
  int64_t macs = 0;
  for (const Conv2d& c : context_) macs += c.Macs(s);  // all stride 1, same size
  macs += 4 * (cls_tower_.conv.Macs(s) + loc_tower_.conv.Macs(s));
  return macs + pred_cls_.Macs(s) + pred_loc_.Macs(s);
}

void MogPredNet::Prepare(at::ScalarType dtype, bool channels_last) {
  for (Conv2d& c : context_) c.Prepare(dtype, channels_last);
  for (Conv2d* c : {&cls_tower_.conv, &loc_tower_.conv, &pred_cls_, &pred_loc_}) {
    c->Prepare(dtype, channels_last);
  }
}

}  // namespace mogserve::model::mogface
