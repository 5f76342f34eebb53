// `mogserve probe URL`: an HTTP health check for containers without curl (the Dockerfile's
// HEALTHCHECK, Kubernetes exec probes): GET the URL, print the status line, exit 0 only for a
// 200. Plain http only (probes stay inside the pod or container).
#include <httplib.h>

#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.h"

namespace mogserve::cli {
namespace {

struct ProbeFlags {
  std::string url;
  double timeout_s = 3;
};

int RunProbe(const ProbeFlags& flags) {
  const std::string prefix = "http://";
  if (flags.url.rfind(prefix, 0) != 0) {
    std::cerr << "error: URL '" << flags.url << "' must start with http://\n";
    return kExitUsage;
  }
  const size_t slash = flags.url.find('/', prefix.size());
  const std::string origin = flags.url.substr(0, slash);
  const std::string path = slash == std::string::npos ? "/" : flags.url.substr(slash);
  httplib::Client client(origin);
  const auto timeout = std::chrono::duration<double>(flags.timeout_s);
  client.set_connection_timeout(std::chrono::duration_cast<std::chrono::microseconds>(timeout));
  client.set_read_timeout(std::chrono::duration_cast<std::chrono::microseconds>(timeout));
  const httplib::Result r = client.Get(path);
  if (!r) {
    std::cerr << "probe: " << flags.url << ": " << httplib::to_string(r.error()) << "\n";
    return kExitSomeFailed;
  }
  std::cout << r->status << " " << flags.url << "\n";
  return r->status == 200 ? kExitOk : kExitSomeFailed;
}

}  // namespace

CommandRunner RegisterProbeCommand(CLI::App& app) {
  auto flags = std::make_shared<ProbeFlags>();
  app.add_option("url", flags->url, "http://HOST:PORT/PATH, e.g. http://127.0.0.1:7860/readyz")
      ->required();
  app.add_option("--timeout", flags->timeout_s, "Seconds to connect and to read")
      ->check(CLI::Range(0.1, 600.0))
      ->capture_default_str();
  return [flags] { return RunProbe(*flags); };
}

}  // namespace mogserve::cli
