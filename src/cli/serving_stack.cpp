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

// An OIP model name: 1 to 128 letters, digits, '.', '_' or '-'.
std::string CheckModelName(const std::string& v) {
  const bool ok = !v.empty() && v.size() <= 128 &&
                  v.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                      "0123456789._-") == std::string::npos;
  return ok ? std::string() : "a name of 1 to 128 letters, digits, '.', '_' or '-'";
}

}  // namespace

void AddServeFlags(CLI::App& app, ServeFlags& f, std::initializer_list<opt::Group> server) {
  AddOptionFlags(app, f.options,
                 {opt::Group::kModel, opt::Group::kInput, opt::Group::kScheduler,
                  opt::Group::kPipeline});
  AddServingFlags(app, f, server);
  app.get_option("--api-key-file")->check(CLI::ExistingFile);
  app.get_option("--model-name")->check(CheckModelName);
  // Every flag can come from the environment too.
  for (CLI::Option* o : app.get_options()) {
    if (o == app.get_help_ptr()) continue;
    if (o->get_lnames().empty() || !o->get_envname().empty()) continue;
    o->envname(EnvName(o->get_lnames().front()));
  }
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
