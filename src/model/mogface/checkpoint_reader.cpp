#include "model/mogface/checkpoint_reader.h"

#include <c10/util/Exception.h>

namespace mogserve::model::mogface {

at::Tensor CheckpointReader::Tensor(const std::string& name) const {
  auto it = weights_.find(name);
  TORCH_CHECK(it != weights_.end(), "MogFace checkpoint lacks '", name, "'");
  return at::from_blob(const_cast<float*>(it->second.values.data()), it->second.shape, at::kFloat)
      .clone();
}

Conv2d CheckpointReader::Conv(const std::string& prefix, int stride, int padding,
                              int dilation) const {
  Conv2d conv;
  conv.weight = Tensor(prefix + ".weight");
  conv.bias = weights_.count(prefix + ".bias") ? Tensor(prefix + ".bias")
                                               : at::zeros({conv.weight.size(0)}, at::kFloat);
  conv.stride = stride;
  conv.padding = padding;
  conv.dilation = dilation;
  return conv;
}

Conv2d CheckpointReader::ConvBn(const std::string& conv_prefix, const std::string& bn_prefix,
                                int stride, int padding) const {
  Conv2d conv = Conv(conv_prefix, stride, padding);
  FoldBatchNorm(conv, Tensor(bn_prefix + ".weight"), Tensor(bn_prefix + ".bias"),
                Tensor(bn_prefix + ".running_mean"), Tensor(bn_prefix + ".running_var"),
                kBatchNormEpsilon);
  return conv;
}

}  // namespace mogserve::model::mogface
