// The server's video streams: a video::StreamRegistry on the serving pipeline, holding the
// streams of --stream ID=URL and --streams-file, handed to the HTTP server for /v1/streams.
// Without video support (MOGSERVE_WITH_VIDEO off) both flags are refused and /v1/streams
// answers 404.
#pragma once

#include <memory>

#include "cli/serving_stack.h"

#ifdef MOGSERVE_WITH_VIDEO
#include "video/stream_ingest.h"
#endif

namespace mogserve::video {
class StreamRegistry;
}
namespace mogserve::server {
class StreamEvents;
}

namespace mogserve::cli {

#ifdef MOGSERVE_WITH_VIDEO
// Every stream's options as `serve` sets them from its flags (timeouts, the no-frame watchdog,
// previews for snapshots): shared with `bench video`, so it measures the server's streams.
video::IngestOptions StreamDefaults(const ServeFlags& flags);
#endif

class ServeStreams {
 public:
  // Checks --stream's ID=URL values and --streams-file's streams before the model loads (a typo
  // should not wait for the warm-up): InvalidArgument naming the flag (and the file's entry and
  // field).
  static Status CheckFlags(const ServeFlags& flags);
  // Starts --stream's streams and serves /v1/streams from them. InvalidArgument naming the
  // flag for a malformed ID=URL, a bad id or URL scheme, or --stream without video support.
  static StatusOr<std::unique_ptr<ServeStreams>> Start(const ServeFlags& flags,
                                                       pipeline::Pipeline& pipeline,
                                                       server::HttpServer& http);
  // Stops every stream. Destroy after the HTTP server's Serve returned.
  ~ServeStreams();

 private:
  ServeStreams();  // out of line: StreamRegistry is incomplete here (and absent without video)
  std::unique_ptr<video::StreamRegistry> registry_;
  std::unique_ptr<server::StreamEvents> events_;  // listens to registry_: stopped first
};

}  // namespace mogserve::cli
