#include "server/metrics_registry.h"

#include <cmath>
#include <cstdio>

#include "common/enum_names.h"
#include "common/text.h"

namespace mogserve::server {
namespace {

constexpr EnumNames<MetricFamily::Type, MetricFamily::Type::kHistogram> kTypeNames{
    {"counter", "gauge", "histogram"}};

const char* TypeName(MetricFamily::Type type) {
  return NameOf(kTypeNames, type, "untyped");
}

// {a="x",b="y"} plus an optional extra label (the histogram's le).
std::string LabelSet(const std::vector<std::string>& names, const LabelValues& values,
                     const std::string& extra_name = "", const std::string& extra_value = "") {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    out += out.empty() ? "{" : ",";
    out += names[i] + "=\"" + EscapeLabelValue(i < values.size() ? values[i] : "") + "\"";
  }
  if (!extra_name.empty()) {
    out += out.empty() ? "{" : ",";
    out += extra_name + "=\"" + extra_value + "\"";
  }
  return out.empty() ? out : out + "}";
}

}  // namespace

std::string FormatMetricValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (value == std::floor(value) && std::abs(value) < 1e15) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.0f", value);
    return buf;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.9g", value);
  return buf;
}

std::string EscapeLabelValue(const std::string& value) {
  return ReplaceChars(value, {{'\\', "\\\\"}, {'"', "\\\""}, {'\n', "\\n"}});
}

MetricFamily::MetricFamily(std::string name, std::string help, Type type,
                           std::vector<std::string> labels, std::vector<double> buckets)
    : name_(std::move(name)),
      help_(std::move(help)),
      type_(type),
      label_names_(std::move(labels)),
      buckets_(std::move(buckets)) {}

MetricFamily::Series& MetricFamily::SeriesFor(const LabelValues& labels) {
  auto [it, inserted] = series_.try_emplace(labels);
  if (inserted && type_ == Type::kHistogram) it->second.bucket_counts.assign(buckets_.size(), 0);
  return it->second;
}

void MetricFamily::Add(const LabelValues& labels, double delta) {
  if (type_ == Type::kCounter && !(delta >= 0)) return;  // counters never go down
  std::lock_guard<std::mutex> lock(mutex_);
  SeriesFor(labels).value += delta;
}

void MetricFamily::Set(const LabelValues& labels, double value) {
  std::lock_guard<std::mutex> lock(mutex_);
  SeriesFor(labels).value = value;
}

void MetricFamily::Observe(const LabelValues& labels, double value) {
  std::lock_guard<std::mutex> lock(mutex_);
  Series& s = SeriesFor(labels);
  for (size_t i = 0; i < buckets_.size(); ++i) {
    if (value <= buckets_[i]) {
      ++s.bucket_counts[i];
      break;
    }
  }
  ++s.count;
  s.sum += value;
}

double MetricFamily::Value(const LabelValues& labels) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = series_.find(labels);
  return it == series_.end() ? 0.0 : it->second.value;
}

uint64_t MetricFamily::Count(const LabelValues& labels) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = series_.find(labels);
  return it == series_.end() ? 0 : it->second.count;
}

double MetricFamily::Sum(const LabelValues& labels) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = series_.find(labels);
  return it == series_.end() ? 0.0 : it->second.sum;
}

void MetricFamily::Render(std::string& out) const {
  std::lock_guard<std::mutex> lock(mutex_);
  out += "# HELP " + name_ + " " + help_ + "\n";
  out += "# TYPE " + name_ + " " + TypeName(type_) + "\n";
  if (series_.empty() && label_names_.empty() && type_ != Type::kHistogram) {
    out += name_ + " 0\n";  // an unlabelled metric exists from the start
    return;
  }
  for (const auto& [labels, s] : series_) {
    if (type_ != Type::kHistogram) {
      out += name_ + LabelSet(label_names_, labels) + " " + FormatMetricValue(s.value) + "\n";
      continue;
    }
    uint64_t cumulative = 0;
    for (size_t i = 0; i < buckets_.size(); ++i) {
      cumulative += s.bucket_counts[i];
      out += name_ + "_bucket" +
             LabelSet(label_names_, labels, "le", FormatMetricValue(buckets_[i])) + " " +
             std::to_string(cumulative) + "\n";
    }
    out += name_ + "_bucket" + LabelSet(label_names_, labels, "le", "+Inf") + " " +
           std::to_string(s.count) + "\n";
    out += name_ + "_sum" + LabelSet(label_names_, labels) + " " + FormatMetricValue(s.sum) + "\n";
    out += name_ + "_count" + LabelSet(label_names_, labels) + " " + std::to_string(s.count) + "\n";
  }
}

MetricFamily& MetricsRegistry::Add(std::unique_ptr<MetricFamily> family) {
  std::lock_guard<std::mutex> lock(mutex_);
  families_.push_back(std::move(family));
  return *families_.back();
}

MetricFamily& MetricsRegistry::Counter(const std::string& name, const std::string& help,
                                       std::vector<std::string> labels) {
  return Add(std::make_unique<MetricFamily>(name, help, MetricFamily::Type::kCounter,
                                            std::move(labels), std::vector<double>{}));
}

MetricFamily& MetricsRegistry::Gauge(const std::string& name, const std::string& help,
                                     std::vector<std::string> labels) {
  return Add(std::make_unique<MetricFamily>(name, help, MetricFamily::Type::kGauge,
                                            std::move(labels), std::vector<double>{}));
}

MetricFamily& MetricsRegistry::Histogram(const std::string& name, const std::string& help,
                                         std::vector<double> buckets,
                                         std::vector<std::string> labels) {
  return Add(std::make_unique<MetricFamily>(name, help, MetricFamily::Type::kHistogram,
                                            std::move(labels), std::move(buckets)));
}

std::string MetricsRegistry::Render() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out;
  for (const auto& f : families_) f->Render(out);
  return out;
}

}  // namespace mogserve::server
