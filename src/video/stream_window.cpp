#include "video/stream_window.h"

#include <algorithm>
#include <cmath>

namespace mogserve::video {

StreamWindow::StreamWindow(SteadyClock::time_point start, std::chrono::seconds span)
    : start_(start), span_(span), buckets_(static_cast<size_t>(span.count())) {}

int64_t StreamWindow::SecondOf(SteadyClock::time_point t) const {
  return std::chrono::duration_cast<std::chrono::seconds>(t - start_).count();
}

void StreamWindow::Add(StreamEvent event, SteadyClock::time_point now, int64_t n) {
  const int64_t second = std::max<int64_t>(0, SecondOf(now));
  Bucket& b = buckets_[static_cast<size_t>(second) % buckets_.size()];
  if (b.second != second) b = {second, {}};
  b.counts[static_cast<size_t>(event)] += n;
}

void StreamWindow::AddLatency(double latency_ms, SteadyClock::time_point now) {
  latencies_.emplace_back(now, latency_ms);
  if (latencies_.size() > kMaxLatencySamples) latencies_.pop_front();
}

double StreamWindow::PerSecond(StreamEvent event, SteadyClock::time_point now) const {
  const int64_t current = SecondOf(now);
  const int64_t oldest = current - static_cast<int64_t>(buckets_.size()) + 1;
  int64_t total = 0;
  for (const Bucket& b : buckets_) {
    if (b.second >= oldest && b.second <= current) total += b.counts[static_cast<size_t>(event)];
  }
  // The buckets cover the whole seconds before the current one and the current one so far.
  const double age_s = std::chrono::duration<double>(now - start_).count();
  const double covered_s = static_cast<double>(buckets_.size() - 1) + (age_s - std::floor(age_s));
  return static_cast<double>(total) / std::max(1.0, std::min(age_s, covered_s));
}

LatencyPercentiles StreamWindow::Latency(SteadyClock::time_point now) const {
  while (!latencies_.empty() && latencies_.front().first < now - span_) latencies_.pop_front();
  LatencyPercentiles out;
  out.samples = static_cast<int64_t>(latencies_.size());
  if (latencies_.empty()) return out;
  std::vector<double> v;
  v.reserve(latencies_.size());
  for (const auto& [t, ms] : latencies_) v.push_back(ms);
  std::sort(v.begin(), v.end());
  auto rank = [&](double p) {
    const size_t i = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
    return v[std::clamp<size_t>(i, 1, v.size()) - 1];
  };
  out.p50_ms = rank(0.50);
  out.p95_ms = rank(0.95);
  out.p99_ms = rank(0.99);
  return out;
}

}  // namespace mogserve::video
