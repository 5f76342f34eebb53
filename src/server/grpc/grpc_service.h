// The Open Inference Protocol (KServe v2) over gRPC (specs/scale_out.md §2): the service
// inference.GRPCInferenceService of proto/open_inference.proto — ServerLive, ServerReady,
// ModelReady, ServerMetadata, ModelMetadata, ModelInfer — on the same pipeline, API key, limits
// and OIP logic (server/oip.h) as the REST API. Built only with MOGSERVE_WITH_GRPC.
//
// ModelInfer: one input IMAGE, BYTES, shape [N] or [N, 1]: N encoded pictures in
// `contents.bytes_contents`, or in `raw_input_contents[0]` (each element a uint32 little-endian
// length and its bytes). Outputs BOXES, SCORES, COUNT, IMAGE_SIZE (as REST) come back as raw
// little-endian bytes in `raw_output_contents`, one entry per output (as Triton answers).
// The request parameters are REST's; `outputs` filters and orders. All-or-nothing: the first
// image that fails fails the call, its message naming IMAGE[i].
//
// Errors: REST's HTTP status and code mapped by GrpcCodeOf, the message "<code>: <message>".
// API key: `authorization: Bearer <key>` metadata on every RPC but ServerLive and ServerReady.
// Deadline: a client's deadline shortens the request's timeout (already past: DEADLINE_EXCEEDED).
// Max message: max_message_bytes (--max-body-bytes); larger: RESOURCE_EXHAUSTED. Messages held
// until answered: max_bytes_in_flight; beyond, UNAVAILABLE (retry).
//
// Threads: gRPC's callback API — an in-flight ModelInfer holds no thread while the pipeline
// works; the pipeline's post-processing thread finishes the call.
//
// Lifecycle: Start (binds, serves; not ready) → SetPipeline (ready) → BeginDrain (readiness
// false, still serving) → Shutdown(deadline): no new calls, every accepted one answered (the
// pipeline must keep running until Shutdown returns), calls still open at the deadline
// cancelled.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <variant>

#include "mogserve/status.h"
#include "open_inference.grpc.pb.h"
#include "pipeline/pipeline.h"
#include "pipeline/stack_description.h"
#include "server/http/body_budget.h"
#include "server/http_error.h"
#include "server/oip.h"
#include "server/server_metrics.h"

namespace mogserve::server::grpc_api {

struct GrpcOptions {
  std::string host = "127.0.0.1";
  int port = 0;            // 0 = any free port (tests)
  std::string api_key;     // "" = none needed
  std::string model_name;  // "" = the engine's model name
  int64_t max_message_bytes = 64 << 20;
  // ModelInfer messages held at once, until answered (503 server_busy → UNAVAILABLE beyond):
  // --max-body-bytes-in-flight, a budget of its own beside the HTTP listener's.
  int64_t max_bytes_in_flight = int64_t{1} << 30;
  RequestLimits limits;
};

// The status map: 400, 415, 422 → INVALID_ARGUMENT; 401 → UNAUTHENTICATED; 404 → NOT_FOUND;
// 409 → ABORTED; 413 and 503 queue_full → RESOURCE_EXHAUSTED; other 503 → UNAVAILABLE;
// 504 → DEADLINE_EXCEEDED; 500 → INTERNAL; anything else → UNKNOWN.
grpc::StatusCode GrpcCodeOf(int http_status, std::string_view code);
grpc::Status ToGrpcStatus(const HttpError& error);  // message "<code>: <message>"
const char* GrpcCodeName(grpc::StatusCode code);    // "OK", "INVALID_ARGUMENT", ... (metrics)

// ModelInfer's request as the shared oip::InferRequest: the model name and version (404), the
// parameters, the IMAGE input and the outputs, with the errors REST gives for the same faults.
std::variant<oip::InferRequest, HttpError> ParseModelInferRequest(
    const inference::ModelInferRequest& request, std::string_view model_name,
    const RequestLimits& limits);

// The response for results that all ended done (check oip::FirstFailure first).
void FillModelInferResponse(const oip::InferRequest& request, const std::string& model_name,
                            const std::vector<pipeline::RequestResult>& results,
                            inference::ModelInferResponse* response);

class GrpcServer {
 public:
  // `metrics` (not owned) must outlive the server.
  GrpcServer(GrpcOptions options, ServerMetrics* metrics);
  ~GrpcServer();  // Shutdown(now) if still serving

  // Binds host:port and starts serving; returns the bound port. Unavailable naming the address
  // when it cannot listen (port in use, bad address).
  StatusOr<int> Start();
  // Makes the service ready: ModelInfer runs on `pipeline` (not owned; must keep running until
  // Shutdown returns). Thread-safe.
  void SetPipeline(pipeline::Pipeline* pipeline, const pipeline::StackDescription& model);
  // Readiness false (ServerReady, ModelReady); everything is still served. Thread-safe.
  void BeginDrain() { draining_.store(true); }
  // Stops taking calls, waits until every accepted call is answered or `deadline` passes
  // (then cancels the rest), and returns. Idempotent.
  void Shutdown(std::chrono::system_clock::time_point deadline);

 private:
  class Service;

  GrpcOptions options_;
  ServerMetrics* metrics_;
  http::BodyBudget budget_;  // ModelInfer messages held until answered
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  std::atomic<bool> draining_{false};
  std::atomic<bool> shut_down_{false};
};

}  // namespace mogserve::server::grpc_api
