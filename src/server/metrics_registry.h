// A small Prometheus metrics registry: counters, gauges and histograms with label sets, rendered
// in the text exposition format (version 0.0.4). Thread-safe; updates take one mutex per metric
// family, so hot paths should update after the work, not inside tight loops.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace mogserve::server {

// Label values in the order of the family's label names.
using LabelValues = std::vector<std::string>;

class MetricFamily {
 public:
  enum class Type { kCounter, kGauge, kHistogram };
  MetricFamily(std::string name, std::string help, Type type, std::vector<std::string> labels,
               std::vector<double> buckets);

  // Counter: adds `delta` (>= 0). Gauge: adds (may be negative).
  void Add(const LabelValues& labels, double delta);
  // Gauge: sets the value. Counter: mirrors a monotonic count kept elsewhere.
  void Set(const LabelValues& labels, double value);
  // Histogram: one observation.
  void Observe(const LabelValues& labels, double value);

  // The value of a counter or gauge (0 when never touched); for tests and /v1/stats.
  double Value(const LabelValues& labels) const;
  // A histogram's observation count and sum.
  uint64_t Count(const LabelValues& labels) const;
  double Sum(const LabelValues& labels) const;

  void Render(std::string& out) const;

 private:
  struct Series {
    double value = 0;                     // counter / gauge
    std::vector<uint64_t> bucket_counts;  // histogram: per upper bound (not cumulative)
    uint64_t count = 0;
    double sum = 0;
  };
  Series& SeriesFor(const LabelValues& labels);  // mutex held

  const std::string name_;
  const std::string help_;
  const Type type_;
  const std::vector<std::string> label_names_;
  const std::vector<double> buckets_;  // histogram upper bounds, increasing; +Inf implied
  mutable std::mutex mutex_;
  std::map<LabelValues, Series> series_;
};

class MetricsRegistry {
 public:
  // Names must be unique; the returned family lives as long as the registry.
  MetricFamily& Counter(const std::string& name, const std::string& help,
                        std::vector<std::string> labels = {});
  MetricFamily& Gauge(const std::string& name, const std::string& help,
                      std::vector<std::string> labels = {});
  MetricFamily& Histogram(const std::string& name, const std::string& help,
                          std::vector<double> buckets, std::vector<std::string> labels = {});

  // Every family, in registration order.
  std::string Render() const;

 private:
  MetricFamily& Add(std::unique_ptr<MetricFamily> family);
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<MetricFamily>> families_;
};

// "1.5", "0.001", "+Inf", "NaN": Prometheus number formatting.
std::string FormatMetricValue(double value);
// Escapes a label value (backslash, double quote, newline).
std::string EscapeLabelValue(const std::string& value);

}  // namespace mogserve::server
