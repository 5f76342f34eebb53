// `mogserve detect-video SOURCE...`: faces in video files and live streams, one JSON line per
// detected frame. Every source is a StreamIngest (video/stream_ingest.h) feeding one shared
// pipeline as the stream class; files are read in bulk (every frame, in order) unless
// --realtime, live URLs until they end or SIGINT/SIGTERM.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <mutex>
#include <optional>

#include <spdlog/spdlog.h>

#include "api/serving_stack.h"
#include "cli/commands.h"
#include "cli/output_file.h"
#include "cli/progress_bar.h"
#include "cli/shutdown_signals.h"
#include "json/result_json.h"
#include "server/stream_events.h"
#include "track/tracker.h"
#ifdef MOGSERVE_WITH_VIDEO
#include "pipeline/pipeline.h"
#include "scheduler/scheduler_config.h"
#include "video/source_url.h"
#include "video/stream_ingest.h"
#endif

namespace mogserve::cli {
namespace {

struct DetectVideoFlags {
  std::vector<std::string> sources;
  BatchJobFlags job;
  double detect_fps = 0;
  bool track = false;
  track::TrackerOptions tracker;
  bool every_frame = false;
  bool realtime = false;
  double open_timeout_s = 10;
  double io_timeout_s = 5;
  std::string rtsp_transport = "tcp";
  std::vector<std::string> codecs = {"h264", "hevc", "mjpeg"};
  std::string hwaccel = "auto";
  double frame_timeout_s = 1;
  bool quiet = false;
  std::string save_frames;            // a folder: frames with faces, boxes drawn
  double save_frames_interval_s = 1;  // at most one saved frame per this much video, per stream
  DetectorOptions options;            // the model and input groups of the option table
};

#ifdef MOGSERVE_WITH_VIDEO

std::chrono::milliseconds Millis(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(seconds * 1000)));
}

nlohmann::json FrameLine(const video::FrameResult& r) {
  return server::FrameResultJson(r);  // the server's stream events carry the same lines
}

struct Totals {
  int64_t frames = 0;    // read: decoded + corrupt
  int64_t expected = 0;  // announced by the files
  int64_t detected = 0;
  bool all_known = true;  // every stream announced its frame count
};

Totals Sum(const std::vector<std::unique_ptr<video::StreamIngest>>& streams) {
  Totals t;
  for (const auto& s : streams) {
    const video::IngestCounters c = s->counters();
    t.frames += c.decoded + c.corrupt;
    t.detected += c.detected;
    t.expected += s->expected_frames();
    if (s->expected_frames() == 0 && !s->finished()) t.all_known = false;
  }
  return t;
}

// Waits for every stream to end, stopping them all on SIGINT/SIGTERM; draws the progress bar of
// files read in bulk.
void AwaitStreams(const std::vector<std::unique_ptr<video::StreamIngest>>& streams,
                  const sigset_t& signals, bool show_progress) {
  std::optional<ProgressBar> bar;
  auto all_finished = [&] {
    for (const auto& s : streams) {
      if (!s->finished()) return false;
    }
    return true;
  };
  while (!all_finished()) {
    const timespec wait{0, 100'000'000};
    if (sigtimedwait(&signals, nullptr, &wait) > 0) {
      spdlog::info("stopping: no more frames are read; the ones submitted still finish");
      for (const auto& s : streams) s->Stop();
    }
    const Totals t = Sum(streams);
    if (show_progress && !bar && t.all_known) bar.emplace(t.expected, "frames", true);
    if (bar) bar->Update(t.frames, "detected " + std::to_string(t.detected));
  }
  if (bar) bar->Finish("detected " + std::to_string(Sum(streams).detected));
}

void PrintSummary(const video::StreamIngest& s, const std::string& id) {
  const video::IngestCounters c = s.counters();
  const std::string decoder = s.status().decoder;
  std::fprintf(stderr,
               "stream %s (%s, decoder %s): %lld frames decoded, %lld dropped to catch up, %lld "
               "corrupt, %lld sampled out, %lld submitted: %lld detected, %lld superseded, %lld "
               "expired, %lld failed\n",
               id.c_str(), s.display_url().c_str(), decoder.empty() ? "none" : decoder.c_str(),
               static_cast<long long>(c.decoded), static_cast<long long>(c.dropped_catchup),
               static_cast<long long>(c.corrupt), static_cast<long long>(c.sampled_out),
               static_cast<long long>(c.submitted), static_cast<long long>(c.detected),
               static_cast<long long>(c.superseded), static_cast<long long>(c.expired),
               static_cast<long long>(c.failed));
  if (const std::optional<track::TrackerStats> tracks = s.status().tracks) {
    std::fprintf(stderr, "stream %s: %lld tracks started, %lld followed at the end\n", id.c_str(),
                 static_cast<long long>(tracks->started),
                 static_cast<long long>(tracks->confirmed));
  }
}

