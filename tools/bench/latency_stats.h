// Summary statistics of a latency sample.
#pragma once

#include <vector>

namespace mogserve::bench {

struct LatencyStats {
  int count = 0;
  double mean_ms = 0, median_ms = 0, min_ms = 0, max_ms = 0, stddev_ms = 0;
  double p90_ms = 0, p95_ms = 0, p99_ms = 0;
};

// Sample standard deviation (n - 1); percentiles by linear interpolation between order
// statistics. An empty sample gives all zeros.
LatencyStats Summarize(std::vector<double> samples_ms);

}  // namespace mogserve::bench
