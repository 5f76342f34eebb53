// Timing an engine's forward passes over batches of random canvases: the measuring loop the
// engine benchmarks share.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/engine.h"

namespace mogserve::bench {

// `count` canvases of width x height random RGB bytes (a fixed seed).
std::vector<std::vector<uint8_t>> NoiseCanvases(int count, int width, int height);

// The first `batch` of `canvases` as one batch (pointers into `canvases`, which must outlive it).
engine::CanvasBatch BatchOf(const std::vector<std::vector<uint8_t>>& canvases, int batch, int width,
                            int height);

// `warmup` untimed passes, then timed passes until there are `min_iterations` and
// `min_seconds` have passed. Returns the pass latencies in ms.
StatusOr<std::vector<double>> TimeForward(engine::Engine& engine, const engine::CanvasBatch& batch,
                                          int warmup, int min_iterations, double min_seconds);

}  // namespace mogserve::bench
