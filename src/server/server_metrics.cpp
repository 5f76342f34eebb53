#include "server/server_metrics.h"

#include <algorithm>

#include "scheduler/outcome.h"

namespace mogserve::server {
namespace {

// Latency buckets in seconds: from a 2 ms SSD pass on a GPU to a 60 s MogFace-E pass on 2 cores.
const std::vector<double> kLatencyBuckets = {0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                             0.5,   1,     2.5,  5,     10,   30,  60};
const std::vector<double> kBatchBuckets = {1, 2, 4, 8, 16, 32, 64};
constexpr auto kStatsWindow = std::chrono::seconds(10);

double Percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t index = static_cast<size_t>(q * static_cast<double>(values.size() - 1) + 0.5);
  return values[std::min(index, values.size() - 1)];
}

}  // namespace

ServerMetrics::ServerMetrics()
    : requests_(registry_.Counter("mogserve_requests_total",
                                  "Images that ended, by how they ended.", {"outcome"})),
      http_responses_(registry_.Counter("mogserve_http_responses_total",
                                        "HTTP responses by route and status code.",
                                        {"route", "code"})),
      grpc_responses_(registry_.Counter("mogserve_grpc_responses_total",
                                        "gRPC calls answered, by route (the method's path, "
                                        "/inference.GRPCInferenceService/ModelInfer) and status "
                                        "code (OK, INVALID_ARGUMENT, ...).",
                                        {"route", "code"})),
      request_duration_(registry_.Histogram(
          "mogserve_request_duration_seconds",
          "Time from submission to result of each detected image.", kLatencyBuckets)),
      queue_duration_(registry_.Histogram("mogserve_queue_duration_seconds",
                                          "Time each detected image waited for its batch.",
                                          kLatencyBuckets)),
      inference_duration_(registry_.Histogram("mogserve_inference_duration_seconds",
                                              "Forward-pass time of each batch.", kLatencyBuckets)),
      batch_size_(
          registry_.Histogram("mogserve_batch_size", "Images per forward pass.", kBatchBuckets)),
      queue_depth_(
          registry_.Gauge("mogserve_queue_depth", "Images waiting in the scheduler's queues.")),
      inflight_images_(registry_.Gauge(
          "mogserve_inflight_images",
          "Images accepted and not yet answered (decoding, queued, running, post-processing): "
          "the load signal for autoscaling.")),
      draining_(registry_.Gauge("mogserve_draining",
                                "1 from SIGTERM on (not ready, finishing what was accepted).")),
      busy_ratio_(registry_.Gauge("mogserve_engine_busy_ratio",
                                  "Fraction of the engines' time spent in forward passes since "
                                  "start.")),
      memory_(registry_.Gauge("mogserve_device_memory_bytes",
                              "Engine memory (CPU: the caching allocator's; CUDA: the GPU's).",
                              {"kind"})),
      uptime_(registry_.Gauge("mogserve_uptime_seconds", "Seconds since the server started.")),
      connections_(registry_.Gauge("mogserve_http_connections", "Open HTTP connections.")),
      connection_events_(registry_.Counter(
          "mogserve_http_connections_total",
          "HTTP connections: accepted; displaced (closed at the connection cap while idle or "
          "slow to send a header, for a newer one); refused (503 at the cap, all busy).",
          {"event"})),
      body_bytes_in_flight_(registry_.Gauge("mogserve_http_body_bytes_in_flight",
                                            "Request-body bytes held by the HTTP layer.")),
      resident_memory_(
          registry_.Gauge("process_resident_memory_bytes", "Resident memory of the process.")) {
  for (int o = 0; o < scheduler::kNumOutcomes; ++o) {
    requests_.Add({scheduler::OutcomeName(static_cast<scheduler::Outcome>(o))}, 0);
  }
}

void ServerMetrics::OnBatchFinished(const pipeline::BatchReport& report) {
  inference_duration_.Observe({}, report.inference_ms / 1000.0);
  batch_size_.Observe({}, report.batch_size);
}

void ServerMetrics::OnRequestEnded(const pipeline::RequestResult& result) {
  requests_.Add({scheduler::OutcomeName(result.outcome)}, 1);
  if (result.outcome != scheduler::Outcome::kDone) return;
  request_duration_.Observe({}, result.total_ms / 1000.0);
  queue_duration_.Observe({}, result.result.timing.queue_ms / 1000.0);
  std::lock_guard<std::mutex> lock(window_mutex_);
  const Clock::time_point now = Clock::now();
  window_.push_back({now, result.total_ms, result.result.timing.queue_ms});
  while (!window_.empty() && now - window_.front().at > kStatsWindow) window_.pop_front();
}

