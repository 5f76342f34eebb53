// The machine's measured convolution peak: what "good" means for the engine benchmark.
#pragma once

namespace mogserve::engine {

struct ConvPeak {
  double gflops = 0;      // best FP32 GFLOP/s seen
  int batch = 0;          // at this batch size
  double latency_ms = 0;  // of one call at that batch
};

// Times a 512→512 3x3 stride-1 convolution on 32x32 channels-last FP32 activations (the shape
// MobileNet and ResNet spend most time in) at batch 1 and 4 for about `seconds` in total, with
// the current intra-op thread count, and returns the best rate.
ConvPeak MeasureConv3x3Peak(double seconds);

}  // namespace mogserve::engine