using LineWriter = std::function<void(const nlohmann::json&)>;

// --save-frames: each stream's detected frames with faces as DIR/<stream>_<frame>.jpg with
// their boxes drawn, at most one per `interval_s` of presentation time. Called from pipeline
// threads (each stream's results one at a time, in order).
class FrameSaver {
 public:
  FrameSaver(std::string dir, double interval_s, size_t streams)
      : dir_(std::move(dir)), interval_s_(interval_s), last_pts_(streams, -1e300) {}

  void Offer(size_t stream, const video::FrameResult& r) {
    if (r.result.result.faces.empty() || r.frame.pts_s - last_pts_[stream] < interval_s_) return;
    last_pts_[stream] = r.frame.pts_s;
    StatusOr<std::vector<uint8_t>> jpeg = server::SnapshotJpeg(r, /*boxes=*/true);
    char name[64];
    std::snprintf(name, sizeof(name), "/%s_%06lld.jpg", r.stream.c_str(),
                  static_cast<long long>(r.frame.index));
    std::ofstream file(dir_ + name, std::ios::binary);
    if (jpeg.ok()) file.write(reinterpret_cast<const char*>(jpeg->data()), jpeg->size());
    if (!jpeg.ok() || !file) spdlog::warn("--save-frames: cannot write {}{}", dir_, name);
  }

 private:
  const std::string dir_;
  const double interval_s_;
  std::vector<double> last_pts_;  // per stream; each touched by its own stream's results only
};

// One StreamIngest per source, stream "N" for the Nth, each writing its results as lines.
std::vector<std::unique_ptr<video::StreamIngest>> StartStreams(const DetectVideoFlags& flags,
                                                               pipeline::Pipeline& pipeline,
                                                               const LineWriter& write_line,
                                                               FrameSaver* saver) {
  std::vector<std::unique_ptr<video::StreamIngest>> streams;
  for (size_t i = 0; i < flags.sources.size(); ++i) {
    video::IngestOptions o;
    o.id = std::to_string(i);
    o.source.url = flags.sources[i];
    o.source.timeouts = {Millis(flags.open_timeout_s), Millis(flags.io_timeout_s)};
    o.source.rtsp_transport =
        flags.rtsp_transport == "udp" ? video::RtspTransport::kUdp : video::RtspTransport::kTcp;
    o.source.codecs = flags.codecs;
    o.source.hwaccel = video::ParseHwAccel(flags.hwaccel).value_or(video::HwAccel::kNone);
    o.detect_fps = flags.detect_fps;
    if (flags.track) o.track = flags.tracker;
    o.every_frame = flags.every_frame;
    o.realtime = flags.realtime;
    o.frame_timeout = Millis(flags.frame_timeout_s);
    if (saver != nullptr) o.preview_max_side_px = 1 << 15;  // the source's own size
    streams.push_back(std::make_unique<video::StreamIngest>(
        pipeline, std::move(o), [&write_line, saver, i](const video::FrameResult& r) {
          write_line(FrameLine(r));
          if (saver != nullptr) saver->Offer(i, r);
        }));
  }
  return streams;
}

// Waits for each stream's end; prints its summary and, for a failed one, its error (a line and
// stderr). Returns the number of failed streams.
int ReportEnds(const std::vector<std::unique_ptr<video::StreamIngest>>& streams, bool quiet,
               const LineWriter& write_line) {
  int failed = 0;
  for (size_t i = 0; i < streams.size(); ++i) {
    const std::optional<video::VideoError> error = streams[i]->Wait();
    if (!quiet) PrintSummary(*streams[i], std::to_string(i));
    if (!error) continue;
    ++failed;
    nlohmann::json line = ErrorToJson(video::VideoErrorName(error->code), error->message);
    line["stream"] = std::to_string(i);
    write_line(line);
    std::cerr << "error: stream " << i << ": " << video::VideoErrorName(error->code) << ": "
              << error->message << "\n";
  }
  return failed;
}

