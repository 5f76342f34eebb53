#include "cli/serve_streams.h"

#include <spdlog/spdlog.h>

#include "server/stream_events.h"

#ifdef MOGSERVE_WITH_VIDEO
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "server/stream_routes.h"
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

// --streams-file's streams: a JSON array of objects as POST /v1/streams takes them. Errors
// name the file, the entry (from 0) and its id when it has one, and the field.
StatusOr<std::vector<video::StreamConfig>> ReadStreamsFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidArgument("--streams-file " + path + ": cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json doc = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return InvalidArgument("--streams-file " + path + ": not valid JSON");
  if (!doc.is_array()) {
    return InvalidArgument("--streams-file " + path +
                           ": expected a JSON array of streams [{\"id\", \"url\", "
                           "\"detect_fps\"?}, ...], got " +
                           doc.type_name());
  }
  std::vector<video::StreamConfig> configs;
  for (size_t i = 0; i < doc.size(); ++i) {
    std::string entry = "--streams-file " + path + ": entry " + std::to_string(i);
    const nlohmann::json& j = doc[i];
    if (j.is_object() && j.contains("id") && j["id"].is_string()) {
      entry += " ('" + video::RedactCredentials(j["id"].get<std::string>()) + "')";
    }
    video::StreamConfig config;
    if (std::optional<std::string> wrong = server::StreamConfigFromJson(j, &config)) {
      return InvalidArgument(entry + ": " + *wrong);
    }
    StatusOr<video::SourceScheme> scheme = video::ParseSourceScheme(config.url);
    if (!scheme.ok()) return InvalidArgument(entry + ": field 'url': " + scheme.status().message());
    if (!(config.detect_fps >= 0)) {
      return InvalidArgument(entry + ": field 'detect_fps' must be >= 0 (0: every frame)");
    }
    if (config.listen && !video::ListenAllowed(*scheme)) {
      return InvalidArgument(entry +
                             ": field 'listen' is for rtsp://, rtmp:// and tcp:// URLs (an "
                             "encoder pushing to them)");
    }
    for (const video::StreamConfig& earlier : configs) {
      if (earlier.id == config.id) {
        return InvalidArgument(entry + ": field 'id': '" + config.id +
                               "' is taken by an earlier entry; ids are unique");
      }
    }
    configs.push_back(std::move(config));
  }
  return configs;
}

}  // namespace

video::IngestOptions StreamDefaults(const ServeFlags& flags) {
  video::IngestOptions defaults;
  defaults.source.timeouts = {Millis(flags.stream_open_timeout_s),
                              Millis(flags.stream_io_timeout_s)};
  defaults.no_frame_timeout = Millis(flags.stream_no_frame_timeout_s);
  defaults.preview_max_side_px = 640;  // snapshots and MJPEG
  defaults.source.hwaccel = video::ParseHwAccel(flags.hwaccel).value_or(video::HwAccel::kNone);
  return defaults;
}

Status ServeStreams::CheckFlags(const ServeFlags& flags) {
  for (const std::string& spec : flags.streams) {
    MOGSERVE_RETURN_IF_ERROR(ParseStreamFlag(spec).status());
  }
  if (!flags.streams_file.empty()) {
    MOGSERVE_RETURN_IF_ERROR(ReadStreamsFile(flags.streams_file).status());
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<ServeStreams>> ServeStreams::Start(const ServeFlags& flags,
                                                            pipeline::Pipeline& pipeline,
                                                            server::HttpServer& http) {
  std::unique_ptr<ServeStreams> out(new ServeStreams());
  out->registry_ =
      std::make_unique<video::StreamRegistry>(pipeline, StreamDefaults(flags), flags.max_streams);
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
  if (!flags.streams_file.empty()) {
    MOGSERVE_ASSIGN_OR_RETURN(const std::vector<video::StreamConfig> configs,
                              ReadStreamsFile(flags.streams_file));
    for (size_t i = 0; i < configs.size(); ++i) {
      const video::StreamConfig& config = configs[i];
      // Checked by ReadStreamsFile but for what the registry alone knows: an id taken by
      // --stream, a reserved or malformed id, more than --max-streams.
      const Status added = out->registry_->Add(config);
      if (!added.ok()) {
        return InvalidArgument("--streams-file " + flags.streams_file + ": entry " +
                               std::to_string(i) + " ('" + video::RedactCredentials(config.id) +
                               "'): " + added.message());
      }
      spdlog::info("stream {}: {}", config.id, video::RedactCredentials(config.url));
    }
  }
  http.SetStreams(out->registry_.get(), out->events_.get());
  return out;
}

#else

Status ServeStreams::CheckFlags(const ServeFlags& flags) {
  if (!flags.streams_file.empty()) {
    return InvalidArgument("--streams-file: this mogserve was built without video support");
  }
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
