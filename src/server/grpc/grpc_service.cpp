#include "server/grpc/grpc_service.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>

#include "common/enum_names.h"
#include "server/answer_status.h"
#include "server/api_key.h"
#include "server/detect_call.h"

namespace mogserve::server::grpc_api {
namespace {

using inference::InferParameter;

HttpError Bad(std::string message, std::string code = "bad_request") {
  return HttpError{400, std::move(code), std::move(message)};
}

// An InferParameter as the JSON value REST would have received.
nlohmann::json ParameterJson(const InferParameter& p) {
  switch (p.parameter_choice_case()) {
    case InferParameter::kBoolParam:
      return p.bool_param();
    case InferParameter::kInt64Param:
      return p.int64_param();
    case InferParameter::kStringParam:
      return p.string_param();
    case InferParameter::kDoubleParam:
      return p.double_param();
    case InferParameter::kUint64Param:
      return p.uint64_param();
    case InferParameter::PARAMETER_CHOICE_NOT_SET:
      break;
  }
  return nullptr;
}

// The IMAGE tensor's elements: raw_input_contents[0] (length-prefixed) or bytes_contents.
std::optional<HttpError> ImageElements(const inference::ModelInferRequest& request,
                                       oip::InferRequest& r) {
  const auto& input = request.inputs(0);
  const bool has_contents = input.has_contents() && input.contents().bytes_contents_size() > 0;
  if (request.raw_input_contents_size() > 0) {
    if (request.raw_input_contents_size() != 1) {
      return Bad("raw_input_contents has " + std::to_string(request.raw_input_contents_size()) +
                 " entries; one per input (IMAGE)");
    }
    if (has_contents) return Bad("IMAGE has both contents and raw_input_contents");
    return oip::SplitBinaryElements(request.raw_input_contents(0), r);
  }
  if (!has_contents) {
    return Bad("IMAGE has neither contents.bytes_contents nor raw_input_contents");
  }
  for (const std::string& bytes : input.contents().bytes_contents()) {
    r.images.push_back({"IMAGE[" + std::to_string(r.images.size()) + "]", ImageBytes(bytes)});
  }
  return std::nullopt;
}

// Only binary_data (a bool, meaningless here: gRPC outputs are always raw) is allowed.
std::optional<HttpError> CheckOutputParameters(
    const inference::ModelInferRequest::InferRequestedOutputTensor& o) {
  for (const auto& [key, value] : o.parameters()) {
    if (key != "binary_data" || value.parameter_choice_case() != InferParameter::kBoolParam) {
      return Bad("output " + o.name() + ": parameter '" + key +
                     "' is not allowed; binary_data (true or false)",
                 "invalid_parameter");
    }
  }
  return std::nullopt;
}

// "ipv4:127.0.0.1:5000" → "127.0.0.1", "ipv6:[::1]:5000" → "::1": the client's address, for the
// scheduler's per-client fairness (as REST's remote address).
std::string PeerAddress(const std::string& peer) {
  std::string_view p = peer;
  const size_t colon = p.find(':');
  if (colon != std::string_view::npos &&
      (p.substr(0, colon) == "ipv4" || p.substr(0, colon) == "ipv6")) {
    p.remove_prefix(colon + 1);
  }
  if (!p.empty() && p.front() == '[') {
    const size_t close = p.find(']');
    return std::string(p.substr(1, close == std::string_view::npos ? p.npos : close - 1));
  }
  return std::string(p.substr(0, p.rfind(':')));
}

}  // namespace

// server::GrpcCode (answer_status.h) mirrors grpc::StatusCode.
static_assert([] {
  using G = grpc::StatusCode;
  using S = server::GrpcCode;
  constexpr std::pair<G, S> kSame[] = {
      {G::OK, S::kOk}, {G::CANCELLED, S::kCancelled}, {G::UNKNOWN, S::kUnknown},
      {G::INVALID_ARGUMENT, S::kInvalidArgument}, {G::DEADLINE_EXCEEDED, S::kDeadlineExceeded},
      {G::NOT_FOUND, S::kNotFound}, {G::RESOURCE_EXHAUSTED, S::kResourceExhausted},
      {G::ABORTED, S::kAborted}, {G::INTERNAL, S::kInternal}, {G::UNAVAILABLE, S::kUnavailable},
      {G::UNAUTHENTICATED, S::kUnauthenticated}};
  for (const auto& [g, s] : kSame) {
    if (static_cast<int>(g) != static_cast<int>(s)) return false;
  }
  return true;
}());

grpc::StatusCode GrpcCodeOf(int http_status, std::string_view code) {
  return static_cast<grpc::StatusCode>(server::GrpcCodeOf(http_status, code));
}

grpc::Status ToGrpcStatus(const HttpError& error) {
  return grpc::Status(GrpcCodeOf(error.status, error.code), error.code + ": " + error.message);
}

constexpr EnumName<grpc::StatusCode> kGrpcCodeNames[] = {
    {grpc::StatusCode::OK, "OK"},
    {grpc::StatusCode::CANCELLED, "CANCELLED"},
    {grpc::StatusCode::INVALID_ARGUMENT, "INVALID_ARGUMENT"},
    {grpc::StatusCode::DEADLINE_EXCEEDED, "DEADLINE_EXCEEDED"},
    {grpc::StatusCode::NOT_FOUND, "NOT_FOUND"},
    {grpc::StatusCode::RESOURCE_EXHAUSTED, "RESOURCE_EXHAUSTED"},
    {grpc::StatusCode::ABORTED, "ABORTED"},
    {grpc::StatusCode::INTERNAL, "INTERNAL"},
    {grpc::StatusCode::UNAVAILABLE, "UNAVAILABLE"},
    {grpc::StatusCode::UNAUTHENTICATED, "UNAUTHENTICATED"}};

const char* GrpcCodeName(grpc::StatusCode code) {
  return NameOf(kGrpcCodeNames, code, "UNKNOWN");
}

std::variant<oip::InferRequest, HttpError> ParseModelInferRequest(
    const inference::ModelInferRequest& request, std::string_view model_name,
    const RequestLimits& limits) {
  const std::string& version = request.model_version();
  if (request.model_name() != model_name || !(version.empty() || version == "1")) {
    return HttpError{404, "model_not_found",
                     "no model '" + request.model_name() + "'" +
                         (version.empty() ? "" : " version " + version) +
                         " here; this server runs '" + std::string(model_name) + "', version 1"};
  }
  oip::InferRequest r;
  r.id = request.id();
  nlohmann::json parameters = nlohmann::json::object();
  for (const auto& [key, value] : request.parameters()) parameters[key] = ParameterJson(value);
  bool binary_all = false;  // accepted as REST does; gRPC outputs are raw anyway
  if (auto e = oip::ApplyParameters(parameters, r, &binary_all)) return *e;
  if (request.inputs_size() != 1) {
    return Bad("inputs must hold exactly one input, IMAGE (BYTES, shape [N])");
  }
  const auto& input = request.inputs(0);
  int64_t n = 0;
  if (auto e = oip::CheckImageTensor(
          input.name(), input.datatype(),
          std::vector<int64_t>(input.shape().begin(), input.shape().end()), limits, &n)) {
    return *e;
  }
  if (!input.parameters().empty()) {
    return Bad("IMAGE: parameter '" + input.parameters().begin()->first +
                   "' is not supported (none are, over gRPC)",
               "invalid_parameter");
  }
  if (auto e = ImageElements(request, r)) return *e;
  if (auto e = oip::CheckImageCount(n, r)) return *e;
  if (request.outputs_size() == 0) oip::AddAllOutputs(false, r);
  for (const auto& o : request.outputs()) {
    if (auto e = CheckOutputParameters(o)) return *e;
    if (auto e = oip::AddOutput(o.name(), false, r)) return *e;
  }
  return r;
}

void FillModelInferResponse(const oip::InferRequest& request, const std::string& model_name,
                            const std::vector<pipeline::RequestResult>& results,
                            inference::ModelInferResponse* response) {
  response->set_model_name(model_name);
  response->set_model_version("1");
  if (!request.id.empty()) response->set_id(request.id);
  for (const oip::OutputTensor& t : oip::OutputTensors(request, results)) {
    auto* out = response->add_outputs();
    out->set_name(t.name);
    out->set_datatype(t.datatype);
    for (int64_t d : t.shape) out->add_shape(d);
    response->add_raw_output_contents(t.Bytes());
  }
}

// The service's handlers. Every handler finishes its reactor exactly once; ModelInfer from the
// pipeline's callback.
class GrpcServer::Service final : public inference::GRPCInferenceService::CallbackService {
 public:
  Service(const GrpcOptions& options, ServerMetrics* metrics, const std::atomic<bool>& draining,
          http::BodyBudget* budget)
      : options_(options), metrics_(metrics), draining_(draining), budget_(budget) {}

