// ServerMetrics: the Prometheus metrics of DESIGN.md §6, fed by the pipeline (as its observer),
// by the HTTP layer (responses by status) and, at scrape time, by the pipeline's and engines'
// snapshots; plus the rolling windows behind /v1/stats (recent throughput and latency
// percentiles for the dashboard).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/process_memory.h"
#include "engine/engine.h"
#include "pipeline/pipeline.h"
#include "pipeline/pipeline_observer.h"
#include "server/http/listener.h"
#include "server/metrics_registry.h"

namespace mogserve::server {

class ServerMetrics : public pipeline::PipelineObserver {
 public:
  ServerMetrics();

  // PipelineObserver.
  void OnBatchFinished(const pipeline::BatchReport& report) override;
  void OnRequestEnded(const pipeline::RequestResult& result) override;

  // One HTTP response (every route, including refusals that never reached the pipeline).
  void OnHttpResponse(const std::string& route, int status);
  // One gRPC call answered: the method ("ModelInfer", labelled by its path) and the status
  // code's name ("OK").
  void OnGrpcResponse(const std::string& method, const std::string& code);
  // The HTTP layer's connection counters and the process's memory, before a Render.
  void SetHttpStats(const http::ListenerStats& http, const ProcessMemory& memory);
  void SetDraining(bool draining) { draining_.Set({}, draining ? 1.0 : 0.0); }

  // Refreshes the gauges from snapshots, then renders every metric (GET /metrics).
  std::string Render(const pipeline::Pipeline* pipeline,
                     const std::vector<engine::Engine*>& engines);

  // GET /v1/stats: counters, queue, batch sizes, busy ratio, memory, and over the last
  // `window`: completed images per second and latency percentiles.
  nlohmann::json Stats(const pipeline::Pipeline* pipeline,
                       const std::vector<engine::Engine*>& engines);

  MetricsRegistry& registry() { return registry_; }

 private:
  using Clock = std::chrono::steady_clock;
  void RefreshGauges(const pipeline::Pipeline* pipeline,
                     const std::vector<engine::Engine*>& engines);

  MetricsRegistry registry_;
  MetricFamily& requests_;
  MetricFamily& http_responses_;
  MetricFamily& grpc_responses_;
  MetricFamily& request_duration_;
  MetricFamily& queue_duration_;
  MetricFamily& inference_duration_;
  MetricFamily& batch_size_;
  MetricFamily& queue_depth_;
  MetricFamily& inflight_images_;
  MetricFamily& draining_;
  MetricFamily& busy_ratio_;
  MetricFamily& memory_;
  MetricFamily& uptime_;
  MetricFamily& connections_;
  MetricFamily& connection_events_;
  MetricFamily& body_bytes_in_flight_;
  MetricFamily& resident_memory_;

  // Rolling window of finished requests (time, total latency) for /v1/stats.
  struct Finished {
    Clock::time_point at;
    double total_ms;
    double queue_ms;
  };
  std::mutex window_mutex_;
  std::deque<Finished> window_;
  const Clock::time_point started_ = Clock::now();
};

}  // namespace mogserve::server
