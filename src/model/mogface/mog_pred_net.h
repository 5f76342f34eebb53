// MogPredNet (spec §4a, §4b): one head shared by every level. A context module (SSH for R101,
// CPM for E), then a class and a box tower of 4 x (3x3 conv, GroupNorm(16), ReLU) that reuse
// the SAME conv1 four times with gn1..gn4, then the 3x3 predictors.
#pragma once

#include <array>
#include <memory>
#include <vector>

#include "model/mogface/checkpoint_reader.h"
#include "model/mogface/mogface_variant.h"
#include "model/mogface/pred_head.h"

namespace mogserve::model::mogface {

class MogPredNet : public PredHead {
 public:
  // variant: kR101 (SSH, 512 channels) or kE (CPM, 256 channels).
  static std::unique_ptr<MogPredNet> Load(const CheckpointReader& reader, Variant variant);

  LevelOutputs Forward(int level, const at::Tensor& feature) const override;
  int64_t Macs(int level, Size2 feature) const override;
  void Prepare(at::ScalarType dtype, bool channels_last) override;

 private:
  struct Tower {
    Conv2d conv;                      // conv1, applied four times
    std::array<at::Tensor, 4> gamma;  // gn1..gn4 weight, float32
    std::array<at::Tensor, 4> beta;
    at::Tensor Forward(const at::Tensor& x) const;
  };

  at::Tensor Ssh(const at::Tensor& x) const;
  at::Tensor Cpm(const at::Tensor& x) const;
  std::vector<Conv2d*> Convs();

  bool cpm_ = false;
  // SSH: conv1, conv2 (dilation 2), conv2_1, conv2_2 (dilation 2), conv2_2_1.
  // CPM: branch1, branch2a, branch2b, branch2c (BN folded), ssh_1, ssh_dimred, ssh_2, ssh_3a,
  // ssh_3b.
  std::vector<Conv2d> context_;
  Tower cls_tower_, loc_tower_;
  Conv2d pred_cls_, pred_loc_;
};

// x converted to `dtype`, fast for any dense memory format (channels-last included).
at::Tensor CastDense(const at::Tensor& x, at::ScalarType dtype);

// GroupNorm(16 groups, eps 1e-5) with statistics in FP32, then ReLU; returns x's dtype.
at::Tensor GroupNormRelu(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta);

}  // namespace mogserve::model::mogface
