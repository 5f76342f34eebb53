#include "server/detect_websocket.h"

#include <mutex>

#include "json/result_json.h"
#include "server/detect_call.h"

namespace mogserve::server {

// What the pipeline's callbacks share with the socket's handler: the peer, the images in flight
// and whether reading waits for one of them to finish.
struct DetectWebSocket::State {
  std::shared_ptr<http::WebSocketPeer> peer;
  DetectWebSocketOptions options;
  std::mutex mu;
  int in_flight = 0;    // guarded by mu
  bool paused = false;  // guarded by mu

  void Answer(nlohmann::json body, int64_t seq, int index, bool many) {
    body["seq"] = seq;
    if (many) body["index"] = index;
    peer->Send(ToJsonLine(body));
  }
  void Finished() {
    bool resume = false;
    {
      std::lock_guard<std::mutex> lock(mu);
      --in_flight;
      if (paused && in_flight < kMaxInFlight) {
        paused = false;
        resume = true;
      }
    }
    if (resume) peer->Resume();
  }
};

DetectWebSocket::DetectWebSocket(pipeline::Pipeline* pipeline,
                                 std::shared_ptr<http::WebSocketPeer> peer,
                                 DetectWebSocketOptions options)
    : pipeline_(pipeline), state_(std::make_shared<State>()) {
  state_->peer = std::move(peer);
  state_->options = std::move(options);
}

DetectWebSocket::~DetectWebSocket() = default;

bool DetectWebSocket::OnMessage(std::string message, bool binary) {
  const int64_t seq = next_seq_++;
  const DetectWebSocketOptions& o = state_->options;
  ParsedDetectRequest parsed =
      ParseDetectRequest(binary ? "application/octet-stream" : "application/json",
                         std::move(message), o.query, o.limits);
  if (parsed.error) {
    nlohmann::json body = ErrorToJson(parsed.error->code, parsed.error->message);
    body["status"] = parsed.error->status;
    state_->Answer(std::move(body), seq, 0, false);
    return true;
  }
  DetectParams params = parsed.request.params;
  if (o.latest_only && !params.priority) params.priority = "stream";
  const bool many = parsed.request.many;
  const int count = static_cast<int>(parsed.request.images.size());
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->in_flight += count;
  }
  KeptPictures pictures = KeepForCrops(parsed.request.images, params);
  const int crop_size = params.crop_size.value_or(0);
  pipeline::DetectCall call = MakeDetectCall(parsed.request.images, params, o.client);
  call.latest_only = o.latest_only;
  const bool modelscope = params.modelscope_format();
  pipeline::SubmitEach(
      *pipeline_, std::move(call),
      [state = state_, seq, many, modelscope, pictures = std::move(pictures), crop_size](
          size_t i, pipeline::RequestResult r) {
        nlohmann::json body = ResultBody(r, modelscope);
        if (pictures) AddCrops(r, (*pictures)[i], crop_size, body);
        if (r.outcome != scheduler::Outcome::kDone) body["status"] = HttpStatusOf(r).first;
        state->Answer(std::move(body), seq, static_cast<int>(i), many);
        state->Finished();
      });
  std::lock_guard<std::mutex> lock(state_->mu);
  if (state_->in_flight < kMaxInFlight) return true;
  state_->paused = true;
  return false;
}

void DetectWebSocket::OnClose() {}

}  // namespace mogserve::server