void ServerMetrics::OnHttpResponse(const std::string& route, int status) {
  http_responses_.Add({route, std::to_string(status)}, 1);
}

void ServerMetrics::OnGrpcResponse(const std::string& method, const std::string& code) {
  grpc_responses_.Add({"/inference.GRPCInferenceService/" + method, code}, 1);
}

void ServerMetrics::SetHttpStats(const http::ListenerStats& http, const ProcessMemory& memory) {
  connections_.Set({}, static_cast<double>(http.connections.open));
  connection_events_.Set({"accepted"}, static_cast<double>(http.connections.accepted_total));
  connection_events_.Set({"displaced"}, static_cast<double>(http.connections.displaced_total));
  connection_events_.Set({"refused"}, static_cast<double>(http.connections.refused_total));
  body_bytes_in_flight_.Set({}, static_cast<double>(http.body_bytes_in_flight));
  resident_memory_.Set({}, static_cast<double>(memory.rss_bytes));
}

void ServerMetrics::RefreshGauges(const pipeline::Pipeline* pipeline,
                                  const std::vector<engine::Engine*>& engines) {
  uptime_.Set({}, std::chrono::duration<double>(Clock::now() - started_).count());
  if (pipeline != nullptr) {
    const pipeline::PipelineStats s = pipeline->Stats();
    queue_depth_.Set({}, static_cast<double>(s.queue.total.requests));
    inflight_images_.Set({}, static_cast<double>(s.submitted - s.ended()));
    busy_ratio_.Set({}, s.busy_ratio());
  }
  if (!engines.empty()) {
    const engine::MemoryStats m = engines.front()->Memory();
    memory_.Set({"in_use"}, static_cast<double>(m.in_use_bytes));
    memory_.Set({"peak"}, static_cast<double>(m.peak_in_use_bytes));
    memory_.Set({"reserved"}, static_cast<double>(m.reserved_bytes));
  }
}

std::string ServerMetrics::Render(const pipeline::Pipeline* pipeline,
                                  const std::vector<engine::Engine*>& engines) {
  RefreshGauges(pipeline, engines);
  return registry_.Render();
}

nlohmann::json ServerMetrics::Stats(const pipeline::Pipeline* pipeline,
                                    const std::vector<engine::Engine*>& engines) {
  RefreshGauges(pipeline, engines);
  nlohmann::json j;
  j["uptime_s"] = std::chrono::duration<double>(Clock::now() - started_).count();
  j["ready"] = pipeline != nullptr;
  nlohmann::json outcomes = nlohmann::json::object();
  for (int o = 0; o < scheduler::kNumOutcomes; ++o) {
    const char* name = scheduler::OutcomeName(static_cast<scheduler::Outcome>(o));
    outcomes[name] = static_cast<int64_t>(requests_.Value({name}));
  }
  j["requests"] = outcomes;
  if (pipeline != nullptr) {
    const pipeline::PipelineStats s = pipeline->Stats();
    j["queue_depth"] = s.queue.total.requests;
    j["queue_bytes"] = s.queue.total.bytes;
    j["preprocessing"] = s.preprocessing;
    j["running"] = s.running;
    j["batches"] = s.batches;
    j["mean_batch_size"] = s.mean_batch_size();
    j["batch_size_counts"] = s.batch_size_counts;
    j["engine_busy_ratio"] = s.busy_ratio();
  }
  if (!engines.empty()) {
    const engine::MemoryStats m = engines.front()->Memory();
    j["memory"] = {{"in_use_bytes", m.in_use_bytes},
                   {"peak_bytes", m.peak_in_use_bytes},
                   {"reserved_bytes", m.reserved_bytes},
                   {"capacity_bytes", m.capacity_bytes}};
  }
  std::vector<double> totals, queues;
  {
    std::lock_guard<std::mutex> lock(window_mutex_);
    const Clock::time_point now = Clock::now();
    while (!window_.empty() && now - window_.front().at > kStatsWindow) window_.pop_front();
    for (const Finished& f : window_) {
      totals.push_back(f.total_ms);
      queues.push_back(f.queue_ms);
    }
  }
  const double window_s =
      std::min(std::chrono::duration<double>(kStatsWindow).count(),
               std::max(1e-3, std::chrono::duration<double>(Clock::now() - started_).count()));
  j["recent"] = {
      {"window_s", window_s},
      {"images_per_s", static_cast<double>(totals.size()) / window_s},
      {"latency_ms",
       {{"p50", Percentile(totals, 0.50)},
        {"p95", Percentile(totals, 0.95)},
        {"p99", Percentile(totals, 0.99)}}},
      {"queue_ms", {{"p50", Percentile(queues, 0.50)}, {"p95", Percentile(queues, 0.95)}}}};
  return j;
}

}  // namespace mogserve::server
