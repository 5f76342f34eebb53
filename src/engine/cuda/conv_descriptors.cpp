#include "engine/cuda/conv_descriptors.h"

#include <string>

#include "engine/cuda/arena.h"

namespace mogserve::engine::cuda {
namespace {

cudnnDataType_t DataType(StorageType type) {
  switch (type) {
    case StorageType::kF16:
      return CUDNN_DATA_HALF;
    case StorageType::kBf16:
      return CUDNN_DATA_BFLOAT16;
    case StorageType::kF32:
      return CUDNN_DATA_FLOAT;
  }
  return CUDNN_DATA_FLOAT;
}

// FP32 must be FP32: cuDNN's default math allows TF32 on Ampere and later.
cudnnMathType_t MathTypeOf(Precision precision) {
  switch (precision) {
    case Precision::kFp32:
    case Precision::kInt8:  // refused for cuda before an engine is made
      return CUDNN_FMA_MATH;
    case Precision::kTf32:
      // DEFAULT allows TF32 tensor ops on Ampere and later (PyTorch's choice with TF32 on);
      // ALLOW_CONVERSION would also allow engines that round FP32 inputs down to FP16.
      return CUDNN_DEFAULT_MATH;
    case Precision::kFp16:
    case Precision::kBf16:
      return CUDNN_TENSOR_OP_MATH;
  }
  return CUDNN_FMA_MATH;
}

}  // namespace

Status CudnnCall(cudnnStatus_t status, const char* call) {
  if (status == CUDNN_STATUS_SUCCESS) return Status::Ok();
  char last[256] = {};
  cudnnGetLastErrorString(last, sizeof(last));
  return Internal(std::string(call) + ": " + cudnnGetErrorString(status) +
                  (last[0] != '\0' ? std::string(" (") + last + ")" : std::string()));
}

StatusOr<std::unique_ptr<ConvDescriptors>> ConvDescriptors::Create(const ConvGeometry& g,
                                                                   StorageType type,
                                                                   Precision precision) {
  if (!g.padding.symmetric()) {
    return Unimplemented("asymmetric padding (top " + std::to_string(g.padding.top) + ", bottom " +
                         std::to_string(g.padding.bottom) + ", left " +
                         std::to_string(g.padding.left) + ", right " +
                         std::to_string(g.padding.right) +
                         "): cuDNN's legacy API pads symmetrically; pad the input explicitly first "
                         "(a pad step of program.h)");
  }
  std::unique_ptr<ConvDescriptors> d(new ConvDescriptors());
  const cudnnDataType_t dt = DataType(type);
  MOGSERVE_RETURN_IF_ERROR(
      CudnnCall(cudnnCreateTensorDescriptor(&d->x_), "cudnnCreateTensorDescriptor"));
  MOGSERVE_RETURN_IF_ERROR(
      CudnnCall(cudnnCreateTensorDescriptor(&d->y_), "cudnnCreateTensorDescriptor"));
  MOGSERVE_RETURN_IF_ERROR(
      CudnnCall(cudnnCreateTensorDescriptor(&d->bias_), "cudnnCreateTensorDescriptor"));
  MOGSERVE_RETURN_IF_ERROR(
      CudnnCall(cudnnCreateFilterDescriptor(&d->w_), "cudnnCreateFilterDescriptor"));
  MOGSERVE_RETURN_IF_ERROR(
      CudnnCall(cudnnCreateConvolutionDescriptor(&d->conv_), "cudnnCreateConvolutionDescriptor"));
  MOGSERVE_RETURN_IF_ERROR(
      CudnnCall(cudnnCreateActivationDescriptor(&d->act_), "cudnnCreateActivationDescriptor"));
  MOGSERVE_RETURN_IF_ERROR(
      CudnnCall(cudnnSetTensor4dDescriptor(d->x_, CUDNN_TENSOR_NHWC, dt, g.batch, g.in_channels,
                                           g.in_h, g.in_w),
                "cudnnSetTensor4dDescriptor(x)"));
  MOGSERVE_RETURN_IF_ERROR(
      CudnnCall(cudnnSetTensor4dDescriptor(d->y_, CUDNN_TENSOR_NHWC, dt, g.batch, g.out_channels,
                                           g.out_h, g.out_w),
                "cudnnSetTensor4dDescriptor(y)"));
  MOGSERVE_RETURN_IF_ERROR(CudnnCall(
      cudnnSetTensor4dDescriptor(d->bias_, CUDNN_TENSOR_NHWC, dt, 1, g.out_channels, 1, 1),
      "cudnnSetTensor4dDescriptor(bias)"));
  MOGSERVE_RETURN_IF_ERROR(
      CudnnCall(cudnnSetFilter4dDescriptor(d->w_, dt, CUDNN_TENSOR_NHWC, g.out_channels,
                                           g.in_channels / g.groups, g.kernel, g.kernel),
                "cudnnSetFilter4dDescriptor"));
  MOGSERVE_RETURN_IF_ERROR(
      CudnnCall(cudnnSetConvolution2dDescriptor(d->conv_, g.padding.top, g.padding.left, g.stride,
                                                g.stride, g.dilation, g.dilation,
                                                CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                "cudnnSetConvolution2dDescriptor"));
  MOGSERVE_RETURN_IF_ERROR(CudnnCall(cudnnSetConvolutionGroupCount(d->conv_, g.groups),
                                     "cudnnSetConvolutionGroupCount"));
  MOGSERVE_RETURN_IF_ERROR(CudnnCall(cudnnSetConvolutionMathType(d->conv_, MathTypeOf(precision)),
                                     "cudnnSetConvolutionMathType"));
  const bool relu = g.act != model::Activation::kNone;
  d->needs_clamp_ = g.act == model::Activation::kRelu6;
  d->identity_epilogue_ = !relu;
  // NOT_PROPAGATE_NAN, as TensorFlow's and ONNX Runtime's fused calls pass it: cuDNN's fused
  // conv-bias-activation has long supported only that, and a refusal would send every ReLU
  // convolution down the two-step fallback. An FP16 overflow still shows: it is an Inf before
  // it is a NaN, and the parity checks refuse both at the outputs.
  MOGSERVE_RETURN_IF_ERROR(CudnnCall(
      cudnnSetActivationDescriptor(d->act_,
                                   relu ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY,
                                   CUDNN_NOT_PROPAGATE_NAN, 0.0),
      "cudnnSetActivationDescriptor"));
  return d;
}

ConvDescriptors::~ConvDescriptors() {
  if (act_ != nullptr) cudnnDestroyActivationDescriptor(act_);
  if (conv_ != nullptr) cudnnDestroyConvolutionDescriptor(conv_);
  if (w_ != nullptr) cudnnDestroyFilterDescriptor(w_);
  if (bias_ != nullptr) cudnnDestroyTensorDescriptor(bias_);
  if (y_ != nullptr) cudnnDestroyTensorDescriptor(y_);
  if (x_ != nullptr) cudnnDestroyTensorDescriptor(x_);
}

StatusOr<std::array<int, 4>> ConvDescriptors::OutputDims() const {
  std::array<int, 4> dims{};
  MOGSERVE_RETURN_IF_ERROR(CudnnCall(
      cudnnGetConvolution2dForwardOutputDim(conv_, x_, w_, &dims[0], &dims[1], &dims[2], &dims[3]),
      "cudnnGetConvolution2dForwardOutputDim"));
  return dims;
}

StatusOr<cudnnMathType_t> ConvDescriptors::MathType() const {
  cudnnMathType_t math{};
  MOGSERVE_RETURN_IF_ERROR(
      CudnnCall(cudnnGetConvolutionMathType(conv_, &math), "cudnnGetConvolutionMathType"));
  return math;
}

}  // namespace mogserve::engine::cuda
