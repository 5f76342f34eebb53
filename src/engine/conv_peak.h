// The machine's measured convolution peak: what "good" means for the engine benchmark.
#pragma once

#include "engine/engine.h"

namespace mogserve::engine {

struct ConvPeak {
  double gflops = 0;      // best GFLOP/s seen
  int batch = 0;          // at this batch size
  double latency_ms = 0;  // of one call at that batch
};

// Times a 512→512 3x3 stride-1 convolution on 32x32 channels-last activations (the shape
// MobileNet and ResNet spend most time in, and MogFace's 512-channel heads) in `precision`
// (fp32, bf16 or int8; CPU) at batch 1 and 4 for about `seconds` in total, through the engine's own
// convolution call (the CPU backend's Convolve: oneDNN for channels-last input; 0 in builds without
// it), with the current intra-op thread count, and returns the best rate. BF16 on a CPU without
// native BF16 support measures oneDNN's emulation. int8: the INT8 engine's quantized convolution
// (uint8 activations, per-channel int8 weights, requantised uint8 output); its rate counts 2
// integer operations per multiply-accumulate (GOP/s, comparable with the GFLOP/s).
// A failure inside LibTorch (a precision this CPU cannot run) is an Internal status naming it.
StatusOr<ConvPeak> MeasureConv3x3Peak(double seconds, Precision precision = Precision::kFp32);

}  // namespace mogserve::engine
