// LatencyModel: batch latency of one shape bucket as latency(n) = a·n + b, fitted by least
// squares over the most recent completed batches (BentoML's model). Used for the batch-1
// estimate behind deadline admission and expiry, and by the adaptive policy to choose a wait.
//
// Not thread-safe; owned by BatchPolicy, which the pipeline guards with its mutex.
#pragma once

#include <deque>

#include "scheduler/request.h"

namespace mogserve::scheduler {

class LatencyModel {
 public:
  // `window` (>= 1) most recent samples are kept; `default_latency` is the estimate for any
  // batch size before the first sample.
  LatencyModel(int window, Duration default_latency);

  // One completed batch: the batch size the engine actually ran (the padded size, since padding
  // rows cost compute) and its wall time. Non-positive sizes and negative latencies are ignored.
  void Add(int batch_size, Duration latency);

  // Predicted latency of a batch of `batch_size`. With samples of at least two distinct sizes it
  // is the fit, a·n + b with a >= 0 and b >= 0 (a negative slope from noise is refitted as a
  // constant; a negative intercept as a line through the origin). With samples of one size only,
  // their mean (we cannot tell the slope yet). Before any sample, the default. Never negative.
  Duration Estimate(int batch_size) const;

  // True once there are >= min_samples samples covering >= 2 distinct batch sizes.
  bool Fitted(int min_samples) const;
  int sample_count() const { return static_cast<int>(samples_.size()); }
  // The current coefficients in microseconds: a per image, b per batch.
  double slope_us() const { return a_us_; }
  double intercept_us() const { return b_us_; }

 private:
  struct Sample {
    int batch_size;
    double latency_us;
  };
  void Refit();

  int window_;
  std::deque<Sample> samples_;
  bool distinct_sizes_ = false;  // the window holds >= 2 different batch sizes
  double a_us_ = 0.0;
  double b_us_ = 0.0;
};

}  // namespace mogserve::scheduler
