#include "bench/video_bench.h"

#ifdef MOGSERVE_WITH_VIDEO

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "bench/pipeline_driver.h"
#include "video/clip_publisher.h"
#include "video/stream_registry.h"

namespace mogserve::bench {
namespace {

using Steady = std::chrono::steady_clock;
constexpr double kWarmupFraction = 0.2;

std::string StreamId(int i) {
  return "cam-" + std::to_string(i);
}

// A loopback port that was free a moment ago.
StatusOr<int> FreePort(int type) {
  const int fd = socket(AF_INET, type, 0);
  if (fd < 0) return Internal("socket: " + std::string(std::strerror(errno)));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  const bool bound = bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
                     getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
  close(fd);
  if (!bound) return Internal("no free loopback port: " + std::string(std::strerror(errno)));
  return static_cast<int>(ntohs(address.sin_port));
}

// CPU seconds (user + system) of this process's threads named `prefix`*: the streams' readers.
double ThreadsCpuSeconds(const std::string& prefix) {
  namespace fs = std::filesystem;
  static const double ticks_per_s = static_cast<double>(sysconf(_SC_CLK_TCK));
  double total = 0;
  std::error_code ec;
  for (const auto& task : fs::directory_iterator("/proc/self/task", ec)) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    if (!std::getline(comm, name) || name.rfind(prefix, 0) != 0) continue;
    std::ifstream stat_file(task.path() / "stat");
    std::string stat;
    std::getline(stat_file, stat);
    // Fields after the parenthesised name: state is field 3, utime 14, stime 15.
    const size_t close_paren = stat.rfind(')');
    if (close_paren == std::string::npos) continue;
    std::istringstream fields(stat.substr(close_paren + 2));
    std::string field;
    double utime = 0, stime = 0;
    for (int i = 3; i <= 15 && fields >> field; ++i) {
      if (i == 14) utime = std::stod(field);
      if (i == 15) stime = std::stod(field);
    }
    total += (utime + stime) / ticks_per_s;
  }
  return total;
}

// Per stream: the detected frames of the measured window (by their sequence numbers), split by
// the deadline, and their latencies.
class WindowResults {
 public:
  WindowResults(int streams, double deadline_ms) : deadline_ms_(deadline_ms), by_stream_(streams) {}

  void SetWindow(int stream, int64_t first_seq, int64_t end_seq) {
    std::lock_guard<std::mutex> lock(mu_);
    by_stream_[stream].first = first_seq;
    by_stream_[stream].end = end_seq;
  }
  void Add(int stream, int64_t seq, double latency_ms) {
    std::lock_guard<std::mutex> lock(mu_);
    PerStream& s = by_stream_[stream];
    if (seq < s.first || seq >= s.end) return;
    ++(latency_ms <= deadline_ms_ ? s.in_time : s.late);
    latencies_ms_.push_back(latency_ms);
  }
  struct PerStream {
    int64_t first = INT64_MAX;  // nothing counts until the window opens
    int64_t end = INT64_MAX;
    int64_t in_time = 0;
    int64_t late = 0;
  };
  PerStream Of(int stream) const {
    std::lock_guard<std::mutex> lock(mu_);
    return by_stream_[stream];
  }
  std::vector<double> latencies() const {
    std::lock_guard<std::mutex> lock(mu_);
    return latencies_ms_;
  }

