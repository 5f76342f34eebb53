// tests/video/rtsp_server.py as a child process of a test: a real RTSP server (GstRtspServer)
// publishing a clip at rtsp://127.0.0.1:PORT/live, killed and started again on the same port.
// Needs Debian's python3 with GStreamer's bindings (scripts/setup.sh); Start() says when they
// are missing, so that the test can skip with that message.
#pragma once

#include <signal.h>

#include <chrono>
#include <memory>
#include <string>

#include "process.h"

namespace mogserve::video::testing {

class RtspServer {
 public:
  enum class Started { kReady, kMissingModules, kFailed };

  RtspServer(std::string clip, int port) : clip_(std::move(clip)), port_(port) {}

  // Starts the server and waits for its ready line. kMissingModules: the Python/GI modules or
  // GStreamer elements are not installed (error() says which); kFailed: anything else.
  Started Start() {
    child_ = std::make_unique<e2e::ChildProcess>();
    if (!child_->Start("/usr/bin/python3",
                       {MOGSERVE_RTSP_SERVER_PY, clip_, std::to_string(port_)})) {
      error_ = "cannot run /usr/bin/python3: " + child_->spawn_error();
      return Started::kMissingModules;
    }
    const auto ready = child_->WaitForLine(
        [](const std::string& line) { return line.rfind("rtsp_server: ready", 0) == 0; },
        std::chrono::seconds(20));
    if (ready) return Started::kReady;
    const e2e::ProcessResult r = child_->Wait(std::chrono::seconds(5));
    error_ = r.Describe();
    return r.exit_code == 3 ? Started::kMissingModules : Started::kFailed;
  }
  void Kill() {
    if (!child_) return;
    child_->Signal(SIGKILL);
    child_->Wait(std::chrono::seconds(10));
    child_.reset();
  }
  const std::string& error() const { return error_; }
  std::string url() const { return "rtsp://127.0.0.1:" + std::to_string(port_) + "/live"; }

 private:
  std::string clip_;
  int port_;
  std::unique_ptr<e2e::ChildProcess> child_;
  std::string error_;
};

}  // namespace mogserve::video::testing

// Starts `server` in a test body: skips the test when the RTSP server's modules are missing,
// fails it when the server does not start otherwise.
#define MOGSERVE_START_RTSP_SERVER(server)                                              \
  do {                                                                                  \
    const auto started_ = (server).Start();                                             \
    if (started_ == ::mogserve::video::testing::RtspServer::Started::kMissingModules) { \
      GTEST_SKIP() << "no RTSP server for this test: " << (server).error();             \
    }                                                                                   \
    ASSERT_EQ(started_, ::mogserve::video::testing::RtspServer::Started::kReady)        \
        << (server).error();                                                            \
  } while (0)
