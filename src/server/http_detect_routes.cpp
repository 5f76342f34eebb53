// HttpServer's detection routes: POST /v1/detect, GET /v1/detect/ws, POST /v1/anonymize,
// POST /v2/models/{m}/infer.
// Each parses its transport's request into a pipeline::DetectCall (the one request path,
// pipeline/detect_call.h) and writes the answers back in its own shape.
#include <variant>

#include "json/result_json.h"
#include "options/option_table.h"
#include "server/anonymize_call.h"
#include "server/api_key.h"
#include "server/detect_call.h"
#include "server/detect_websocket.h"
#include "server/http_server.h"
#include "server/oip.h"

namespace mogserve::server {
namespace {

using http::HttpRequest;
using http::HttpResponse;

// The detect options of a WebSocket's URL, and its latest_only flag (not a detect option).
struct WebSocketQuery {
  std::multimap<std::string, std::string> options;
  bool latest_only = false;
};
std::variant<WebSocketQuery, HttpError> ParseWebSocketQuery(
    const std::multimap<std::string, std::string>& query) {
  WebSocketQuery q;
  for (const auto& [name, value] : query) {
    if (name != "latest_only") {
      q.options.emplace(name, value);
    } else if (value == "true" || value == "1" || value == "false" || value == "0") {
      q.latest_only = value == "true" || value == "1";
    } else {
      return HttpError{422, "invalid_parameter",
                       "latest_only: '" + value + "' is not allowed; true or false"};
    }
  }
  DetectParams params;
  if (auto e = ParseDetectOptions(q.options, &params, opt::kHttp)) return *e;
  return q;
}

// POST /v1/detect's answer: one image → its result (or error) with its status; several → 200
// with one entry per image, in order, each failed one carrying its own error (and "status", the
// code it would have had alone).
// With crop_size, each face with five points carries its aligned crop (`pictures`).
HttpResponse DetectResponse(const DetectRequest& request,
                            const std::vector<pipeline::RequestResult>& results,
                            const KeptPictures& pictures) {
  const bool modelscope = request.params.modelscope_format();
  const auto body = [&](size_t i) {
    nlohmann::json b = ResultBody(results[i], modelscope);
    if (pictures) AddCrops(results[i], (*pictures)[i], *request.params.crop_size, b);
    return b;
  };
  if (!request.many) {
    const auto [status, code] = HttpStatusOf(results[0]);
    HttpResponse r = JsonResponse(body(0), status);
    if (status == 503) r.SetHeader("Retry-After", "1");
    return r;
  }
  nlohmann::json list = nlohmann::json::array();
  for (size_t i = 0; i < results.size(); ++i) {
    nlohmann::json entry = body(i);
    entry["name"] = request.images[i].name;
    entry["status"] = HttpStatusOf(results[i]).first;
    list.push_back(std::move(entry));
  }
  return JsonResponse({{"results", list}});
}

}  // namespace

void HttpServer::Detect(HttpRequest request, const http::Responder& respond) {
  pipeline::Pipeline* pipeline = pipeline_.load();
  if (pipeline == nullptr) return respond(NotReady());
  ParsedDetectRequest parsed = ParseDetectRequest(
      request.Header("Content-Type"), std::move(request.body), request.query, options_.limits);
  if (parsed.error) return respond(RouteError(Route::Errors::kMogserve, *parsed.error));
  KeptPictures pictures = KeepForCrops(parsed.request.images, parsed.request.params);
  pipeline::DetectCall call =
      MakeDetectCall(parsed.request.images, parsed.request.params, Client(request));
  // The images' bytes stay counted against the in-flight budget until the answer: requests
  // still decoding hold them.
  auto detect = std::make_shared<const DetectRequest>(std::move(parsed.request));
  auto lease = std::make_shared<http::BodyLease>(std::move(request.body_lease));
  pipeline::SubmitAll(*pipeline, std::move(call),
                      [detect, respond, lease, pictures = std::move(pictures)](
                          std::vector<pipeline::RequestResult> results) {
                        respond(DetectResponse(*detect, results, pictures));
                      });
}

void HttpServer::Anonymize(HttpRequest request, const http::Responder& respond) {
  pipeline::Pipeline* pipeline = pipeline_.load();
  if (pipeline == nullptr) return respond(NotReady());
  auto options = TakeAnonymizeOptions(request.query);
  if (auto* e = std::get_if<HttpError>(&options)) {
    return respond(RouteError(Route::Errors::kMogserve, *e));
  }
  ParsedDetectRequest parsed = ParseDetectRequest(
      request.Header("Content-Type"), std::move(request.body), request.query, options_.limits);
  if (parsed.error) return respond(RouteError(Route::Errors::kMogserve, *parsed.error));
  // The pictures are read again to be covered: a copy of each goes with the request.
  auto pictures = std::make_shared<std::vector<std::vector<uint8_t>>>();
  for (const ImagePart& image : parsed.request.images) pictures->push_back(image.bytes);
  pipeline::DetectCall call =
      MakeDetectCall(parsed.request.images, parsed.request.params, Client(request));
  auto detect = std::make_shared<const DetectRequest>(std::move(parsed.request));
  auto lease = std::make_shared<http::BodyLease>(std::move(request.body_lease));
  pipeline::SubmitAll(
      *pipeline, std::move(call),
      [detect, respond, lease, pictures, how = std::get<image::AnonymizeOptions>(options)](
          std::vector<pipeline::RequestResult> results) {
        respond(AnonymizeResponse(*detect, results, *pictures, how));
      });
}

std::optional<HttpResponse> HttpServer::ScreenDetectWebSocket(const HttpRequest& head) const {
  auto query = ParseWebSocketQuery(head.query);
  if (auto* e = std::get_if<HttpError>(&query)) return RouteError(Route::Errors::kMogserve, *e);
  return std::nullopt;
}

std::unique_ptr<http::WebSocketHandler> HttpServer::AcceptDetectWebSocket(
    const HttpRequest& head, std::shared_ptr<http::WebSocketPeer> peer) {
  pipeline::Pipeline* pipeline = pipeline_.load();
  if (pipeline == nullptr) return nullptr;
  auto query = std::get<WebSocketQuery>(ParseWebSocketQuery(head.query));  // Screen checked it
  DetectWebSocketOptions o;
  o.query = std::move(query.options);
  o.latest_only = query.latest_only;
  // Each socket is its own client: its frames supersede only each other.
  o.client = "ws:" + std::to_string(next_socket_id_.fetch_add(1)) + ":" + head.remote_addr;
  o.limits = options_.limits;
  return std::make_unique<DetectWebSocket>(pipeline, std::move(peer), std::move(o));
}

std::optional<HttpResponse> HttpServer::ScreenModel(const RouteParams& params) const {
  const std::string_view model = params.Get("model");
  const std::string_view version = params.Get("version");
  if (model == ModelName() && (version.empty() || version == "1")) return std::nullopt;
  return oip::ErrorResponse({404, "model_not_found",
                             "no model '" + std::string(model) + "'" +
                                 (version.empty() ? "" : " version " + std::string(version)) +
                                 " here; this server runs '" + ModelName() + "', version 1"});
}

void HttpServer::Infer(HttpRequest request, const http::Responder& respond) {
  pipeline::Pipeline* pipeline = pipeline_.load();
  if (pipeline == nullptr) return respond(NotReady(Route::Errors::kOip));
  auto parsed = oip::ParseInferRequest(request.Header("Inference-Header-Content-Length"),
                                       request.body, options_.limits);
  if (auto* e = std::get_if<HttpError>(&parsed)) return respond(oip::ErrorResponse(*e));
  auto infer = std::make_shared<oip::InferRequest>(std::move(std::get<oip::InferRequest>(parsed)));
  std::string().swap(request.body);  // the images are copies: the body goes now
  if (infer->id.empty()) infer->id = std::string(request.Header("X-Request-Id"));
  pipeline::DetectCall call = MakeDetectCall(infer->images, infer->params, Client(request));
  auto lease = std::make_shared<http::BodyLease>(std::move(request.body_lease));
  pipeline::SubmitAll(
      *pipeline, std::move(call),
      [infer, name = ModelName(), respond, lease](std::vector<pipeline::RequestResult> results) {
        respond(oip::InferResponse(*infer, name, results));
      });
}

std::string HttpServer::Client(const HttpRequest& request) const {
  return ClientOf(options_.api_key, request.remote_addr);
}

std::string HttpServer::ModelName() const {
  return options_.model_name.empty() ? model_.info.model : options_.model_name;
}

}  // namespace mogserve::server
