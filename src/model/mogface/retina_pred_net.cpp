#include "model/mogface/retina_pred_net.h"

#include <string>

namespace mogserve::model::mogface {

std::unique_ptr<RetinaPredNet> RetinaPredNet::Load(const CheckpointReader& r) {
  std::unique_ptr<RetinaPredNet> net(new RetinaPredNet());
  for (int l = 0; l < kLevels; ++l) {
    net->cls_[l] = r.Conv("pred_net.pred_cls." + std::to_string(l), 1, 1);
    net->loc_[l] = r.Conv("pred_net.pred_loc." + std::to_string(l), 1, 1);
  }
  return net;
}

LevelOutputs RetinaPredNet::Forward(int level, const at::Tensor& feature) const {
  return {cls_[level].Forward(feature), loc_[level].Forward(feature)};
}

int64_t RetinaPredNet::Macs(int level, Size2 feature) const {
  return cls_[level].Macs(feature) + loc_[level].Macs(feature);
}

void RetinaPredNet::Prepare(at::ScalarType dtype, bool channels_last) {
  for (int l = 0; l < kLevels; ++l) {
    cls_[l].Prepare(dtype, channels_last);
    loc_[l].Prepare(dtype, channels_last);
  }
}

}  // namespace mogserve::model::mogface
