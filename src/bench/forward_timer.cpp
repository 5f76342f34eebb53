#include "bench/forward_timer.h"

#include <chrono>
#include <random>

namespace mogserve::bench {

std::vector<std::vector<uint8_t>> NoiseCanvases(int count, int width, int height) {
  std::mt19937 rng(12345);
  std::vector<std::vector<uint8_t>> canvases(static_cast<size_t>(count));
  for (auto& c : canvases) {
    c.resize(static_cast<size_t>(width) * height * 3);
    for (auto& v : c) v = static_cast<uint8_t>(rng());
  }
  return canvases;
}

engine::CanvasBatch BatchOf(const std::vector<std::vector<uint8_t>>& canvases, int batch, int width,
                            int height) {
  engine::CanvasBatch b;
  b.width = width;
  b.height = height;
  for (int i = 0; i < batch; ++i) b.canvases.push_back(canvases[static_cast<size_t>(i)].data());
  return b;
}

StatusOr<std::vector<double>> TimeForward(engine::Engine& engine, const engine::CanvasBatch& batch,
                                          int warmup, int min_iterations, double min_seconds) {
  for (int i = 0; i < warmup; ++i) MOGSERVE_RETURN_IF_ERROR(engine.Forward(batch).status());
  std::vector<double> samples;
  const auto start = std::chrono::steady_clock::now();
  while (static_cast<int>(samples.size()) < min_iterations ||
         std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() <
             min_seconds) {
    const auto t0 = std::chrono::steady_clock::now();
    MOGSERVE_RETURN_IF_ERROR(engine.Forward(batch).status());
    samples.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return samples;
}

}  // namespace mogserve::bench
