// StreamRegistry: the server's named video streams (`serve --stream ID=URL`, /v1/streams), each a
// StreamIngest on the one shared pipeline, added and removed at run time. Streams are cameras:
// every one is paced (a file plays at its own rate, like a camera), latest-only, and never
// blocks the pipeline's other clients. Plain structs out; the HTTP layer writes the JSON.
// Thread-safe.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "mogserve/status.h"
#include "video/stream_ingest.h"

namespace mogserve::video {

enum class StreamState { kConnecting, kRunning, kEnded, kFailed };
// "connecting", "running", "ended", "failed".
const char* StreamStateName(StreamState state);

struct StreamConfig {
  std::string id;   // [A-Za-z0-9_.-]{1,64}
  std::string url;  // a path or URL (source_url.h); may hold credentials, never shown
  double detect_fps = 0;
};

struct StreamInfo {
  std::string id;
  std::string url;  // credentials removed
  StreamState state = StreamState::kConnecting;
  std::optional<VideoError> error;  // kFailed: why
  IngestCounters counters;
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
  std::vector<StreamInfo> List() const;
  StatusOr<StreamInfo> Get(const std::string& id) const;

 private:
  struct Stream;

  pipeline::Pipeline& pipeline_;
  const IngestOptions defaults_;
  const int max_streams_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Stream>> streams_;  // guarded by mu_
};

}  // namespace mogserve::video
