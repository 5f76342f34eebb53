// VideoReader: one video source (file or live URL) opened, demuxed and decoded with FFmpeg, each
// frame scaled (swscale) straight into a model canvas of the pipeline — the canvas an HTTP upload
// would get from PrepareCanvas, from the same CanvasPool, with no intermediate picture.
//
// Blocking calls (open, probe, read) are bounded by an interrupt callback: each has a deadline
// (SourceTimeouts), and Interrupt() from any thread ends the one in progress at once, so a
// closing stream or a shutting-down process never waits on a silent socket.
//
// Thread-safety: one thread calls Open / Next / Scale; Interrupt may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "image/image.h"
#include "pipeline/canvas_pool.h"
#include "pipeline/prepared_canvas.h"
#include "pipeline/shape_buckets.h"
#include "video/catch_up.h"
#include "video/source_url.h"
#include "video/video_error.h"

namespace mogserve::video {

// Where frames are decoded (specs/video_streams.md §1). kAuto and kCuda try NVDEC through
// FFmpeg's CUDA hwcontext (libcuda.so.1 and libnvcuvid.so.1 are loaded by FFmpeg at run time)
// and decode in software when that fails, saying why in decoder_name(); kCuda also logs the
// fallback as a warning. kNone: software.
enum class HwAccel { kAuto, kCuda, kNone };
// "auto", "cuda", "none".
const char* HwAccelName(HwAccel hwaccel);
// The inverse of HwAccelName; nullopt for any other text.
std::optional<HwAccel> ParseHwAccel(const std::string& text);

struct VideoSourceOptions {
  std::string url;  // a path or a URL (source_url.h); may hold credentials
  SourceTimeouts timeouts;
  RtspTransport rtsp_transport = RtspTransport::kTcp;
  // rtsp://, rtmp://, tcp://: listen on the URL's address for an encoder that pushes (RTSP
  // RECORD, RTMP publish, a TCP connection) instead of connecting to it; the open timeout is then
  // how long to wait for it.
  bool listen = false;
  // Codecs decoded, by FFmpeg's names; any other is kUnsupportedCodec.
  std::vector<std::string> codecs = {"h264", "hevc", "mjpeg"};
  // How much of a live source FFmpeg may read before the first frame: bounds start-up delay.
  int64_t probe_size_bytes = 500'000;
  std::chrono::milliseconds analyze_duration{1000};
  // Decoder threads, slice-parallel only: frame threads would hold frames back (latency).
  int decode_threads = 1;
  // Live sources: a Next() that gets no frame for this long fails with kTimeout even while bytes
  // still arrive (a camera sending only broken or non-video data). Zero: no watchdog.
  std::chrono::milliseconds no_frame_timeout{0};
  HwAccel hwaccel = HwAccel::kNone;
  // Live sources: drop packets before decoding while reading lags the source (CatchUp).
  bool catch_up = false;
  CatchUpOptions catch_up_options;
};

struct FrameInfo {
  int64_t index = 0;  // decoded frames since Open, 0-based, corrupt ones included
  double pts_s = 0;   // presentation time in seconds since the stream's first frame
  // When the packet that completed this frame was read: steady clock (latency) and wall clock.
  std::chrono::steady_clock::time_point arrival{};
  std::chrono::system_clock::time_point received_at{};
  int width = 0;  // the source picture's size
  int height = 0;
  double decode_ms = 0;  // time in the decoder for this frame (not waiting for data)
};

struct ReaderCounters {
  int64_t packets = 0;          // video packets read (after the first keyframe)
  int64_t decoded = 0;          // frames out of the decoder, corrupt ones included
  int64_t corrupt = 0;          // frames the decoder flagged as damaged: skipped
  int64_t dropped_catchup = 0;  // packets dropped undecoded to catch up (counted in `packets`)
};

class VideoReader {
 public:
  explicit VideoReader(VideoSourceOptions options);
  ~VideoReader();
  VideoReader(const VideoReader&) = delete;
  VideoReader& operator=(const VideoReader&) = delete;

  // Opens the source, probes it, finds its video stream and decoder. nullopt on success.
  std::optional<VideoError> Open();

  enum class ReadState { kFrame, kEnded, kFailed };
  // Reads and decodes until the next undamaged frame. kEnded at the end of the stream (a file's
  // end, a live source closing cleanly); kFailed with error() otherwise.
  ReadState Next(FrameInfo* frame);
  // The frame Next last returned, letterboxed into its bucket's canvas (a buffer of `pool`,
  // zero padding right and bottom). Timing: preprocess_ms is the scale; decode_ms the frame's.
  pipeline::PreparedCanvas Scale(const pipeline::ShapeBuckets& buckets, pipeline::CanvasPool& pool);

  // The frame Next last returned as an RGB picture whose long side is at most `max_side_px`
  // (the source's size when smaller): what snapshots, MJPEG and saved frames show.
  image::Image Preview(int max_side_px);

  // Ends the blocking call in progress (and every later one) with kCancelled. Any thread.
  void Interrupt();

  const VideoError& error() const;
  // The source as it may be shown: credentials removed.
  const std::string& display_url() const;
  // The decoder's codec name ("h264"); empty before Open succeeds.
  std::string codec_name() const;
  // The codec and where it is decoded, with the reason for a fallback: "h264 (cuda)",
  // "h264 (software)", "h264 (software; cuda unavailable: Cannot load libcuda.so.1)". Empty
  // before Open succeeds; may change at the first frame (the decoder may refuse NVDEC then).
  std::string decoder_name() const;
  // Frames the container announces (files), 0 when unknown (live sources).
  int64_t expected_frames() const;
  // The stream's nominal frame rate, 0 when unknown.
  double frame_rate() const;
  ReaderCounters counters() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mogserve::video
