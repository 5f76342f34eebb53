#include "video/stream_registry.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>

namespace mogserve::video {
namespace {

bool ValidId(const std::string& id) {
  return !id.empty() && id.size() <= 64 && std::all_of(id.begin(), id.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
  });
}

}  // namespace

// The ingest and what its results last said. The ingest's callback writes `last`; it is created
// after `last` and destroyed before it.
struct StreamRegistry::Stream {
  StreamConfig config;
  mutable std::mutex mu;
  StreamInfo last;  // last_frame, last_faces, last_latency_ms; guarded by mu
  std::shared_ptr<const FrameResult> latest;  // guarded by mu
  std::unique_ptr<StreamIngest> ingest;

  StreamInfo Last() const {
    std::lock_guard<std::mutex> lock(mu);
    return last;
  }
};

StreamRegistry::StreamRegistry(pipeline::Pipeline& pipeline, IngestOptions defaults,
                               int max_streams)
    : pipeline_(pipeline), defaults_(std::move(defaults)), max_streams_(max_streams) {
  // spdlog makes its registry on the first log call; make it here, before the streams' threads
  // log at the same moment (that first construction is not ordered between them).
  spdlog::default_logger_raw();
}

StreamRegistry::~StreamRegistry() {
  std::map<std::string, std::shared_ptr<Stream>> streams;
  {
    std::lock_guard<std::mutex> lock(mu_);
    streams.swap(streams_);
  }
  for (auto& [id, s] : streams) s->ingest->Stop();  // all at once, then wait for each
  streams.clear();
}

Status StreamRegistry::Add(const StreamConfig& config) {
  if (!ValidId(config.id)) {
    return InvalidArgument("stream id '" + RedactCredentials(config.id) +
                           "' is not 1 to 64 of A-Z, a-z, 0-9, '_', '-', '.'");
  }
  if (config.id == "events" || config.id == "ws") {  // /v1/streams/events, /v1/streams/ws
    return InvalidArgument("stream id '" + config.id + "' is reserved");
  }
  StatusOr<SourceScheme> scheme = ParseSourceScheme(config.url);
  if (!scheme.ok()) return Unsupported(scheme.status().message());
  if (!(config.detect_fps >= 0)) return InvalidArgument("detect_fps must be >= 0");
  if (config.listen && !ListenAllowed(*scheme)) {
    return InvalidArgument(
        "listen is for rtsp://, rtmp:// and tcp:// URLs (an encoder pushing "
        "to them), not " +
        RedactCredentials(config.url));
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (streams_.count(config.id) > 0) {
    return FailedPrecondition("stream '" + config.id + "' exists already");
  }
  if (static_cast<int>(streams_.size()) >= max_streams_) {
    return ResourceExhausted("already " + std::to_string(max_streams_) +
                             " streams (--max-streams); remove one first");
  }
  streams_.emplace(config.id, Start(config));
  return Status::Ok();
}

std::shared_ptr<StreamRegistry::Stream> StreamRegistry::Start(const StreamConfig& config) const {
  IngestOptions o = defaults_;
  o.id = config.id;
  o.source.url = config.url;
  o.detect_fps = config.detect_fps;
  o.source.listen = config.listen;
  if (config.track) o.track = track::TrackerOptions{};
  o.every_frame = config.every_frame;
  // A listener waits for its publisher without a deadline of its own (a day, then it listens
  // again): the reader's interrupt callback still ends the wait at once on DELETE or shutdown.
  if (config.listen) o.source.timeouts.open = std::chrono::hours(24);
  o.realtime = true;
  o.reconnect = true;
  auto stream = std::make_shared<Stream>();
  stream->config = config;
  Stream* s = stream.get();
  s->ingest =
      std::make_unique<StreamIngest>(pipeline_, std::move(o), [this, s](const FrameResult& r) {
        {
          std::lock_guard<std::mutex> lock(s->mu);
          s->last.last_frame = r.frame.index;
          s->last.last_faces = static_cast<int>(r.result.result.faces.size());
          s->last.last_latency_ms = r.latency_ms;
          s->latest = std::make_shared<const FrameResult>(r);
        }
        std::shared_ptr<const FrameListener> listener;
        {
          std::lock_guard<std::mutex> lock(listener_mu_);
          listener = listener_;
        }
        if (listener && *listener) (*listener)(r);
      });
  return stream;
}

Status StreamRegistry::Remove(const std::string& id) {
  std::shared_ptr<Stream> stream;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = streams_.find(id);
    if (it == streams_.end()) return NotFound("no stream '" + id + "'");
    stream = std::move(it->second);
    streams_.erase(it);
  }
  stream->ingest->Stop();
  stream->ingest->Wait();
  return Status::Ok();
}

Status StreamRegistry::Restart(const std::string& id) {
  std::shared_ptr<Stream> old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = streams_.find(id);
    if (it == streams_.end()) return NotFound("no stream '" + id + "'");
    old = it->second;
  }
  // Stopped outside the lock: the other streams stay listed and served meanwhile.
  old->ingest->Stop();
  old->ingest->Wait();
  std::lock_guard<std::mutex> lock(mu_);
  auto it = streams_.find(id);
  if (it == streams_.end() || it->second != old) {
    return NotFound("stream '" + id + "' was removed or restarted meanwhile");
  }
  it->second = Start(old->config);
  return Status::Ok();
}

StatusOr<std::shared_ptr<const FrameResult>> StreamRegistry::Latest(const std::string& id) const {
  std::shared_ptr<Stream> stream;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = streams_.find(id);
    if (it == streams_.end()) return NotFound("no stream '" + id + "'");
    stream = it->second;
  }
  std::lock_guard<std::mutex> lock(stream->mu);
  return stream->latest;
}

void StreamRegistry::SetFrameListener(FrameListener listener) {
  auto shared = std::make_shared<const FrameListener>(std::move(listener));
  std::lock_guard<std::mutex> lock(listener_mu_);
  listener_ = std::move(shared);
}

namespace {

// Not under the stream's lock: the ingest calls the result callback (which takes it) under its
// own lock, which counters() takes.
StreamInfo Describe(const StreamConfig& config, const StreamIngest& ingest, StreamInfo last) {
  StreamInfo info = std::move(last);
  info.id = config.id;
  info.url = ingest.display_url();
  info.detect_fps = config.detect_fps;
  info.listen = config.listen;
  info.track = config.track;
  info.every_frame = config.every_frame;
  info.status = ingest.status();
  info.counters = info.status.counters;
  info.state = info.status.state;
  if (info.state == StreamState::kFailed) info.error = info.status.last_error;
  return info;
}

}  // namespace

std::vector<StreamInfo> StreamRegistry::List() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<StreamInfo> out;
  for (const auto& [id, s] : streams_) out.push_back(Describe(s->config, *s->ingest, s->Last()));
  return out;
}

StatusOr<StreamInfo> StreamRegistry::Get(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = streams_.find(id);
  if (it == streams_.end()) return NotFound("no stream '" + id + "'");
  return Describe(it->second->config, *it->second->ingest, it->second->Last());
}

}  // namespace mogserve::video
