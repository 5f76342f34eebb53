// Timing an engine's forward passes: the measuring loop `bench engine` (random canvases, Forward
// only) and `bench report` (letterboxed photos, Forward + the model's post-processing) share.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "engine/engine.h"

namespace mogserve::bench {

// `count` canvases of width x height random RGB bytes (a fixed seed).
std::vector<std::vector<uint8_t>> NoiseCanvases(int count, int width, int height);

// The first `batch` of `canvases` as one batch (pointers into `canvases`, which must outlive it).
engine::CanvasBatch BatchOf(const std::vector<std::vector<uint8_t>>& canvases, int batch, int width,
                            int height);

struct PassTiming {
  int warmup = 0;          // untimed passes first
  int min_iterations = 1;  // timed passes, at least
  double min_seconds = 0;  // ... and at least this long
  // Also decode every row through it, with its default detect options (the batch needs its
  // geometry); null: Forward only.
  const model::OutputDecoder* decoder = nullptr;
};

// The batch pass `i` runs (warm-up passes count from 0, then timed passes from 0 again); its
// pointers must stay valid through the pass.
using BatchForPass = std::function<engine::CanvasBatch(int pass)>;

// Runs the passes and returns the timed ones' latencies in ms (Forward, plus the decoder's
// post-processing when timing.decoder is set).
StatusOr<std::vector<double>> TimePasses(engine::Engine& engine, const BatchForPass& batch_for,
                                         const PassTiming& timing);

// The same batch every pass, Forward only.
StatusOr<std::vector<double>> TimeForward(engine::Engine& engine, const engine::CanvasBatch& batch,
                                          int warmup, int min_iterations, double min_seconds);

}  // namespace mogserve::bench
