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
//
// With `reconnect`, a live source that is lost (closed, unreachable, silent, no frame for
// `no_frame_timeout`) is opened again after a ReconnectBackoff delay, on the same thread, until
// Stop; errors that retrying cannot mend (IsRetryable) end the stream as failed at once.
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
#include "track/tracker.h"
#include "video/reconnect_backoff.h"
#include "video/stream_window.h"
#include "video/video_reader.h"

namespace mogserve::video {

struct IngestOptions {
  std::string id;  // the stream's name; its frames' scheduler client is "stream:<id>"
  VideoSourceOptions source;
  double detect_fps = 0;  // detect at most this many frames per second of video; 0 = every frame
  bool realtime = false;  // files: read at their own frame rate, like a camera (live always is)
  std::chrono::milliseconds frame_timeout{1000};  // paced: a frame not detected by then expires
  std::optional<DetectOptions> detect;            // nullopt = the pipeline's defaults
  // Live sources: reconnect after losing the source (see above), with these delays.
  bool reconnect = false;
  BackoffOptions backoff;
  // Live sources: a read that yields no frame for this long counts as a lost source.
  std::chrono::milliseconds no_frame_timeout{10'000};
  // Each submitted frame also as a picture of at most this long side (FrameResult::preview),
  // for snapshots, MJPEG and saved frames; 0: none.
  int preview_max_side_px = 0;
  // Most bytes of previews the stream's frames in flight may hold (a full-size 1080p one is
  // 6.2 MB; specs/video_streams.md §6 allows 48 MiB a stream in all). Beyond it, a bulk reader
  // waits for results to free some; a paced frame goes without (its result has no preview).
  // One frame may always hold one.
  int64_t preview_budget_bytes = 24 << 20;
  // Follow faces over time (track::Tracker): the faces of each delivered frame are the tracker's
  // answer, each with its track_id. The detector then runs at track->low_score and the tracker
  // answers from the detection threshold on (`detect`'s, else the pipeline's: track->high_score
  // is set to it), as ByteTrack keeps its low-score detections for its second pass.
  std::optional<track::TrackerOptions> track;
  // Deliver every frame read, not only the detected ones: a frame left out by detect_fps, or
  // superseded, expired or failed, comes in its place with detected = false and, with `track`,
  // the faces the tracker predicts for it (else none).
  bool every_frame = false;
};

enum class StreamState { kConnecting, kRunning, kReconnecting, kEnded, kFailed };
// "connecting", "running", "reconnecting", "ended", "failed".
const char* StreamStateName(StreamState state);

struct FrameResult {
  std::string stream;
  int64_t seq = 0;  // frames submitted (every_frame: delivered) by this stream before this one
  FrameInfo frame;
  pipeline::RequestResult result;  // outcome done: faces in source pixels, timings
  double latency_ms = 0;           // from the frame's arrival to its result
  double scale_ms = 0;             // swscale into the canvas
  int64_t skipped = 0;             // frames decoded but not delivered since the previous result
  // False for a frame the detector did not run on (IngestOptions::every_frame): its faces are
  // the tracker's predictions, or none.
  bool detected = true;
  // The frame itself (IngestOptions::preview_max_side_px), shared read-only; null without.
  std::shared_ptr<const image::Image> preview;
};

// Every frame through the decoder stage ends in exactly one of dropped_catchup, sampled_out or
// submitted (decoded = dropped_catchup + sampled_out + submitted, specs/video_streams.md §5);
// every submitted frame in one of detected, superseded, expired or failed (or is still in
// flight).
struct IngestCounters {
  int64_t received = 0;  // video packets read (after each connection's first keyframe)
  // Frames through the decoder stage: undamaged frames out of the decoder, plus the packets it
  // dropped undecoded to catch up (dropped_catchup); decoded − dropped_catchup were decoded.
  int64_t decoded = 0;
  int64_t dropped_catchup = 0;  // live: not decoded while reading lagged the source (CatchUp)
  int64_t corrupt = 0;          // damaged frames or packets, not detected
  int64_t sampled_out = 0;      // left out by detect_fps
  int64_t submitted = 0;
  int64_t detected = 0;
  int64_t superseded = 0;  // replaced in the queue by a newer frame (paced only)
  int64_t expired = 0;     // not run within frame_timeout (paced only)
  int64_t failed = 0;      // refused (queue full, shutdown) or the engine failed
};

// Frames per second of each stage over the last 10 s (StreamWindow).
struct IngestRates {
  double received = 0;
  double decoded = 0;
  double dropped_catchup = 0;
  double corrupt = 0;
  double sampled_out = 0;
  double detected = 0;
  double superseded = 0;
  double expired = 0;
};

// What a stream is doing now: its state and why, what it reads, and its recent rates.
struct IngestStatus {
  StreamState state = StreamState::kConnecting;
  std::chrono::system_clock::time_point since{};  // when `state` began
  int64_t reconnects = 0;                         // connections re-established after a loss
  std::optional<VideoError> last_error;           // the latest loss or failure, kept once mended
  std::chrono::system_clock::time_point last_error_at{};
  std::string codec;    // of the current connection; "" before the first open
  std::string decoder;  // VideoReader::decoder_name(): "h264 (software; cuda unavailable: ...)"
  int width = 0;        // of the latest frame
  int height = 0;
  double source_fps = 0;  // the frame rate the source announces, 0 if unknown
  // How far the latest frame's reading trails its presentation time, measured from the
  // connection's least-late frame (CatchUp's lag).
  double lag_ms = 0;
  IngestCounters counters;
  IngestRates fps;
  LatencyPercentiles latency;  // arrival → result of the frames detected in the last 10 s
  std::optional<track::TrackerStats> tracks;  // with IngestOptions::track
};

class StreamIngest {
 public:
  // Called once per detected frame (every frame with IngestOptions::every_frame), in frame order,
  // from a pipeline thread (or the stream's own thread), under the stream's lock: it must not call
  // back into this StreamIngest.
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
  IngestStatus status() const;
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
  // The source as it may be shown: credentials removed.
  const std::string& display_url() const { return display_url_; }

