// StreamIngest: one video source fed into a Pipeline as the stream class (DESIGN.md §3), on its
// own thread "in-<id>": open → read → decode → sample (detect_fps) → scale into a canvas of the
// pipeline's pool → Pipeline::SubmitPrepared with client "stream:<id>". Frames never take the
// pipeline's decode slots.
//
// Two ways in, chosen by the source:
// - paced (live URLs, and files with `realtime`): frames arrive at the source's rate and only the
//   newest matters, so each is submitted latest_only with SubmitMode::kRefuse and a deadline of
//   frame_timeout: a newer frame supersedes a queued older one (at most one queued frame per
//   stream, so a batch holds at most one frame of each stream) and nothing runs late.
// - bulk (files otherwise): frame extraction, where every frame must be detected. Frames are
//   submitted in order, not latest_only, with SubmitMode::kBlock: the reader waits for queue room
//   instead of dropping (backpressure), the scheduler keeps a client's frames FIFO, and several
//   frames of the stream may share a batch. No deadline: an offline job has none.
// Either way results are delivered in frame order, one callback per detected frame.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "pipeline/pipeline.h"
#include "video/video_reader.h"

namespace mogserve::video {

struct IngestOptions {
  std::string id;  // the stream's name; its frames' scheduler client is "stream:<id>"
  VideoSourceOptions source;
  double detect_fps = 0;  // detect at most this many frames per second of video; 0 = every frame
  bool realtime = false;  // files: read at their own frame rate, like a camera (live always is)
  std::chrono::milliseconds frame_timeout{1000};  // paced: a frame not detected by then expires
  std::optional<DetectOptions> detect;            // nullopt = the pipeline's defaults
};

struct FrameResult {
  std::string stream;
  int64_t seq = 0;  // frames submitted by this stream before this one
  FrameInfo frame;
  pipeline::RequestResult result;  // outcome done: faces in source pixels, timings
  double latency_ms = 0;           // from the frame's arrival to its result
  double scale_ms = 0;             // swscale into the canvas
  int64_t skipped = 0;             // frames decoded but not detected since the previous result
};

// Every decoded frame ends in exactly one of sampled_out or submitted; every submitted frame in
// one of detected, superseded, expired or failed (or is still in flight).
struct IngestCounters {
  int64_t decoded = 0;      // undamaged frames out of the decoder
  int64_t corrupt = 0;      // damaged frames or packets, not detected
  int64_t sampled_out = 0;  // left out by detect_fps
  int64_t submitted = 0;
  int64_t detected = 0;
  int64_t superseded = 0;  // replaced in the queue by a newer frame (paced only)
  int64_t expired = 0;     // not run within frame_timeout (paced only)
  int64_t failed = 0;      // refused (queue full, shutdown) or the engine failed
};

class StreamIngest {
 public:
  // Called once per detected frame, in frame order, from a pipeline thread (or the stream's own
  // thread), under the stream's lock: it must not call back into this StreamIngest.
  using ResultCallback = std::function<void(const FrameResult&)>;

  // Starts the stream's thread. `pipeline` must outlive this object.
  StreamIngest(pipeline::Pipeline& pipeline, IngestOptions options, ResultCallback on_result);
  // Stop() and Wait().
  ~StreamIngest();
  StreamIngest(const StreamIngest&) = delete;
  StreamIngest& operator=(const StreamIngest&) = delete;

  // Ends reading now (a blocking open or read included); frames already submitted still end
  // normally. Any thread.
  void Stop();
  // Waits until the source ended, failed or was stopped and every submitted frame has ended.
  // nullopt when it ended cleanly or was stopped; the source's error otherwise. Call once.
  std::optional<VideoError> Wait();

  // Any thread.
  IngestCounters counters() const;
  // Frames the source announces (files), 0 when unknown or not yet open.
  int64_t expected_frames() const { return expected_frames_; }
  bool paced() const { return paced_; }
  // Whether the stream has ended (Wait would not block). Any thread.
  bool finished() const { return finished_; }
  // Whether the source was opened (its first frame may still be on its way). Any thread.
  bool opened() const { return opened_; }
  // Why the stream failed; nullopt while it runs or when it ended cleanly or was stopped. Any
  // thread (written before finished() turns true).
  std::optional<VideoError> error() const { return finished_ ? error_ : std::nullopt; }
  const std::string& display_url() const { return reader_.display_url(); }

 private:
  struct Pending {
    FrameInfo frame;
    double scale_ms = 0;
    int64_t sampled_before = 0;  // frames sampled out between the previous submission and this
    double latency_ms = 0;       // arrival → end, set when it ends
  };

  void Run();
  void ReadFrames();  // sets error_ when a failure ended them
  // Whether `error`, ending a read, is a live source closing its connection (logged).
  bool ConnectionEnded(const VideoError& error);
  bool WaitUntil(std::chrono::steady_clock::time_point t);  // false when stopped first
  void Submit(const FrameInfo& frame, int64_t sampled_before);
  void OnResult(int64_t seq, pipeline::RequestResult result);
  void Count(scheduler::Outcome outcome);  // requires mu_

  pipeline::Pipeline& pipeline_;
  const IngestOptions options_;
  const ResultCallback on_result_;
  const bool paced_;
  VideoReader reader_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> expected_frames_{0};
  std::atomic<bool> finished_{false};
  std::atomic<bool> opened_{false};
  std::optional<VideoError> error_;  // written by the stream's thread before it ends

  mutable std::mutex mu_;
  std::condition_variable cv_;                        // a frame ended, or Stop
  IngestCounters counters_;                           // guarded by mu_
  std::map<int64_t, Pending> pending_;                // submitted, not yet ended; guarded by mu_
  std::map<int64_t, pipeline::RequestResult> ended_;  // ended out of order; guarded by mu_
  int64_t next_seq_ = 0;                              // guarded by mu_
  int64_t next_delivery_ = 0;                         // guarded by mu_
  int64_t skipped_ = 0;  // since the last delivered result; guarded by mu_
  std::thread thread_;
};

}  // namespace mogserve::video
