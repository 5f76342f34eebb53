// `mogserve bench video` (specs/video_streams.md §8): how many live cameras one server detects
// faces in, in real time. N in-process publishers (video/clip_publisher.h) loop a clip at its
// frame rate over loopback (MPEG-TS over TCP or UDP), N streams read them through the server's
// own stream registry and pipeline, and a point counts a stream as real-time when
//   - at least `required_decoded` (99 %) of the frames sent in the measured window were decoded,
//   - at least `required_in_time` (95 %) of the frames it submitted were answered within
//     `deadline_ms` (200 ms) of their arrival, and every other one was superseded by a newer
//     frame of the same stream (none late, expired or failed) — bench report §5's rule,
//     applied to real decoded video.
// The search tries N = 1, 2, 4, ... until a point misses, then bisects: the largest N with every
// stream real-time. Decode cost is the CPU time of the streams' reader threads (read, decode and
// scale into the canvas) per decoded frame. Built only with MOGSERVE_WITH_VIDEO.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "bench/latency_stats.h"
#include "bench/result_table.h"
#include "mogserve/status.h"
#include "pipeline/pipeline.h"

namespace mogserve::video {
struct IngestOptions;
}

namespace mogserve::bench {

struct VideoBenchOptions {
  std::string clip;
  std::string transport = "tcp";  // "tcp" (the publisher listens) or "udp"
  double seconds = 20;            // per point; the first 20 % is warm-up
  int max_streams = 64;
  double deadline_ms = 200;
  double required_in_time = 0.95;
  double required_decoded = 0.99;
};

struct VideoPoint {
  std::string scheduler;
  double detect_fps = 0;  // 0: every frame
  int streams = 0;
  double window_s = 0;
  // Over the measured window, all streams.
  int64_t sent = 0;             // frames the publishers wrote
  int64_t decoded = 0;          // undamaged frames out of the decoders
  int64_t dropped_catchup = 0;  // left undecoded by a reader catching up
  int64_t sampled_out = 0;      // left out by detect_fps
  int64_t submitted = 0;
  int64_t in_time = 0;  // detected within the deadline
  int64_t late = 0;     // detected after it
  int64_t superseded = 0;
  int64_t expired = 0;   // or failed
  LatencyStats latency;  // arrival → result, detected frames
  int realtime_streams = 0;
  bool all_realtime = false;
  double detected_per_s = 0;
  double mean_batch_size = 0;
  double busy_ratio = 0;               // engine time in forward passes / wall time
  double decode_cpu_ms_per_frame = 0;  // reader threads' CPU time per decoded frame
  double decode_cores = 0;             // reader threads' CPU time / wall time
  double process_cores = 0;            // the whole process's CPU time / wall time
  std::string failure;                 // why a stream missed, for the log ("" when all passed)
};

struct VideoSearch {
  std::string scheduler;
  double detect_fps = 0;
  int max_realtime_streams = 0;
  std::vector<VideoPoint> points;  // in the order run
};

// One point: `streams` publishers and streams on `pipeline` for options.seconds. `defaults`: the
// streams' options as `serve` sets them (its id, url and detect_fps are each stream's own).
StatusOr<VideoPoint> RunVideoPoint(pipeline::Pipeline& pipeline,
                                   const video::IngestOptions& defaults,
                                   const VideoBenchOptions& options, const std::string& scheduler,
                                   int streams, double detect_fps);

// N = 1, 2, 4, ... up to max_streams until a point misses, then bisection; `progress` is called
// after each point.
StatusOr<VideoSearch> SearchMaxStreams(pipeline::Pipeline& pipeline,
                                       const video::IngestOptions& defaults,
                                       const VideoBenchOptions& options,
                                       const std::string& scheduler, double detect_fps,
                                       const std::function<void(const VideoPoint&)>& progress);

struct VideoBenchReport {
  std::string machine;
  std::string engine;
  std::string clip;      // path and what it holds
  std::string settings;  // transport, seconds, rule
  std::vector<VideoSearch> searches;
};

// Two tables: per search, its largest real-time point; then every point in the order run.
std::vector<ResultTable> VideoBenchTables(const VideoBenchReport& report);

}  // namespace mogserve::bench
