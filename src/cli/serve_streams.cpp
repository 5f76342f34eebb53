#include "cli/serve_streams.h"

#include <spdlog/spdlog.h>

#include "server/stream_events.h"

#ifdef MOGSERVE_WITH_VIDEO
#include "video/stream_registry.h"
#else
namespace mogserve::video {
// Without video the registry pointer stays null, but its deleter still needs a complete type.
class StreamRegistry {};
}  // namespace mogserve::video
#endif

namespace mogserve::cli {

#ifdef MOGSERVE_WITH_VIDEO

namespace {

std::chrono::milliseconds Millis(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000 + 0.5));
}

// "ID=URL" → its parts; the URL's scheme must be one we read.
StatusOr<video::StreamConfig> ParseStreamFlag(const std::string& spec) {
  const size_t eq = spec.find('=');
  if (eq == std::string::npos) {
    return InvalidArgument("--stream " + video::RedactCredentials(spec) + ": expected ID=URL");
  }
  video::StreamConfig config{spec.substr(0, eq), spec.substr(eq + 1)};
  StatusOr<video::SourceScheme> scheme = video::ParseSourceScheme(config.url);
  if (!scheme.ok()) {
    return InvalidArgument("--stream " + video::RedactCredentials(config.id) + ": " +
                           scheme.status().message());
  }
  return config;
}

}  // namespace

Status ServeStreams::CheckFlags(const ServeFlags& flags) {
  for (const std::string& spec : flags.streams) {
    MOGSERVE_RETURN_IF_ERROR(ParseStreamFlag(spec).status());
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<ServeStreams>> ServeStreams::Start(const ServeFlags& flags,
                                                            pipeline::Pipeline& pipeline,
                                                            server::HttpServer& http) {
  video::IngestOptions defaults;
  defaults.source.timeouts = {Millis(flags.stream_open_timeout_s),
                              Millis(flags.stream_io_timeout_s)};
  defaults.no_frame_timeout = Millis(flags.stream_no_frame_timeout_s);
  defaults.preview_max_side_px = 640;  // snapshots and MJPEG
  defaults.source.hwaccel = video::ParseHwAccel(flags.hwaccel).value_or(video::HwAccel::kNone);
  std::unique_ptr<ServeStreams> out(new ServeStreams());
  out->registry_ =
      std::make_unique<video::StreamRegistry>(pipeline, std::move(defaults), flags.max_streams);
  out->events_ =
      std::make_unique<server::StreamEvents>(*out->registry_, flags.max_stream_subscribers);
  for (const std::string& spec : flags.streams) {
    MOGSERVE_ASSIGN_OR_RETURN(const video::StreamConfig config, ParseStreamFlag(spec));
    const Status added = out->registry_->Add(config);
    if (!added.ok()) {
      return InvalidArgument("--stream " + video::RedactCredentials(config.id) + ": " +
                             added.message());
    }
    spdlog::info("stream {}: {}", config.id, video::RedactCredentials(config.url));
  }
  http.SetStreams(out->registry_.get(), out->events_.get());
  return out;
}

#else

Status ServeStreams::CheckFlags(const ServeFlags& flags) {
  if (flags.streams.empty()) return Status::Ok();
  return InvalidArgument("--stream: this mogserve was built without video support");
}

StatusOr<std::unique_ptr<ServeStreams>> ServeStreams::Start(const ServeFlags& flags,
                                                            pipeline::Pipeline&,
                                                            server::HttpServer&) {
  MOGSERVE_RETURN_IF_ERROR(CheckFlags(flags));
  return std::unique_ptr<ServeStreams>(new ServeStreams());
}

#endif

ServeStreams::ServeStreams() = default;

ServeStreams::~ServeStreams() {
  if (events_) events_->Stop();  // no watcher, no frame listener left
  registry_.reset();
}

}  // namespace mogserve::cli