int RunDetectVideo(const DetectVideoFlags& flags) {
  const sigset_t signals = BlockShutdownSignals();
  for (const std::string& source : flags.sources) {
    auto scheme = video::ParseSourceScheme(source);
    if (!scheme.ok()) {
      std::cerr << "error: " << video::RedactCredentials(source) << ": "
                << scheme.status().message() << "\n";
      return kExitUsage;
    }
  }
  auto policy = scheduler::ParsePolicy(flags.job.policy);
  if (!policy.ok()) {
    std::cerr << "error: --" << policy.status().message() << "\n";
    return kExitUsage;
  }
  OutputFile output(flags.job.output);
  if (!output.ok()) return kExitUsage;
  std::unique_ptr<FrameSaver> saver;
  if (!flags.save_frames.empty()) {
    std::error_code error;
    std::filesystem::create_directories(flags.save_frames, error);
    if (error || !std::filesystem::is_directory(flags.save_frames)) {
      std::cerr << "error: --save-frames " << flags.save_frames << ": cannot create the folder\n";
      return kExitUsage;
    }
    saver = std::make_unique<FrameSaver>(flags.save_frames, flags.save_frames_interval_s,
                                         flags.sources.size());
  }
  std::ostream& out = output.stream();

  DetectorOptions options = BatchJobOptions(flags.options, flags.job);
  // Paced sources (live URLs, --realtime) lose the frames that arrive during a cold forward
  // pass - an engine's first of a batch shape: 1.75 s for the SSD's 73 ms one on an AVX2 CI
  // machine - so their pipeline warms its batch shapes up before the streams open, as serve's
  // does, and pads batches to them. A paced stream queues at most one frame, so with paced
  // sources only a batch holds at most one frame of each: the sizes up to the sources' count.
  const auto live = [](const std::string& url) {
    const auto scheme = video::ParseSourceScheme(url);
    return scheme.ok() && video::IsLive(*scheme);
  };
  const size_t live_count = std::count_if(flags.sources.begin(), flags.sources.end(), live);
  if (flags.realtime || live_count > 0) {
    const bool all_paced = flags.realtime || live_count == flags.sources.size();
    const int most = all_paced ? static_cast<int>(flags.sources.size()) : flags.job.batch_size;
    options.plan_batch_sizes.clear();
    for (int size : kDefaults.plan_batch_sizes) {
      options.plan_batch_sizes.push_back(size);
      if (size >= most) break;
    }
    options.pad_batches = true;
  }
  opt::OptionNames names = opt::OptionNames::Flags();
  names.Rename("scheduler", "--policy").Rename("max_batch_size", "--batch-size");
  auto checked = CheckAndLoadEngines(options, names);
  if (const int* exit_code = std::get_if<int>(&checked)) return *exit_code;
  api::LoadedEngines* loaded = &std::get<api::LoadedEngines>(checked);
  // Bulk files block on this (backpressure: a few batches ahead of the engines); paced streams
  // hold at most one queued frame each.
  options.queue_capacity =
      std::max<int64_t>(3 * flags.job.batch_size * static_cast<int64_t>(loaded->engines.size()),
                        2 * static_cast<int64_t>(flags.sources.size()));
  auto started = api::StartPipeline(options, *loaded, /*observer=*/nullptr, names);
  if (!started.ok()) {
    std::cerr << "error: " << started.status().message() << "\n";
    return kExitFatal;
  }
  std::unique_ptr<pipeline::Pipeline>* pipeline = &started->pipeline;

  std::mutex out_mu;
  const LineWriter write_line = [&](const nlohmann::json& line) {
    std::lock_guard<std::mutex> lock(out_mu);
    out << ToJsonLine(line) << "\n";
  };
  const std::vector<std::unique_ptr<video::StreamIngest>> streams =
      StartStreams(flags, **pipeline, write_line, saver.get());
  bool any_paced = false;
  for (const auto& s : streams) any_paced = any_paced || s->paced();
  AwaitStreams(streams, signals, !any_paced && !flags.quiet && isatty(STDERR_FILENO));
  const int failed = ReportEnds(streams, flags.quiet, write_line);
  (*pipeline)->Shutdown(pipeline::ShutdownMode::kDrain);
  out.flush();
  if (!out) {
    std::cerr << "error: writing the results failed\n";
    return kExitFatal;
  }
  return failed > 0 ? kExitSomeFailed : kExitOk;
}

