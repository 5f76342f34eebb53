#include "model/mogface/mogface_net.h"

#include <c10/core/InferenceMode.h>

#include <string>
#include <vector>

#include "model/mogface/checkpoint_reader.h"
#include "model/mogface/mog_pred_net.h"
#include "model/mogface/retina_pred_net.h"

namespace mogserve::model::mogface {
namespace {

// [N, k, h, w] → [N, h*w, k] float32: the NHWC flatten of spec §4e.
at::Tensor Flatten(const at::Tensor& x) {
  return x.permute({0, 2, 3, 1}).reshape({x.size(0), -1, x.size(1)}).to(at::kFloat);
}

}  // namespace

StatusOr<std::unique_ptr<MogFaceNet>> MogFaceNet::Create(const HostTensorMap& weights,
                                                         const MogFaceOptions& options) {
  if (options.dtype != at::kFloat && options.dtype != at::kBFloat16) {
    return InvalidArgument("MogFace: dtype must be float32 or bfloat16");
  }
  // Only a prefixed checkpoint pays for the renamed copy.
  HostTensorMap normalized;
  const bool prefixed = HasModulePrefix(weights);
  if (prefixed) normalized = NormalizeCheckpointKeys(weights);
  const HostTensorMap& w = prefixed ? normalized : weights;
  MOGSERVE_ASSIGN_OR_RETURN(Variant variant, DetectVariant(w));
  MOGSERVE_RETURN_IF_ERROR(CheckCheckpointKeys(w, variant));
  try {
    c10::InferenceMode inference_mode;
    std::unique_ptr<MogFaceNet> net(new MogFaceNet());
    net->variant_ = variant;
    net->options_ = options;
    const CheckpointReader reader(w);
    net->backbone_ = ResNetBackbone::Load(reader, BackboneBlocks(variant));
    net->fpn_ = Lfpn::Load(reader);
    if (variant == Variant::kR50) {
      net->head_ = RetinaPredNet::Load(reader);
    } else {
      net->head_ = MogPredNet::Load(reader, variant);
    }
    // After folding, which ran in FP32.
    net->backbone_.Prepare(options.dtype, options.channels_last);
    net->fpn_.Prepare(options.dtype, options.channels_last);
    net->head_->Prepare(options.dtype, options.channels_last);
    return net;
  } catch (const c10::Error& e) {
    return Internal(std::string("building MogFace failed: ") + e.what_without_backtrace());
  }
}

StatusOr<MogFaceOutputs> MogFaceNet::Forward(const at::Tensor& input_nchw) const {
  if (!input_nchw.defined() || input_nchw.dim() != 4 || input_nchw.size(1) != 3 ||
      input_nchw.size(2) < 1 || input_nchw.size(3) < 1) {
    return InvalidArgument("MogFace input must be [N, 3, H, W]");
  }
  if (input_nchw.scalar_type() != at::kFloat) {
    return InvalidArgument("MogFace input must be float32");
  }
  try {
    c10::InferenceMode inference_mode;
    at::Tensor x = input_nchw.to(options_.dtype);
    x = x.contiguous(options_.channels_last ? at::MemoryFormat::ChannelsLast
                                            : at::MemoryFormat::Contiguous);
    const std::array<at::Tensor, kLevels> levels = fpn_.Forward(backbone_.Forward(x));
    std::vector<at::Tensor> cls, loc;
    for (int l = 0; l < kLevels; ++l) {
      const LevelOutputs out = head_->Forward(l, levels[l]);
      cls.push_back(Flatten(out.cls));
      loc.push_back(Flatten(out.loc));
    }
    return MogFaceOutputs{at::sigmoid(at::cat(cls, 1)), at::cat(loc, 1)};
  } catch (const c10::Error& e) {
    return Internal(std::string("MogFace forward failed: ") + e.what_without_backtrace());
  }
}

int64_t MogFaceNet::MacsPerImage(int64_t h, int64_t w) const {
  std::array<Size2, 4> c;
  int64_t macs = backbone_.Macs({h, w}, &c);
  std::array<Size2, kLevels> levels;
  macs += fpn_.Macs(c, &levels);
  for (int l = 0; l < kLevels; ++l) macs += head_->Macs(l, levels[l]);
  return macs;
}

std::array<Size2, kLevels> MogFaceNet::LevelSizes(int64_t h, int64_t w) {
  std::array<Size2, kLevels> out;
  for (int step = 1; step <= kLevels + 1; ++step) {  // stride 2^(step): P2 after 2 steps
    h = (h + 1) / 2;
    w = (w + 1) / 2;
    if (step >= 2) out[step - 2] = {h, w};
  }
  return out;
}

}  // namespace mogserve::model::mogface
