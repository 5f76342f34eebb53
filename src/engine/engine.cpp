#include "engine/engine.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <sched.h>

#include <cstring>
#include <thread>

#include "engine/caching_cpu_allocator.h"
#include "model/ssd_mobilenet_v1.h"

namespace mogserve::engine {

struct Engine::Impl {
  EngineOptions options;
  std::unique_ptr<model::SsdMobilenetV1> net;
  int threads = 1;
  at::Tensor staging;  // [capacity, S, S, 3] uint8, grown on demand, then reused
};

int AvailableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() = default;

StatusOr<std::unique_ptr<Engine>> Engine::Create(const EngineOptions& options) {
  if (options.device != "cpu") {
    return InvalidArgument("device '" + options.device +
                           "' is not available in this build; allowed: cpu");
  }
  if (options.threads < 0) return InvalidArgument("threads must be >= 0");
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->threads = options.threads > 0 ? options.threads : AvailableCores();
  at::set_num_threads(impl->threads);
  if (options.allocator_cache_bytes > 0) InstallCachingCpuAllocator(options.allocator_cache_bytes);

  auto weights = model::LoadTfjsWeights(options.model_dir, model::SsdMobilenetV1::kWeightsName);
  if (!weights.ok()) {
    return Status(weights.status().code(),
                  weights.status().message() + " (run scripts/setup.sh to fetch the model)");
  }
  MOGSERVE_ASSIGN_OR_RETURN(impl->net,
                            model::SsdMobilenetV1::Create(*weights, options.channels_last));
  return std::unique_ptr<Engine>(new Engine(std::move(impl)));
}

int Engine::input_size() const {
  return model::SsdMobilenetV1::kInputSize;
}
const std::vector<model::AnchorBox>& Engine::anchors() const {
  return impl_->net->anchors();
}
int64_t Engine::macs_per_image() const {
  return impl_->net->MacsPerImage();
}
int Engine::threads() const {
  return impl_->threads;
}

std::string Engine::Describe() const {
  return "ssd-mobilenetv1 on " + impl_->options.device + ", fp32, " +
         (impl_->net->channels_last() ? "channels-last" : "NCHW") + ", " +
         std::to_string(impl_->threads) + " threads";
}

StatusOr<BatchOutputs> Engine::Forward(std::span<const uint8_t* const> canvases) {
  const int64_t n = static_cast<int64_t>(canvases.size());
  if (n == 0) return InvalidArgument("empty batch");
  const int64_t side = input_size();
  const size_t canvas_bytes = static_cast<size_t>(side * side * 3);
  try {
    c10::InferenceMode inference_mode;
    if (!impl_->staging.defined() || impl_->staging.size(0) < n) {
      impl_->staging = at::empty({n, side, side, 3}, at::kByte);
    }
    uint8_t* dst = impl_->staging.data_ptr<uint8_t>();
    for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * canvas_bytes, canvases[i], canvas_bytes);
    model::SsdRawOutputs out = impl_->net->Forward(impl_->staging.narrow(0, 0, n));
    BatchOutputs result;
    result.batch = static_cast<int>(n);
    result.anchors = static_cast<int>(out.scores.size(1));
    const at::Tensor boxes = out.box_encodings.contiguous();
    const at::Tensor scores = out.scores.contiguous();
    result.box_encodings.assign(boxes.data_ptr<float>(), boxes.data_ptr<float>() + boxes.numel());
    result.scores.assign(scores.data_ptr<float>(), scores.data_ptr<float>() + scores.numel());
    return result;
  } catch (const c10::Error& e) {
    return Internal(std::string("forward pass failed: ") + e.what_without_backtrace());
  }
}

}  // namespace mogserve::engine
