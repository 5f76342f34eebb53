// ClipPublisher: a camera made of a video file, for `mogserve bench video` — it loops the file's
// video stream at its own frame rate to a live URL, copying packets without re-encoding
// (`ffmpeg -re -stream_loop -1 -i clip -c copy`), in-process, so a benchmark machine needs
// nothing but the libraries mogserve links. Outputs (MPEG-TS):
// - "tcp://127.0.0.1:PORT" with `listen`: waits for one reader to connect (mogserve pulls
//   tcp://127.0.0.1:PORT), then sends;
// - "udp://127.0.0.1:PORT": sends datagrams whether anyone reads or not (start the reader first).
// Timestamps keep increasing across loops, as a camera's do. One thread per publisher.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "mogserve/status.h"

namespace mogserve::video {

struct PublisherOptions {
  std::string clip;  // a file with a video stream (H.264, HEVC, MJPEG: whatever MPEG-TS carries)
  std::string url;   // tcp:// or udp:// (see above)
  bool listen = false;
  // Sending starts this much after the reader connects (tcp) or after Start (udp): spreads
  // several publishers' frames over a frame interval, as unsynchronised cameras are.
  std::chrono::microseconds phase{0};
};

// What a clip holds, read by Probe.
struct ClipInfo {
  std::string codec;
  int width = 0;
  int height = 0;
  double fps = 0;
  double seconds = 0;
  int64_t bit_rate = 0;  // bits per second of the video stream (from the container or estimated)
};

class ClipPublisher {
 public:
  // The clip's video stream; NotFound / InvalidArgument with FFmpeg's reason.
  static StatusOr<ClipInfo> Probe(const std::string& clip);
  // Opens the clip (errors now), then publishes on its own thread until Stop.
  static StatusOr<std::unique_ptr<ClipPublisher>> Start(PublisherOptions options);
  // Stop().
  ~ClipPublisher();
  ClipPublisher(const ClipPublisher&) = delete;
  ClipPublisher& operator=(const ClipPublisher&) = delete;

  // Ends publishing (a blocking accept or write included) and joins the thread.
  void Stop();
  // Video packets (frames) written so far. Any thread.
  int64_t frames_sent() const { return frames_sent_; }
  // Why publishing ended early ("" while it runs or when stopped). Any thread.
  std::string error() const;

 private:
  struct Input;
  ClipPublisher(PublisherOptions options, std::unique_ptr<Input> input);
  void Run();
  std::string Publish();  // the error, "" when stopped

  const PublisherOptions options_;
  std::unique_ptr<Input> input_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> frames_sent_{0};
  mutable std::mutex mu_;
  std::string error_;  // guarded by mu_
  std::thread thread_;
};

}  // namespace mogserve::video