  void SetPipeline(pipeline::Pipeline* pipeline, const pipeline::StackDescription& model) {
    model_ = model;
    model_name_ = options_.model_name.empty() ? model.info.model : options_.model_name;
    pipeline_.store(pipeline);
  }

  grpc::ServerUnaryReactor* ServerLive(grpc::CallbackServerContext* context,
                                       const inference::ServerLiveRequest*,
                                       inference::ServerLiveResponse* response) override {
    response->set_live(true);
    return Finish(context, "ServerLive", grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* ServerReady(grpc::CallbackServerContext* context,
                                        const inference::ServerReadyRequest*,
                                        inference::ServerReadyResponse* response) override {
    response->set_ready(Ready());
    return Finish(context, "ServerReady", grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* ModelReady(grpc::CallbackServerContext* context,
                                       const inference::ModelReadyRequest* request,
                                       inference::ModelReadyResponse* response) override {
    if (auto e = CheckKey(context)) return Finish(context, "ModelReady", ToGrpcStatus(*e));
    if (pipeline_.load() != nullptr) {  // while loading, any name is "not ready" (as REST)
      if (auto e = CheckModel(request->name(), request->version())) {
        return Finish(context, "ModelReady", ToGrpcStatus(*e));
      }
    }
    response->set_ready(Ready());
    return Finish(context, "ModelReady", grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* ServerMetadata(grpc::CallbackServerContext* context,
                                           const inference::ServerMetadataRequest*,
                                           inference::ServerMetadataResponse* response) override {
    if (auto e = CheckKey(context)) return Finish(context, "ServerMetadata", ToGrpcStatus(*e));
    const nlohmann::json meta = oip::ServerMetadata();
    response->set_name(meta["name"].get<std::string>());
    response->set_version(meta["version"].get<std::string>());
    for (const auto& x : meta["extensions"]) response->add_extensions(x.get<std::string>());
    return Finish(context, "ServerMetadata", grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* ModelMetadata(grpc::CallbackServerContext* context,
                                          const inference::ModelMetadataRequest* request,
                                          inference::ModelMetadataResponse* response) override {
    if (auto e = CheckKey(context)) return Finish(context, "ModelMetadata", ToGrpcStatus(*e));
    if (auto e = CheckReadyModel(request->name(), request->version())) {
      return Finish(context, "ModelMetadata", ToGrpcStatus(*e));
    }
    const nlohmann::json meta = oip::ModelMetadata(
        model_name_, model_.info.device == "cpu" ? "pytorch_libtorch" : "mogserve_cudnn");
    response->set_name(meta["name"].get<std::string>());
    for (const auto& v : meta["versions"]) response->add_versions(v.get<std::string>());
    response->set_platform(meta["platform"].get<std::string>());
    for (const char* side : {"inputs", "outputs"}) {
      for (const auto& t : meta[side]) {
        auto* out = side[0] == 'i' ? response->add_inputs() : response->add_outputs();
        out->set_name(t["name"].get<std::string>());
        out->set_datatype(t["datatype"].get<std::string>());
        for (const auto& d : t["shape"]) out->add_shape(d.get<int64_t>());
      }
    }
    return Finish(context, "ModelMetadata", grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* ModelInfer(grpc::CallbackServerContext* context,
                                       const inference::ModelInferRequest* request,
                                       inference::ModelInferResponse* response) override {
    constexpr const char* kMethod = "ModelInfer";
    if (auto e = CheckKey(context)) return Finish(context, kMethod, ToGrpcStatus(*e));
    pipeline::Pipeline* pipeline = pipeline_.load();
    if (pipeline == nullptr) return Finish(context, kMethod, ToGrpcStatus(NotReady()));
    // The message stays in memory until the answer (the request owns the pictures' bytes).
    auto lease = std::make_shared<http::BodyLease>(budget_);
    if (!lease->Grow(static_cast<int64_t>(request->ByteSizeLong()))) {
      return Finish(
          context, kMethod,
          ToGrpcStatus({503, "server_busy",
                        "the server holds too many ModelInfer messages at once "
                        "(max_body_bytes_in_flight " +
                            std::to_string(budget_->capacity_bytes()) + " bytes); retry shortly"}));
    }
    auto parsed = ParseModelInferRequest(*request, model_name_, options_.limits);
    if (auto* e = std::get_if<HttpError>(&parsed)) {
      return Finish(context, kMethod, ToGrpcStatus(*e));
    }
    auto infer =
        std::make_shared<oip::InferRequest>(std::move(std::get<oip::InferRequest>(parsed)));
    if (auto e = ApplyDeadline(context->deadline(), infer->params)) {
      return Finish(context, kMethod, ToGrpcStatus(*e));
    }
    const std::string client = ClientOf(options_.api_key, PeerAddress(context->peer()));
    pipeline::DetectCall call = MakeDetectCall(infer->images, infer->params, client);
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    pipeline::SubmitAll(
        *pipeline, std::move(call),
        [this, reactor, response, infer, lease](std::vector<pipeline::RequestResult> results) {
          grpc::Status status = grpc::Status::OK;
          if (auto e = oip::FirstFailure(*infer, results)) {
            status = ToGrpcStatus(*e);
          } else {
            FillModelInferResponse(*infer, model_name_, results, response);
          }
          metrics_->OnGrpcResponse(kMethod, GrpcCodeName(status.error_code()));
          lease->Release();
          reactor->Finish(status);  // the call, request and response may be gone after this
        });
    return reactor;
  }

 private:
  static HttpError NotReady() {
    return {503, "not_ready", "the model is still loading and warming up"};
  }

  bool Ready() const { return pipeline_.load() != nullptr && !draining_.load(); }

  grpc::ServerUnaryReactor* Finish(grpc::CallbackServerContext* context, const char* method,
                                   const grpc::Status& status) {
    metrics_->OnGrpcResponse(method, GrpcCodeName(status.error_code()));
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(status);
    return reactor;
  }

  std::optional<HttpError> CheckKey(const grpc::CallbackServerContext* context) const {
    if (options_.api_key.empty()) return std::nullopt;
    const auto& metadata = context->client_metadata();
    const auto it = metadata.find("authorization");
    if (it == metadata.end()) {
      return HttpError{401, "unauthorized",
                       "this server needs an API key: send the metadata 'authorization: Bearer "
                       "<key>'"};
    }
    if (!BearerKeyMatches(std::string_view(it->second.data(), it->second.size()),
                          options_.api_key)) {
      return HttpError{401, "unauthorized",
                       "the API key is not valid (send 'authorization: Bearer <key>')"};
    }
    return std::nullopt;
  }

  std::optional<HttpError> CheckModel(const std::string& name, const std::string& version) const {
    if (name == model_name_ && (version.empty() || version == "1")) return std::nullopt;
    return HttpError{404, "model_not_found",
                     "no model '" + name + "'" + (version.empty() ? "" : " version " + version) +
                         " here; this server runs '" + model_name_ + "', version 1"};
  }

  std::optional<HttpError> CheckReadyModel(const std::string& name,
                                           const std::string& version) const {
    if (pipeline_.load() == nullptr) return NotReady();
    return CheckModel(name, version);
  }

  // The client's deadline as the request's timeout (which may only shorten the server's).
  static std::optional<HttpError> ApplyDeadline(std::chrono::system_clock::time_point deadline,
                                                DetectParams& params) {
    if (deadline == std::chrono::system_clock::time_point::max()) return std::nullopt;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::system_clock::now());
    if (left.count() <= 0) {
      return HttpError{504, "deadline_exceeded", "the call's deadline passed before it was run"};
    }
    params.timeout_ms = std::min<int64_t>(params.timeout_ms.value_or(left.count()), left.count());
    return std::nullopt;
  }

  const GrpcOptions& options_;
  ServerMetrics* metrics_;
  const std::atomic<bool>& draining_;
  http::BodyBudget* budget_;
  std::atomic<pipeline::Pipeline*> pipeline_{nullptr};
  pipeline::StackDescription model_;  // written before pipeline_ is published
  std::string model_name_;  // same
};

GrpcServer::GrpcServer(GrpcOptions options, ServerMetrics* metrics)
    : options_(std::move(options)),
      metrics_(metrics),
      budget_(options_.max_bytes_in_flight),
      service_(std::make_unique<Service>(options_, metrics_, draining_, &budget_)) {}

GrpcServer::~GrpcServer() {
  Shutdown(std::chrono::system_clock::now());
}

StatusOr<int> GrpcServer::Start() {
  const std::string host =
      options_.host.find(':') != std::string::npos ? "[" + options_.host + "]" : options_.host;
  const std::string address = host + ":" + std::to_string(options_.port);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(service_.get());
  const int max_message = static_cast<int>(
      std::min<int64_t>(options_.max_message_bytes, std::numeric_limits<int>::max()));
  builder.SetMaxReceiveMessageSize(max_message);
  builder.SetMaxSendMessageSize(-1);
  // Without this gRPC binds with SO_REUSEPORT, and a second server on the same port would start
  // "fine" and share the traffic.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || port == 0) {
    server_.reset();
    return Status(StatusCode::kUnavailable,
                  "cannot listen for gRPC on " + address + " (port in use, or a bad address)");
  }
  return port;
}

void GrpcServer::SetPipeline(pipeline::Pipeline* pipeline, const pipeline::StackDescription& model) {
  service_->SetPipeline(pipeline, model);
}

void GrpcServer::Shutdown(std::chrono::system_clock::time_point deadline) {
  if (server_ == nullptr || shut_down_.exchange(true)) return;
  draining_.store(true);
  server_->Shutdown(deadline);
  server_->Wait();
}

}  // namespace mogserve::server::grpc_api