 private:
  const double deadline_ms_;
  mutable std::mutex mu_;
  std::vector<PerStream> by_stream_;
  std::vector<double> latencies_ms_;
};

std::map<std::string, video::IngestCounters> CountersById(const video::StreamRegistry& registry) {
  std::map<std::string, video::IngestCounters> out;
  for (const video::StreamInfo& info : registry.List()) out[info.id] = info.counters;
  return out;
}

void FillPipelineFigures(const pipeline::PipelineStats& a, const pipeline::PipelineStats& b,
                         double window_s, VideoPoint* point) {
  const int64_t batches = b.batches - a.batches;
  point->mean_batch_size =
      batches > 0 ? static_cast<double>(b.batched_requests - a.batched_requests) / batches : 0;
  double busy = 0;
  for (size_t i = 0; i < b.engine_busy_seconds.size() && i < a.engine_busy_seconds.size(); ++i) {
    busy += b.engine_busy_seconds[i] - a.engine_busy_seconds[i];
  }
  const double instances = static_cast<double>(std::max<size_t>(1, b.engine_busy_seconds.size()));
  point->busy_ratio = busy / (window_s * instances);
}

// Waits until `t`, or returns early with the first publisher error.
std::string SleepWatching(Steady::time_point t,
                          const std::vector<std::unique_ptr<video::ClipPublisher>>& publishers) {
  while (Steady::now() < t) {
    for (const auto& p : publishers) {
      if (std::string e = p->error(); !e.empty()) return e;
    }
    std::this_thread::sleep_until(std::min(t, Steady::now() + std::chrono::milliseconds(100)));
  }
  return "";
}

// The point's cameras and streams: one ClipPublisher per stream on a free local port, phased
// over one 25 fps frame, and the registry's stream reading it. TCP: the publishers listen first,
// then the streams connect. UDP: the streams bind first.
Status StartCamerasAndStreams(const VideoBenchOptions& options, int streams, double detect_fps,
                              video::StreamRegistry& registry,
                              std::vector<std::unique_ptr<video::ClipPublisher>>* publishers) {
  const bool tcp = options.transport == "tcp";
  const auto frame_interval = std::chrono::microseconds(40'000);
  std::vector<std::string> urls;
  for (int i = 0; i < streams; ++i) {
    MOGSERVE_ASSIGN_OR_RETURN(const int port, FreePort(tcp ? SOCK_STREAM : SOCK_DGRAM));
    urls.push_back(std::string(tcp ? "tcp" : "udp") + "://127.0.0.1:" + std::to_string(port));
  }
  auto start_publishers = [&]() -> Status {
    for (int i = 0; i < streams; ++i) {
      video::PublisherOptions p;
      p.clip = options.clip;
      p.url = urls[i] + (tcp ? "" : "?pkt_size=1316");
      p.listen = tcp;
      p.phase = frame_interval * i / streams;
      MOGSERVE_ASSIGN_OR_RETURN(auto publisher, video::ClipPublisher::Start(std::move(p)));
      publishers->push_back(std::move(publisher));
    }
    return Status::Ok();
  };
  auto add_streams = [&]() -> Status {
    for (int i = 0; i < streams; ++i) {
      MOGSERVE_RETURN_IF_ERROR(registry.Add({StreamId(i), urls[i], detect_fps}));
    }
    return Status::Ok();
  };
  if (tcp) {
    MOGSERVE_RETURN_IF_ERROR(start_publishers());
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // their sockets listening
    return add_streams();
  }
  MOGSERVE_RETURN_IF_ERROR(add_streams());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // their sockets bound
  return start_publishers();
}

// Until every stream has decoded its first frame (connecting and probing a live source takes
// about a second), or `deadline`.
void WaitForFirstFrames(const video::StreamRegistry& registry, int streams,
                        Steady::time_point deadline) {
  while (Steady::now() < deadline) {
    const auto counters = CountersById(registry);
    const bool all = std::all_of(counters.begin(), counters.end(),
                                 [](const auto& c) { return c.second.decoded > 0; });
    if (all && static_cast<int>(counters.size()) == streams) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// Stream i's frames in the window, from its counters at the window's start (a), end (b) and
// after the drain (c), `sent` frames from its camera and its results: added to `point`, and
// counted real-time when it kept up - else, the point's first failure says why not.
void AddStream(int i, const video::IngestCounters& a, const video::IngestCounters& b,
               const video::IngestCounters& c, const WindowResults::PerStream& r, int64_t sent,
               const VideoBenchOptions& options, VideoPoint* point) {
  // Frames dropped undecoded to catch up pass the decoder stage but were not decoded.
  const int64_t dropped = b.dropped_catchup - a.dropped_catchup;
  const int64_t decoded = b.decoded - a.decoded - dropped;
  const int64_t submitted = b.submitted - a.submitted;
  const int64_t not_detected = std::max<int64_t>(0, submitted - r.in_time - r.late);
  // Expired or failed frames cannot be told apart by window afterwards: any in the window or
  // the drain counts against the stream (conservative).
  const int64_t lost = (c.expired + c.failed) - (a.expired + a.failed);
  const int64_t expired = std::min(not_detected, lost);
  point->sent += sent;
  point->decoded += decoded;
  point->dropped_catchup += dropped;
  point->sampled_out += b.sampled_out - a.sampled_out;
  point->submitted += submitted;
  point->in_time += r.in_time;
  point->late += r.late;
  point->expired += expired;
  point->superseded += not_detected - expired;
  const bool decoded_enough =
      static_cast<double>(decoded) >= options.required_decoded * static_cast<double>(sent);
  const bool in_time_enough =
      static_cast<double>(r.in_time) >= options.required_in_time * static_cast<double>(submitted);
  if (decoded_enough && in_time_enough && r.late == 0 && lost == 0 && submitted > 0) {
    ++point->realtime_streams;
  } else if (point->failure.empty()) {
    char why[240];
    std::snprintf(why, sizeof(why),
                  "%s: decoded %lld/%lld sent (%lld dropped to catch up), in time %lld/%lld "
                  "submitted, late %lld, expired or failed %lld",
                  StreamId(i).c_str(), static_cast<long long>(decoded),
                  static_cast<long long>(sent), static_cast<long long>(dropped),
                  static_cast<long long>(r.in_time), static_cast<long long>(submitted),
                  static_cast<long long>(r.late), static_cast<long long>(lost));
    point->failure = why;
  }
}

// What the point counts at one edge of its window.
struct WindowEdge {
  std::vector<int64_t> sent;  // frames each camera has sent
  std::map<std::string, video::IngestCounters> counters;
  pipeline::PipelineStats stats;
  double reader_cpu = 0;   // CPU seconds of the stream readers (decoders)
  double process_cpu = 0;  // CPU seconds of the whole process
  Steady::time_point at;
};

WindowEdge EdgeOf(const std::vector<std::unique_ptr<video::ClipPublisher>>& publishers,
                  const video::StreamRegistry& registry, const pipeline::Pipeline& pipeline) {
  WindowEdge e;
  for (const auto& p : publishers) e.sent.push_back(p->frames_sent());
  e.counters = CountersById(registry);
  e.stats = pipeline.Stats();
  e.reader_cpu = ThreadsCpuSeconds("in-cam-");
  e.process_cpu = CpuSeconds();
  e.at = Steady::now();
  return e;
}

// The submissions stream i had made at `edge` (0 before its first).
int64_t SubmittedAt(const WindowEdge& edge, int i) {
  const auto it = edge.counters.find(StreamId(i));
  return it == edge.counters.end() ? 0 : it->second.submitted;
}

}  // namespace

StatusOr<VideoPoint> RunVideoPoint(pipeline::Pipeline& pipeline,
                                   const video::IngestOptions& defaults,
                                   const VideoBenchOptions& options, const std::string& scheduler,
                                   int streams, double detect_fps) {
  VideoPoint point;
  point.scheduler = scheduler;
  point.detect_fps = detect_fps;
  point.streams = streams;
  // Declared in this order so that the streams stop (the registry) before their cameras do: a
  // camera going away first would read as a lost source and start a reconnect.
  std::vector<std::unique_ptr<video::ClipPublisher>> publishers;
  WindowResults results(streams, options.deadline_ms);
  video::StreamRegistry registry(pipeline, defaults, streams);
  registry.SetFrameListener([&results](const video::FrameResult& r) {
    results.Add(std::stoi(r.stream.substr(4)), r.seq, r.latency_ms);
  });
  MOGSERVE_RETURN_IF_ERROR(
      StartCamerasAndStreams(options, streams, detect_fps, registry, &publishers));
  // The point starts once every stream has decoded its first frame, or after the open timeout.
  WaitForFirstFrames(registry, streams, Steady::now() + defaults.source.timeouts.open);
  const Steady::time_point start = Steady::now();
  const auto span =
      std::chrono::duration_cast<Steady::duration>(std::chrono::duration<double>(options.seconds));
  const Steady::time_point warm =
      start + std::chrono::duration_cast<Steady::duration>(span * kWarmupFraction);
  if (std::string e = SleepWatching(warm, publishers); !e.empty()) return Internal(e);

  // The window opens: every stream's next submission is its first counted frame.
  const WindowEdge open = EdgeOf(publishers, registry, pipeline);
  for (int i = 0; i < streams; ++i) results.SetWindow(i, SubmittedAt(open, i), INT64_MAX);
  if (std::string e = SleepWatching(start + span, publishers); !e.empty()) return Internal(e);
  const WindowEdge close = EdgeOf(publishers, registry, pipeline);
  for (int i = 0; i < streams; ++i) {
    results.SetWindow(i, results.Of(i).first, SubmittedAt(close, i));
  }
  point.window_s = std::chrono::duration<double>(close.at - open.at).count();

  // The window's last frames end within their timeout (superseded, detected or expired).
  std::this_thread::sleep_for(defaults.frame_timeout + std::chrono::milliseconds(500));
  const auto drained = CountersById(registry);

  for (int i = 0; i < streams; ++i) {
    const video::IngestCounters& a =
        open.counters.count(StreamId(i)) ? open.counters.at(StreamId(i)) : video::IngestCounters{};
    AddStream(i, a, close.counters.at(StreamId(i)), drained.at(StreamId(i)), results.Of(i),
              close.sent[i] - open.sent[i], options, &point);
  }
  point.all_realtime = point.realtime_streams == streams;
  point.latency = Summarize(results.latencies());
  point.detected_per_s = static_cast<double>(point.in_time + point.late) / point.window_s;
  FillPipelineFigures(open.stats, close.stats, point.window_s, &point);
  const double reader_cpu = close.reader_cpu - open.reader_cpu;
  point.decode_cpu_ms_per_frame = reader_cpu * 1e3 / std::max<int64_t>(1, point.decoded);
  point.decode_cores = reader_cpu / point.window_s;
  point.process_cores = (close.process_cpu - open.process_cpu) / point.window_s;
  registry.SetFrameListener(nullptr);
  return point;  // the registry stops the streams, then the publishers stop
}

StatusOr<VideoSearch> SearchMaxStreams(pipeline::Pipeline& pipeline,
                                       const video::IngestOptions& defaults,
                                       const VideoBenchOptions& options,
                                       const std::string& scheduler, double detect_fps,
                                       const std::function<void(const VideoPoint&)>& progress) {
  VideoSearch search;
  search.scheduler = scheduler;
  search.detect_fps = detect_fps;
  auto run = [&](int n) -> StatusOr<bool> {
    MOGSERVE_ASSIGN_OR_RETURN(VideoPoint point,
                              RunVideoPoint(pipeline, defaults, options, scheduler, n, detect_fps));
    if (progress) progress(point);
    search.points.push_back(point);
    if (point.all_realtime) search.max_realtime_streams = std::max(search.max_realtime_streams, n);
    return point.all_realtime;
  };
  // Doubling until a miss, then bisection between the last pass and the first miss.
  int passed = 0;
  int missed = 0;
  for (int n = 1; n <= options.max_streams; n = std::min(n * 2, options.max_streams)) {
    MOGSERVE_ASSIGN_OR_RETURN(const bool ok, run(n));
    if (!ok) {
      missed = n;
      break;
    }
    passed = n;
    if (n == options.max_streams) break;
  }
  while (missed > 0 && missed - passed > 1) {
    const int n = (passed + missed) / 2;
    MOGSERVE_ASSIGN_OR_RETURN(const bool ok, run(n));
    (ok ? passed : missed) = n;
  }
  search.max_realtime_streams = passed;
  return search;
}

namespace {

// Per search, the figures of its largest real-time point (of the first point when none passed).
ResultTable VideoSummaryTable(const VideoBenchReport& r) {
  ResultTable t;
  t.title = "bench video: real-time camera streams";
  t.rows_key.clear();  // the JSON holds the points themselves
  t.AddField({"engine", "engine", r.engine})
      .AddField({"machine", "machine", r.machine})
      .AddField({"clip", "clip", r.clip})
      .AddField({"settings", "settings", r.settings});
  t.AddColumn({"scheduler"})
      .AddColumn({"detect_fps", "", 0, 1, "", false, kInCsv})
      .AddColumn({"detect_fps_shown", "detect fps", 0, 1, "", false, kInMarkdown})
      .AddColumn({"max_realtime_streams", "", 0, 1, "", false, kInCsv})
      .AddColumn({"max_shown", "max real-time streams", 0, 1, "", false, kInMarkdown})
      .AddColumn({"detected_per_s", "detected/s"})
      .AddColumn({"p50_ms", "p50 ms", 0})
      .AddColumn({"p99_ms", "p99 ms", 0})
      .AddColumn({"mean_batch_size", "mean batch", 2})
      .AddColumn({"busy_ratio", "engine busy", 0, 100, " %"})
      .AddColumn({"decode_cpu_ms_per_frame", "decode ms/frame", 2})
      .AddColumn({"decode_cores", "decode cores", 2})
      .AddColumn({"process_cores", "process cores", 2});
  for (const VideoSearch& s : r.searches) {
    const VideoPoint* shown = s.points.empty() ? nullptr : &s.points.front();
    for (const VideoPoint& p : s.points) {
      if (p.all_realtime && p.streams == s.max_realtime_streams) shown = &p;
    }
    if (shown == nullptr) continue;
    t.AddRow({s.scheduler, s.detect_fps,
              s.detect_fps > 0 ? Cell{std::to_string(static_cast<int>(s.detect_fps))}
                               : Cell{std::string("all (25)")},
              int64_t{s.max_realtime_streams}, "**" + std::to_string(s.max_realtime_streams) + "**",
              shown->detected_per_s, shown->latency.median_ms, shown->latency.p99_ms,
              shown->mean_batch_size, shown->busy_ratio, shown->decode_cpu_ms_per_frame,
              shown->decode_cores, shown->process_cores});
  }
  t.notes.push_back("Figures are those of the largest real-time point (of N = 1 when none was).");
  return t;
}

// Every point in the order run; JSON: "searches": [{scheduler, detect_fps,
// max_realtime_streams, "points": [...]}].
ResultTable VideoPointsTable(const VideoBenchReport& r) {
  ResultTable t;
  t.intro = "Points, in the order run:";
  t.rows_key = "searches";
  t.group_columns = 3;
  t.nest_key = "points";
  const unsigned data = kInJson | kInCsv;
  t.AddColumn({"scheduler"})
      .AddColumn({"detect_fps", "detect fps", 0})
      .AddColumn({"max_realtime_streams", "", 0, 1, "", false, data})
      .AddColumn({"streams", "N"})
      .AddColumn({"window_s", "", 2, 1, "", false, data})
      .AddColumn({"realtime", "real-time", 0, 1, "", false, kInMarkdown})
      .AddColumn({"sent"})
      .AddColumn({"decoded"})
      .AddColumn({"dropped_catchup", "", 0, 1, "", false, data})
      .AddColumn({"sampled_out", "", 0, 1, "", false, data})
      .AddColumn({"submitted"})
      .AddColumn({"in_time", "in time"})
      .AddColumn({"late"})
      .AddColumn({"superseded"})
      .AddColumn({"expired_or_failed", "expired/failed"})
      .AddColumn({"realtime_streams", "", 0, 1, "", false, data})
      .AddColumn({"all_realtime", "", 0, 1, "", false, data})
      .AddColumn({"detected_per_s", "", 1, 1, "", false, data})
      .AddColumn({"p50_ms", "", 1, 1, "", false, data})
      .AddColumn({"p95_ms", "", 1, 1, "", false, data})
      .AddColumn({"p99_ms", "p99 ms", 0})
      .AddColumn({"mean_batch_size", "", 2, 1, "", false, data})
      .AddColumn({"busy_ratio", "", 2, 1, "", false, data})
      .AddColumn({"decode_cpu_ms_per_frame", "", 2, 1, "", false, data})
      .AddColumn({"decode_cores", "", 2, 1, "", false, data})
      .AddColumn({"process_cores", "", 2, 1, "", false, data})
      .AddColumn({"failure", "why missed"});
  for (const VideoSearch& s : r.searches) {
    for (const VideoPoint& p : s.points) {
      t.AddRow({s.scheduler,
                s.detect_fps,
                int64_t{s.max_realtime_streams},
                int64_t{p.streams},
                p.window_s,
                std::to_string(p.realtime_streams) + "/" + std::to_string(p.streams),
                int64_t{p.sent},
                int64_t{p.decoded},
                int64_t{p.dropped_catchup},
                int64_t{p.sampled_out},
                int64_t{p.submitted},
                int64_t{p.in_time},
                int64_t{p.late},
                int64_t{p.superseded},
                int64_t{p.expired},
                int64_t{p.realtime_streams},
                p.all_realtime,
                p.detected_per_s,
                p.latency.median_ms,
                p.latency.p95_ms,
                p.latency.p99_ms,
                p.mean_batch_size,
                p.busy_ratio,
                p.decode_cpu_ms_per_frame,
                p.decode_cores,
                p.process_cores,
                p.failure});
    }
  }
  return t;
}

}  // namespace

std::vector<ResultTable> VideoBenchTables(const VideoBenchReport& r) {
  return {VideoSummaryTable(r), VideoPointsTable(r)};
}

}  // namespace mogserve::bench

#endif  // MOGSERVE_WITH_VIDEO
