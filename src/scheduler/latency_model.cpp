#include "scheduler/latency_model.h"

#include <algorithm>
#include <cmath>

namespace mogserve::scheduler {

namespace {

double ToUs(Duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

}  // namespace

LatencyModel::LatencyModel(int window, Duration default_latency)
    : window_(std::max(window, 1)), b_us_(std::max(0.0, ToUs(default_latency))) {}

void LatencyModel::Add(int batch_size, Duration latency) {
  if (batch_size <= 0 || latency < Duration::zero()) return;
  samples_.push_back({batch_size, ToUs(latency)});
  if (static_cast<int>(samples_.size()) > window_) samples_.pop_front();
  Refit();
}

// The window is small (tens of samples) and Refit runs once per batch, not per request, so an
// exact recomputation is cheaper to trust than running sums that drift as samples leave.
void LatencyModel::Refit() {
  const double count = static_cast<double>(samples_.size());
  double sum_n = 0, sum_y = 0, sum_nn = 0, sum_ny = 0;
  for (const Sample& s : samples_) {
    sum_n += s.batch_size;
    sum_y += s.latency_us;
    sum_nn += static_cast<double>(s.batch_size) * s.batch_size;
    sum_ny += s.batch_size * s.latency_us;
  }
  const double mean_y = sum_y / count;
  const double variance_n = sum_nn - sum_n * sum_n / count;
  distinct_sizes_ = std::any_of(samples_.begin(), samples_.end(), [&](const Sample& s) {
    return s.batch_size != samples_.front().batch_size;
  });
  if (!distinct_sizes_ || variance_n <= 0.0) {
    a_us_ = 0.0;
    b_us_ = mean_y;
    return;
  }
  a_us_ = (sum_ny - sum_n * sum_y / count) / variance_n;
  b_us_ = mean_y - a_us_ * sum_n / count;
  if (a_us_ < 0.0) {  // bigger batches cannot be faster; noise. Fall back to a constant.
    a_us_ = 0.0;
    b_us_ = mean_y;
  } else if (b_us_ < 0.0) {  // a batch cannot take negative fixed time: fit through the origin
    a_us_ = sum_ny / sum_nn;
    b_us_ = 0.0;
  }
}

Duration LatencyModel::Estimate(int batch_size) const {
  const double us = std::max(0.0, a_us_ * batch_size + b_us_);
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double, std::micro>(us));
}

bool LatencyModel::Fitted(int min_samples) const {
  return distinct_sizes_ && sample_count() >= min_samples;
}

}  // namespace mogserve::scheduler
