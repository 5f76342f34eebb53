// The engine: a loaded model on a device, running forward passes over batches of canvases.
// Torch-free header (pimpl), so the layers above never see LibTorch.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "model/ssd_box_coder.h"
#include "mogserve/status.h"

namespace mogserve::engine {

struct EngineOptions {
  std::string model_dir = "models";  // folder holding the model files
  std::string device = "cpu";        // "cpu" (CUDA comes with MOGSERVE_WITH_CUDA builds)
  int threads = 0;                   // intra-op threads; 0 = one per core
  bool channels_last = true;         // NHWC activations: oneDNN's fast path on CPU
  // Cap of the caching CPU allocator (see caching_cpu_allocator.h); 0 disables it.
  int64_t allocator_cache_bytes = int64_t{4} << 30;
};

// Raw network outputs of one batch, copied off the device.
struct BatchOutputs {
  int batch = 0;
  int anchors = 0;
  std::vector<float> box_encodings;  // [batch, anchors, 4]
  std::vector<float> scores;         // [batch, anchors]

  std::span<const float> boxes_of(int i) const {
    return {box_encodings.data() + static_cast<size_t>(i) * anchors * 4,
            static_cast<size_t>(anchors) * 4};
  }
  std::span<const float> scores_of(int i) const {
    return {scores.data() + static_cast<size_t>(i) * anchors, static_cast<size_t>(anchors)};
  }
};

class Engine {
 public:
  // Loads and prepares the embedded SSD-MobileNetV1 from options.model_dir. Sets the process's
  // intra-op thread count. Errors name the missing or malformed file.
  static StatusOr<std::unique_ptr<Engine>> Create(const EngineOptions& options);
  ~Engine();

  int input_size() const;  // the square canvas side the model takes
  const std::vector<model::AnchorBox>& anchors() const;
  int64_t macs_per_image() const;
  int threads() const;
  std::string Describe() const;  // "ssd-mobilenetv1 on cpu, fp32, channels-last, 2 threads"

  // One forward pass over canvases.size() images, each input_size x input_size x 3 RGB bytes.
  // The canvases are copied into a staging buffer that is allocated once and reused. Not
  // thread-safe: one engine per worker thread.
  StatusOr<BatchOutputs> Forward(std::span<const uint8_t* const> canvases);

 private:
  struct Impl;
  explicit Engine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Number of CPU cores this process may run on.
int AvailableCores();

}  // namespace mogserve::engine