#else

int RunDetectVideo(const DetectVideoFlags&) {
  std::cerr << "error: this mogserve was built without video support (configure with "
               "-DMOGSERVE_WITH_VIDEO=ON and FFmpeg's -dev packages: scripts/setup.sh)\n";
  return kExitFatal;
}

#endif

}  // namespace

CommandRunner RegisterDetectVideoCommand(CLI::App& app) {
  auto flags = std::make_shared<DetectVideoFlags>();
  app.add_option("sources", flags->sources,
                 "Video files and URLs: rtsp://, rtmp://, http(s):// (MPEG-TS, HLS, MJPEG), "
                 "udp://, tcp:// (MPEG-TS)")
      ->required();
  AddBatchJobFlags(app, flags->job, "frames");
  app.add_option("--detect-fps", flags->detect_fps,
                 "Detect at most this many frames per second of video (0 = every frame)")
      ->check(CLI::Range(0.0, 1000.0))
      ->capture_default_str();
  app.add_flag("--track", flags->track,
               "Follow faces over time (ByteTrack-style): each face gets a track_id, the same "
               "for one person across frames; faces the tracker carries over a missed or "
               "undetected frame have tracked: true");
  app.add_option("--track-min-hits", flags->tracker.min_hits,
                 "--track: detected frames in a row that confirm a new track")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  app.add_option("--track-max-misses", flags->tracker.max_misses,
                 "--track: detected frames in a row a lost track waits to be found again "
                 "before its id is retired")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  app.add_option("--track-coast", flags->tracker.max_coast,
                 "--track: detected frames a lost face is still answered at its predicted box "
                 "(tracked: true); 0: never")
      ->check(CLI::Range(0, 10000))
      ->capture_default_str();
  app.add_option("--track-low-score", flags->tracker.low_score,
                 "--track: faces from this score up to the score threshold only continue "
                 "tracks (the detector runs at this threshold)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_flag("--every-frame", flags->every_frame,
               "A line for every frame read, not only the detected ones: frames left out by "
               "--detect-fps (or superseded when paced) have detected: false and, with --track, "
               "the tracker's predicted faces");
  app.add_flag("--realtime", flags->realtime,
               "Read files at their own frame rate, like a camera: frames the engine cannot keep "
               "up with are superseded by newer ones (live URLs always are)");
  app.add_option("--open-timeout", flags->open_timeout_s,
                 "Seconds to connect to a source and find its first frame")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
  app.add_option("--io-timeout", flags->io_timeout_s,
                 "Seconds a read may wait for data before the source counts as timed out")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
  app.add_option("--rtsp-transport", flags->rtsp_transport, "RTSP over tcp or udp")
      ->check(CLI::IsMember({"tcp", "udp"}))
      ->capture_default_str();
  app.add_option("--video-codecs", flags->codecs,
                 "Codecs decoded (FFmpeg names); a source in any other fails as "
                 "unsupported_codec")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--hwaccel", flags->hwaccel,
                 "Where video is decoded: auto (NVDEC when FFmpeg finds a GPU and its driver, "
                 "else software), cuda (the same, with a warning when it falls back), none "
                 "(software); the summary names the decoder and why it fell back")
      ->check(CLI::IsMember({"auto", "cuda", "none"}))
      ->capture_default_str();
  app.add_option("--frame-timeout", flags->frame_timeout_s,
                 "Live and --realtime sources: seconds a frame may wait for the engine before "
                 "it expires")
      ->check(CLI::Range(0.001, 60.0))
      ->capture_default_str();
  app.add_flag("-q,--quiet", flags->quiet, "No progress bar and no summary on stderr");
  app.add_option("--save-frames", flags->save_frames,
                 "Folder for the frames with faces, boxes drawn, as <stream>_<frame>.jpg (at "
                 "most one per --save-frames-interval of video per stream)");
  app.add_option("--save-frames-interval", flags->save_frames_interval_s,
                 "Seconds of video between two saved frames of a stream (0: every detected "
                 "frame with faces)")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  AddOptionFlags(app, flags->options, {opt::Group::kModel, opt::Group::kInput});
  return [flags] { return RunDetectVideo(*flags); };
}

}  // namespace mogserve::cli
