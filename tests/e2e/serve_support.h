// Helpers of the `mogserve serve` end-to-end tests: the real server as a background child on a
// free port, HTTP clients for it, the photos' ground truth, and the Prometheus text format.
#pragma once

#include <httplib.h>

#include <chrono>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "e2e_support.h"
#include "process.h"

namespace mogserve::e2e {

// Generous bounds: the test machine may be shared with builds and benchmarks.
inline constexpr std::chrono::seconds kServerStartTimeout{120};
inline constexpr std::chrono::seconds kServerStopTimeout{90};
inline constexpr int kClientTimeoutS = 120;

// `mogserve serve` running in the background.
class ServeProcess {
 public:
  ServeProcess() = default;
  ~ServeProcess() = default;  // a server still running is killed by ~ChildProcess

  // Starts `mogserve serve --model-dir <test model> [--port 0] args...` and waits for the
  // "listening on http://HOST:PORT/" line. False (with a failure recorded) when it does not come.
  bool Start(const std::vector<std::string>& args, const ProcessOptions& options = {},
             bool add_port_flag = true);
  // Polls GET /readyz until it answers 200; false on timeout.
  bool WaitReady(std::chrono::milliseconds timeout = kServerStartTimeout);
  // SIGTERM, then waits for the exit.
  ProcessResult Stop(std::chrono::milliseconds timeout = kServerStopTimeout);

  int port() const { return port_; }
  ChildProcess& child() { return child_; }
  // A client with generous timeouts and no keep-alive (each request on a new connection).
  std::unique_ptr<httplib::Client> NewClient() const;
  // The server's output so far, for failure messages (the last `max_lines` lines).
  std::string Log(size_t max_lines = 60) const;

 private:
  ChildProcess child_;
  int port_ = 0;
};

// A server shared by the tests of one suite (call from SetUpTestSuite / TearDownTestSuite):
// started with `args` and waited ready, or null (with a failure recorded) when it does not
// come up; stopped with SIGTERM, expecting exit code 0.
std::unique_ptr<ServeProcess> StartSharedServer(const std::vector<std::string>& args);
void StopSharedServer(std::unique_ptr<ServeProcess>& server);

// The photos of tests/data/photos as bytes (read once).
const std::string& PhotoBytes(const std::string& name);

// "" when `result` ({"width","height","faces":[{"box","score"}]}) has the photo's size and
// exactly its ground-truth faces (each true face matched with IoU >= 0.5); else what is wrong.
std::string CheckFaces(const nlohmann::json& result, const std::string& photo);
// The number of ground-truth faces of a photo.
size_t TrueFaceCount(const std::string& photo);

// "" when `body` is {"error":{"code":<code>,"message":...}} and the message contains every one
// of `message_parts`; else what is wrong.
std::string CheckError(const std::string& body, const std::string& code,
                       const std::vector<std::string>& message_parts);

// Prometheus text format: every sample line, `name{labels}` (as written) -> value.
std::map<std::string, double> ParseMetrics(const std::string& text);
// A sample's value, 0 when absent.
double MetricValue(const std::map<std::string, double>& metrics, const std::string& sample);

// Standard base64 (with padding).
std::string Base64(const std::string& bytes);

}  // namespace mogserve::e2e
