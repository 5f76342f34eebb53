#include "bench/latency_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace mogserve::bench {
namespace {

double Percentile(const std::vector<double>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

}  // namespace

LatencyStats Summarize(std::vector<double> samples_ms) {
  LatencyStats s;
  if (samples_ms.empty()) return s;
  std::sort(samples_ms.begin(), samples_ms.end());
  s.count = static_cast<int>(samples_ms.size());
  s.mean_ms = std::accumulate(samples_ms.begin(), samples_ms.end(), 0.0) / s.count;
  s.min_ms = samples_ms.front();
  s.max_ms = samples_ms.back();
  s.median_ms = Percentile(samples_ms, 0.5);
  s.p90_ms = Percentile(samples_ms, 0.9);
  s.p95_ms = Percentile(samples_ms, 0.95);
  s.p99_ms = Percentile(samples_ms, 0.99);
  double sq = 0;
  for (double v : samples_ms) sq += (v - s.mean_ms) * (v - s.mean_ms);
  s.stddev_ms = s.count > 1 ? std::sqrt(sq / (s.count - 1)) : 0.0;
  return s;
}

}  // namespace mogserve::bench
