#include "engine/conv_peak.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/native/quantized/PackedParams.h>
#include <c10/core/InferenceMode.h>

#include <chrono>
#include <functional>

#include "engine/torch/torch_ops.h"

namespace mogserve::engine {

namespace {

ConvPeak TimeConv3x3(double seconds, Precision precision) {
  c10::InferenceMode inference_mode;
  constexpr int64_t kChannels = 512, kSide = 32;
  const at::ScalarType dtype = precision == Precision::kBf16 ? at::kBFloat16 : at::kFloat;
  if (precision == Precision::kInt8) {
    for (const at::QEngine e : at::globalContext().supportedQEngines()) {
      if (e == at::QEngine::ONEDNN) at::globalContext().setQEngine(e);
    }
  }
  ConvPeak best;
  for (int64_t batch : {1, 4}) {
    const at::Tensor x = at::randn({batch, kChannels, kSide, kSide})
                             .to(dtype)
                             .contiguous(at::MemoryFormat::ChannelsLast);
    const at::Tensor w = (at::randn({kChannels, kChannels, 3, 3}) * 0.01)
                             .to(dtype)
                             .contiguous(at::MemoryFormat::ChannelsLast);
    const at::Tensor b = at::zeros({kChannels}, dtype);
    const int64_t stride[2] = {1, 1}, padding[2] = {1, 1}, dilation[2] = {1, 1};
    std::function<at::Tensor()> run = [&] {
      return torch_backend::Convolve(x, w, b, stride, padding, dilation, 1);
    };
    if (precision == Precision::kInt8) {
      // The INT8 engine's own call (plan_runner.cpp): oneDNN's quantized convolution with
      // per-channel weight scales and requantisation to a uint8 output.
      static const auto prepack =
          c10::Dispatcher::singleton()
              .findSchemaOrThrow("quantized::conv2d_prepack", "")
              .typed<c10::intrusive_ptr<ConvPackedParamsBase<2>>(
                  at::Tensor, c10::optional<at::Tensor>, c10::List<int64_t>,
                  c10::List<int64_t>, c10::List<int64_t>, int64_t)>();
      const at::Tensor wf = w.contiguous();
      const at::Tensor scales = (wf.abs().amax({1, 2, 3}) / 127.0).to(at::kDouble);
      const at::Tensor qw = at::quantize_per_channel(
          wf, scales, at::zeros({kChannels}, at::kLong), 0, at::kQInt8);
      auto packed = prepack.call(qw, b, c10::List<int64_t>({1, 1}), c10::List<int64_t>({1, 1}),
                                 c10::List<int64_t>({1, 1}), 1);
      const at::Tensor qx = at::quantize_per_tensor(x.relu(), 4.0 / 255, 0, at::kQUInt8)
                                .contiguous(at::MemoryFormat::ChannelsLast);
      run = [packed, qx] { return packed->apply_relu(qx, 0.05, 0); };
    }
    run();  // oneDNN creates its primitive on the first call
    const double flops = 2.0 * batch * kChannels * kChannels * 9 * kSide * kSide;
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds / 2);
    do {
      const auto t0 = std::chrono::steady_clock::now();
      run();
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      const double gflops = flops / ms / 1e6;
      if (gflops > best.gflops) best = {gflops, static_cast<int>(batch), ms};
    } while (std::chrono::steady_clock::now() < deadline);
  }
  return best;
}

}  // namespace

StatusOr<ConvPeak> MeasureConv3x3Peak(double seconds, Precision precision) {
  MOGSERVE_RETURN_IF_ERROR(CheckCpuRunsPrecision(precision));
  try {
    return TimeConv3x3(seconds, precision);
  } catch (const c10::Error& e) {
    return Internal(std::string("the ") + PrecisionName(precision) +
                    " 3x3 convolution peak failed in LibTorch: " + e.what_without_backtrace());
  }
}

}  // namespace mogserve::engine
