// StreamRegistry: the server's named video streams (`serve --stream ID=URL`, /v1/streams), each a
// StreamIngest on the one shared pipeline, added and removed at run time. Streams are cameras:
// every one is paced (a file plays at its own rate, like a camera), latest-only, and never
// blocks the pipeline's other clients. Plain structs out; the HTTP layer writes the JSON.
// Thread-safe.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "mogserve/status.h"
#include "video/stream_ingest.h"

namespace mogserve::video {

struct StreamConfig {
  std::string id;   // [A-Za-z0-9_.-]{1,64}
  std::string url;  // a path or URL (source_url.h); may hold credentials, never shown
  double detect_fps = 0;
  // rtsp://, rtmp://, tcp://: wait there for an encoder to push (VideoSourceOptions::listen),
  // as long as it takes; after each publisher, listen again.
  bool listen = false;
  bool track = false;        // follow faces over time (IngestOptions::track, default options)
  bool every_frame = false;  // deliver undetected frames too (IngestOptions::every_frame)
};

struct StreamInfo {
  std::string id;
  std::string url;  // credentials removed
  double detect_fps = 0;
  bool listen = false;
  bool track = false;
  bool every_frame = false;
  StreamState state = StreamState::kConnecting;
  std::optional<VideoError> error;  // kFailed: why
  IngestCounters counters;
  IngestStatus status;      // state, errors, source, rates, latency (counters and state as above)
  int64_t last_frame = -1;  // the last detected frame, its faces and latency
  int last_faces = 0;
  double last_latency_ms = 0;
};

class StreamRegistry {
 public:
  // `defaults` (timeouts, codecs, frame timeout, detect options) apply to every stream; its id,
  // url and detect_fps are each stream's own. `pipeline` must outlive the registry.
  StreamRegistry(pipeline::Pipeline& pipeline, IngestOptions defaults, int max_streams);
  // Stops every stream and waits for them.
  ~StreamRegistry();

  // Starts a stream. InvalidArgument: a malformed id, a negative detect_fps; Unsupported: a URL
  // scheme we do not read; FailedPrecondition: the id exists; ResourceExhausted: max_streams
  // reached. The source is contacted on the stream's thread, after Add returns.
  Status Add(const StreamConfig& config);
  // Stops a stream (an open or read in progress is interrupted) and forgets it; NotFound.
  Status Remove(const std::string& id);
  // Stops a stream and starts it again from its configuration, with fresh counters: how a
  // `failed` stream is retried once its cause is mended. NotFound.
  Status Restart(const std::string& id);
  std::vector<StreamInfo> List() const;
  StatusOr<StreamInfo> Get(const std::string& id) const;
  // The stream's latest detected frame (with its preview when the defaults ask for previews);
  // null before the first. NotFound.
  StatusOr<std::shared_ptr<const FrameResult>> Latest(const std::string& id) const;

  // Called with every detected frame of every stream, in each stream's frame order, from
  // pipeline threads under the stream's lock: it must be quick and must not call back into the
  // registry. Replaces the previous listener; null: none.
  using FrameListener = std::function<void(const FrameResult&)>;
  void SetFrameListener(FrameListener listener);

 private:
  struct Stream;
  std::shared_ptr<Stream> Start(const StreamConfig& config) const;

  pipeline::Pipeline& pipeline_;
  const IngestOptions defaults_;
  const int max_streams_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Stream>> streams_;  // guarded by mu_
  mutable std::mutex listener_mu_;
  std::shared_ptr<const FrameListener> listener_;  // guarded by listener_mu_
};

}  // namespace mogserve::video
