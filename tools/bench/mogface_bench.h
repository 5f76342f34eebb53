// The MogFace mode of `mogserve bench engine` (see engine_bench.h), and what it shares with the
// SSD mode. Internal to bench/.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/engine_bench.h"

namespace mogserve::bench {

// For each input size: per precision, a fresh engine (so the memory counters see one model),
// its precision's conv peak (first time only), and the rows of every batch size; then the
// Python reference for that size when options.reference (one child process per size).
StatusOr<EngineBenchReport> RunMogFaceBench(const EngineBenchOptions& options);

// Times a row of `row.batch` canvases of row.size x row.size (the first of `canvases`) and fills
// its memory counters and rates (defined in engine_bench.cpp).
Status TimeRow(engine::Engine& engine, const std::vector<std::vector<uint8_t>>& canvases,
               const EngineBenchOptions& options, double peak_gflops, EngineBenchRow& row);

// Fills the latency statistics, ms/image, images/s, GFLOP/s and fraction of `peak_gflops` of a
// row whose batch and macs_per_image are set (defined in engine_bench.cpp).
void FillRowRates(std::vector<double> samples_ms, double peak_gflops, EngineBenchRow& row);

}  // namespace mogserve::bench
