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

namespace {

Status RunPass(engine::Engine& engine, const engine::CanvasBatch& batch,
               const model::OutputDecoder* decoder, const DetectOptions& detect) {
  MOGSERVE_ASSIGN_OR_RETURN(engine::BatchOutputs outputs, engine.Forward(batch));
  if (decoder == nullptr) return Status::Ok();
  if (batch.geometry.size() != batch.canvases.size()) {
    return Internal("a post-processed pass needs one letterbox per canvas");
  }
  for (size_t i = 0; i < batch.canvases.size(); ++i) {
    decoder->Postprocess(outputs.rows_of(static_cast<int>(i), batch.geometry[i]), detect);
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::vector<double>> TimePasses(engine::Engine& engine, const BatchForPass& batch_for,
                                         const PassTiming& timing) {
  using Clock = std::chrono::steady_clock;
  const DetectOptions detect =
      timing.decoder != nullptr ? timing.decoder->default_detect_options() : DetectOptions{};
  for (int i = 0; i < timing.warmup; ++i) {
    MOGSERVE_RETURN_IF_ERROR(RunPass(engine, batch_for(i), timing.decoder, detect));
  }
  std::vector<double> samples;
  const Clock::time_point start = Clock::now();
  while (static_cast<int>(samples.size()) < timing.min_iterations ||
         std::chrono::duration<double>(Clock::now() - start).count() < timing.min_seconds) {
    const engine::CanvasBatch batch = batch_for(static_cast<int>(samples.size()));
    const Clock::time_point t0 = Clock::now();
    MOGSERVE_RETURN_IF_ERROR(RunPass(engine, batch, timing.decoder, detect));
    samples.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  return samples;
}

StatusOr<std::vector<double>> TimeForward(engine::Engine& engine, const engine::CanvasBatch& batch,
                                          int warmup, int min_iterations, double min_seconds) {
  return TimePasses(engine, [&batch](int) { return batch; },
                    {warmup, min_iterations, min_seconds, nullptr});
}

}  // namespace mogserve::bench
