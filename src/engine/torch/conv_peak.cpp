#include "engine/conv_peak.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <chrono>

#include "engine/torch/torch_ops.h"

namespace mogserve::engine {

ConvPeak MeasureConv3x3Peak(double seconds, Precision precision) {
  c10::InferenceMode inference_mode;
  constexpr int64_t kChannels = 512, kSide = 32;
  const at::ScalarType dtype = precision == Precision::kBf16 ? at::kBFloat16 : at::kFloat;
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
    auto run = [&] { return torch_backend::Convolve(x, w, b, stride, padding, dilation, 1); };
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

}  // namespace mogserve::engine
