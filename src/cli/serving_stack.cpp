#include "cli/serving_stack.h"

#include <cmath>

#include "common/file_util.h"

namespace mogserve::cli {
namespace {

// "max-batch-size" -> "MOGSERVE_MAX_BATCH_SIZE".
std::string EnvName(const std::string& long_name) {
  std::string env = "MOGSERVE_";
  for (char c : long_name) env += c == '-' ? '_' : static_cast<char>(std::toupper(c));
  return env;
}

// Adds an option that can also come from the environment as MOGSERVE_<NAME>.
template <typename T>
CLI::Option* Flag(CLI::App& app, const std::string& name, T& value, const std::string& help) {
  return app.add_option(name, value, help)->envname(EnvName(name.substr(2)))->capture_default_str();
}

}  // namespace

void AddServeFlags(CLI::App& app, ServeFlags& f) {
  AddOptionFlags(app, f.options,
                 {opt::Group::kModel, opt::Group::kInput, opt::Group::kScheduler,
                  opt::Group::kPipeline});
  // The model and pipeline flags shared with other commands can come from the environment too.
  for (CLI::Option* o : app.get_options()) {
    if (o == app.get_help_ptr()) continue;
    if (o->get_lnames().empty() || !o->get_envname().empty()) continue;
    o->envname(EnvName(o->get_lnames().front()));
  }
  Flag(app, "--host", f.host, "Address to listen on (0.0.0.0: every interface)");
  Flag(app, "--port", f.port, "Port (0: any free port)")->check(CLI::Range(0, 65535));
  Flag(app, "--admin-port", f.admin_port,
       "Also serve /healthz, /readyz, /metrics and /v2/health/* on this port, on their own event "
       "loop, so probes never wait behind detection (0: off)")
      ->check(CLI::Range(0, 65535));
  Flag(app, "--api-key", f.api_key,
       "Require 'Authorization: Bearer <key>' on /v1/* (default: none, no key needed)");
  Flag(app, "--api-key-file", f.api_key_file,
       "Read the API key from this file (first line), so it is not visible in the process list "
       "(default: none)")
      ->check(CLI::ExistingFile);
  Flag(app, "--cors-origin", f.cors_origin, "Allow this browser origin (CORS); off by default");
  Flag(app, "--model-name", f.model_name,
       "The model's name in the Open Inference Protocol's /v2/models/{name} (default: "
       "ssd-mobilenetv1 or mogface)")
      ->check([](const std::string& v) {
        const bool ok = !v.empty() && v.size() <= 128 &&
                        v.find_first_not_of(
                            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                            "0123456789._-") == std::string::npos;
        return ok ? std::string() : "a name of 1 to 128 letters, digits, '.', '_' or '-'";
      });
  Flag(app, "--max-body-bytes", f.max_body_bytes, "Largest request body (413 beyond)")
      ->check(CLI::Range(int64_t{1024}, int64_t{1} << 34));
  Flag(app, "--max-body-bytes-in-flight", f.max_body_bytes_in_flight,
       "Request bodies held at once over all connections, until answered (503 beyond)")
      ->check(CLI::Range(int64_t{1024}, int64_t{1} << 40));
  Flag(app, "--max-images", f.max_images, "Most images in one request")
      ->check(CLI::Range(1, 10000));
  Flag(app, "--max-header-bytes", f.max_header_bytes,
       "Largest request line + header fields (431; 414 for a long request line)")
      ->check(CLI::Range(int64_t{1024}, int64_t{1} << 20));
  Flag(app, "--max-connections", f.max_connections,
       "Open connections; at the cap a new one displaces the longest idle or slowest-header one")
      ->check(CLI::Range(1, 1'000'000));
  Flag(app, "--io-threads", f.io_threads, "HTTP event-loop threads")->check(CLI::Range(1, 64));
  Flag(app, "--header-timeout", f.header_timeout_s,
       "Seconds a client has to send a request's header (408 after)")
      ->check(CLI::Range(0.1, 3600.0));
  Flag(app, "--body-timeout", f.body_timeout_s,
       "Seconds a client has to send a request's body once its header is in (408 after)")
      ->check(CLI::Range(0.1, 3600.0));
  Flag(app, "--idle-timeout", f.idle_timeout_s,
       "Seconds a keep-alive connection may wait for its next request")
      ->check(CLI::Range(0.1, 3600.0));
  Flag(app, "--access-log", f.access_log, "text, json or off")
      ->check(CLI::IsMember({"text", "json", "off"}));
  Flag(app, "--shutdown-delay", f.shutdown_delay_s,
       "Seconds between SIGTERM and closing the listener: readiness turns false at once, "
       "requests are still served (for a balancer or Kubernetes to stop sending)")
      ->check(CLI::Range(0.0, 3600.0));
  Flag(app, "--drain-timeout", f.drain_timeout_s,
       "Seconds to finish accepted requests after SIGINT/SIGTERM before cancelling the rest")
      ->check(CLI::Range(0.0, 3600.0));
  Flag(app, "--stream", f.streams,
       "A video stream ID=URL to detect in (repeatable; more at run time: POST /v1/streams)");
  Flag(app, "--streams-file", f.streams_file,
       "A JSON file of video streams to start with: an array of objects as POST /v1/streams "
       "takes them ({\"id\", \"url\", \"detect_fps\"?})");
  Flag(app, "--max-streams", f.max_streams, "Most video streams at once")
      ->check(CLI::Range(1, 1024));
  Flag(app, "--stream-open-timeout", f.stream_open_timeout_s,
       "Seconds a stream has to connect and find its first frame")
      ->check(CLI::Range(0.1, 3600.0));
  Flag(app, "--stream-io-timeout", f.stream_io_timeout_s,
       "Seconds a stream's read may wait for data")
      ->check(CLI::Range(0.1, 3600.0));
  Flag(app, "--stream-no-frame-timeout", f.stream_no_frame_timeout_s,
       "Seconds a live stream may go without a frame before it reconnects")
      ->check(CLI::Range(0.1, 3600.0));
  Flag(app, "--hwaccel", f.hwaccel,
       "Where the streams' video is decoded: auto (NVDEC when FFmpeg finds a GPU and its driver, "
       "else software), cuda (the same, with a warning when it falls back), none (software)")
      ->check(CLI::IsMember({"auto", "cuda", "none"}));
  Flag(app, "--max-stream-subscribers", f.max_stream_subscribers,
       "Most watchers of the streams' events, results and MJPEG at once (beyond: 503)")
      ->check(CLI::Range(1, 1024));
}

StatusOr<server::ServerOptions> ToServerOptions(const ServeFlags& flags) {
  server::ServerOptions o;
  o.host = flags.host;
  o.port = flags.port;
  o.api_key = flags.api_key;
  if (!flags.api_key_file.empty()) {
    if (!flags.api_key.empty()) {
      return InvalidArgument("--api-key and --api-key-file: give one, not both");
    }
    auto bytes = ReadFileBytes(flags.api_key_file);
    if (!bytes.ok()) return InvalidArgument("--api-key-file: " + bytes.status().message());
    const std::string text(bytes->begin(), bytes->end());
    o.api_key = text.substr(0, text.find_first_of("\r\n"));
    if (o.api_key.empty()) {
      return InvalidArgument("--api-key-file: " + flags.api_key_file +
                             " is empty; put the key on its first line");
    }
  }
  o.cors_origin = flags.cors_origin;
  o.model_name = flags.model_name;
  o.admin_port = flags.admin_port;
  o.limits.max_images = flags.max_images;
  o.http.max_body_bytes = flags.max_body_bytes;
  o.http.max_body_bytes_in_flight = flags.max_body_bytes_in_flight;
  o.http.max_header_bytes = flags.max_header_bytes;
  o.http.max_connections = flags.max_connections;
  const auto ms = [](double s) { return std::chrono::milliseconds(std::llround(s * 1000)); };
  o.http.header_timeout = ms(flags.header_timeout_s);
  o.http.body_timeout = ms(flags.body_timeout_s);
  o.http.idle_timeout = ms(flags.idle_timeout_s);
  o.io_threads = flags.io_threads;
  o.access_log = flags.access_log == "json"  ? server::ServerOptions::AccessLog::kJson
                 : flags.access_log == "off" ? server::ServerOptions::AccessLog::kOff
                                             : server::ServerOptions::AccessLog::kText;
  return o;
}

int ExitCodeFor(const Status& status) {
  return status.code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFatal;
}

StatusOr<LoadedEngines> LoadEngines(const ServeFlags& flags) {
  const DetectorOptions& options = flags.options;
  const opt::OptionNames names = opt::OptionNames::Flags();
  // Bad flags before the slow load.
  MOGSERVE_ASSIGN_OR_RETURN(const engine::EngineOptions engine_options,
                            api::CheckOptions(options, names));
  return api::LoadEngines(engine_options, options, names);
}

StatusOr<ServingPipeline> StartPipeline(const ServeFlags& flags, const LoadedEngines& loaded,
                                        pipeline::PipelineObserver* observer) {
  return api::StartPipeline(flags.options, loaded, observer, opt::OptionNames::Flags());
}

}  // namespace mogserve::cli
