#include "server/metrics_registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

namespace mogserve::server {
namespace {

using ::testing::HasSubstr;

TEST(MetricsRegistryTest, RendersCountersGaugesAndCumulativeHistograms) {
  MetricsRegistry registry;
  MetricFamily& requests =
      registry.Counter("mogserve_requests_total", "Requests by outcome.", {"outcome"});
  MetricFamily& depth = registry.Gauge("mogserve_queue_depth", "Queued requests.");
  MetricFamily& latency =
      registry.Histogram("mogserve_request_duration_seconds", "Latency.", {0.01, 0.1, 1});
  requests.Add({"done"}, 3);
  requests.Add({"rejected_queue_full"}, 1);
  requests.Add({"done"}, -5);  // ignored: counters never go down
  depth.Set({}, 7);
  for (double v : {0.005, 0.05, 0.05, 0.5, 5.0}) latency.Observe({}, v);

  EXPECT_EQ(requests.Value({"done"}), 3);
  EXPECT_EQ(latency.Count({}), 5u);
  EXPECT_DOUBLE_EQ(latency.Sum({}), 5.605);
  const std::string text = registry.Render();
  EXPECT_THAT(text, HasSubstr("# HELP mogserve_requests_total Requests by outcome.\n"
                              "# TYPE mogserve_requests_total counter\n"
                              "mogserve_requests_total{outcome=\"done\"} 3\n"
                              "mogserve_requests_total{outcome=\"rejected_queue_full\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE mogserve_queue_depth gauge\nmogserve_queue_depth 7\n"));
  EXPECT_THAT(text, HasSubstr("mogserve_request_duration_seconds_bucket{le=\"0.01\"} 1\n"
                              "mogserve_request_duration_seconds_bucket{le=\"0.1\"} 3\n"
                              "mogserve_request_duration_seconds_bucket{le=\"1\"} 4\n"
                              "mogserve_request_duration_seconds_bucket{le=\"+Inf\"} 5\n"
                              "mogserve_request_duration_seconds_sum 5.605\n"
                              "mogserve_request_duration_seconds_count 5\n"));
}

TEST(MetricsRegistryTest, UnlabelledMetricsExistFromTheStartAndLabelsAreEscaped) {
  MetricsRegistry registry;
  registry.Gauge("g", "A gauge.");
  MetricFamily& c = registry.Counter("c_total", "A counter.", {"path"});
  c.Add({"a\"b\\c\nd"}, 1);
  const std::string text = registry.Render();
  EXPECT_THAT(text, HasSubstr("\ng 0\n"));
  EXPECT_THAT(text, HasSubstr("c_total{path=\"a\\\"b\\\\c\\nd\"} 1\n"));
  EXPECT_EQ(FormatMetricValue(0.25), "0.25");
  EXPECT_EQ(FormatMetricValue(1e20), "1e+20");
  EXPECT_EQ(FormatMetricValue(std::numeric_limits<double>::infinity()), "+Inf");
}

TEST(MetricsRegistryTest, ConcurrentUpdatesAreAllCounted) {
  MetricsRegistry registry;
  MetricFamily& c = registry.Counter("c_total", "A counter.", {"k"});
  MetricFamily& h = registry.Histogram("h", "A histogram.", {1.0});
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10000; ++i) {
        c.Add({t % 2 == 0 ? "even" : "odd"}, 1);
        h.Observe({}, 0.5);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(c.Value({"even"}) + c.Value({"odd"}), 80000);
  EXPECT_EQ(h.Count({}), 80000u);
}

}  // namespace
}  // namespace mogserve::server
