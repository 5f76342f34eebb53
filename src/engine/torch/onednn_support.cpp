#include "engine/torch/onednn_support.h"

namespace mogserve::engine::torch_backend {

const dnnl::engine& OneDnnCpuEngine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

std::shared_ptr<const ReorderedWeights> ReorderWeights(dnnl::memory source,
                                                       const dnnl::memory::desc& wanted) {
  auto weights = std::make_shared<ReorderedWeights>();
  weights->storage = at::empty({static_cast<int64_t>(wanted.get_size())}, at::kByte);
  weights->memory = dnnl::memory(wanted, OneDnnCpuEngine(), weights->storage.data_ptr());
  dnnl::stream stream(OneDnnCpuEngine());
  dnnl::reorder(source, weights->memory).execute(stream, source, weights->memory);
  stream.wait();
  return weights;
}

void ExecuteWithScratchpad(const dnnl::primitive& primitive, const dnnl::memory::desc& scratchpad,
                           std::unordered_map<int, dnnl::memory> args) {
  const at::Tensor buffer = at::empty({static_cast<int64_t>(scratchpad.get_size())}, at::kByte);
  args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(scratchpad, OneDnnCpuEngine(), buffer.data_ptr()));
  dnnl::stream stream(OneDnnCpuEngine());
  primitive.execute(stream, args);
  stream.wait();
}

at::Tensor ResidualOutput(at::IntArrayRef sizes, const at::TensorOptions& options,
                          const at::Tensor& residual, bool residual_reusable) {
  if (residual.defined() && residual_reusable &&
      residual.scalar_type() == options.dtype().toScalarType() &&
      residual.is_contiguous(at::MemoryFormat::ChannelsLast)) {
    return residual;
  }
  at::Tensor y = at::empty(sizes, options, at::MemoryFormat::ChannelsLast);
  if (residual.defined()) y.copy_(residual);
  return y;
}

}  // namespace mogserve::engine::torch_backend