 private:
  struct Pending {
    FrameInfo frame;
    double scale_ms = 0;
    int64_t sampled_before = 0;  // frames sampled out between the previous submission and this
    std::shared_ptr<const image::Image> preview;
    double latency_ms = 0;     // arrival → end, set when it ends
    bool sampled_out = false;  // every_frame: left out by detect_fps, never submitted
    int64_t connection = 0;    // status_.reconnects when it was read (its pts' origin)
  };

  // One connection: how it ended (nullopt: the source's end, or Stop) and how long it gave
  // frames.
  struct Attempt {
    std::optional<VideoError> error;
    std::chrono::milliseconds ran_for{0};
  };

  void Run();
  Attempt Connect();
  // Reads a connection's frames until its end; its error, if any.
  std::optional<VideoError> ReadFrames(VideoReader& reader, SteadyClock::time_point* first_frame);
  // Whether `error`, ending a read, is a live source closing its connection (logged).
  bool ConnectionEnded(const VideoReader& reader, const VideoError& error);
  void SetState(StreamState state, const std::optional<VideoError>& error);
  // Adds what the reader counted since the last call to the counters and the window.
  void TakeReaderCounts(const VideoReader& reader, ReaderCounters* seen);  // requires mu_
  bool WaitUntil(std::chrono::steady_clock::time_point t);  // false when stopped first
  void Submit(VideoReader& reader, const FrameInfo& frame, int64_t sampled_before);
  // The frame's preview when the budget allows (a bulk reader waits for room); null without.
  std::shared_ptr<const image::Image> TakePreview(VideoReader& reader, const FrameInfo& frame);
  void OnResult(int64_t seq, pipeline::RequestResult result);
  // every_frame: a frame detect_fps left out, delivered in its place.
  void AddSampledOut(VideoReader& reader, const FrameInfo& frame);
  // Delivers every ended frame whose predecessors have all been delivered, in order.
  void DeliverInOrder();  // requires mu_
  // The frame as delivered: its faces through the tracker, when tracking.
  FrameResult MakeResult(Pending& pending, pipeline::RequestResult result);  // requires mu_
  // The tracker's clock for a frame: its pts, continued across reconnections (each connection's
  // pts start again) so that time never runs backwards.
  double TrackTime(const Pending& pending);  // requires mu_
  void Count(scheduler::Outcome outcome);    // requires mu_

  pipeline::Pipeline& pipeline_;
  const IngestOptions options_;
  const ResultCallback on_result_;
  const bool paced_;
  const bool live_;
  const std::string display_url_;
  std::mutex reader_mu_;                 // Stop against the swap of reader_ at a reconnect
  std::unique_ptr<VideoReader> reader_;  // written by the stream's thread under reader_mu_
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> expected_frames_{0};
  std::atomic<bool> finished_{false};
  std::atomic<bool> opened_{false};
  std::optional<VideoError> error_;  // written by the stream's thread before it ends

  mutable std::mutex mu_;
  std::condition_variable cv_;  // a frame ended, or Stop
  IngestCounters counters_;     // guarded by mu_
  IngestStatus status_;         // state, since, reconnects, errors, source; guarded by mu_
  StreamWindow window_;         // guarded by mu_
  double lag_origin_s_ = 0;     // least arrival − pts of a connection's frames; guarded by mu_
  std::map<int64_t, Pending> pending_;                // submitted, not yet ended; guarded by mu_
  std::map<int64_t, pipeline::RequestResult> ended_;  // ended out of order; guarded by mu_
  int64_t next_seq_ = 0;                              // guarded by mu_
  int64_t next_delivery_ = 0;                         // guarded by mu_
  int64_t skipped_ = 0;        // since the last delivered result; guarded by mu_
  int64_t preview_bytes_ = 0;  // held by the previews of pending_; guarded by mu_
  // Tracking: what frames are submitted with (the detector at the tracker's low score), the
  // tracker, and its clock across connections (TrackTime). Guarded by mu_.
  const std::optional<DetectOptions> submit_detect_;
  std::optional<track::Tracker> tracker_;
  int64_t track_connection_ = 0;
  double track_offset_s_ = 0;
  double track_last_s_ = 0;
  std::thread thread_;
};

}  // namespace mogserve::video
