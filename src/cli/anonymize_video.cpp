#include "cli/anonymize_video.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>

#include "json/result_json.h"
#ifdef MOGSERVE_WITH_VIDEO
#include "video/frame_sampler.h"
#include "video/video_rewriter.h"
#endif

namespace mogserve::cli {
#ifdef MOGSERVE_WITH_VIDEO

namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// A frame between the decoder and the encoder: its detection (when it has one) arrives on a
// library thread.
struct Pending {
  video::RewriteFrame frame;
  bool detect = false;
  std::optional<StatusOr<DetectResult>> result;  // guarded by Window::mu
};

// The frames in flight, oldest first; detections fill them in any order.
struct Window {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::shared_ptr<Pending>> frames;  // touched by the calling thread only
};

// The faces a frame is covered with: the tracker's answer (detected frames through Update, the
// others through Predict at their own time), or the detector's own faces without tracking.
std::vector<Detection> FacesOf(Pending& p, std::optional<track::Tracker>& tracker) {
  if (!tracker) return p.detect ? p.result->value().faces : std::vector<Detection>{};
  if (p.detect) return tracker->Update(p.frame.pts_s, p.result->value().faces);
  return tracker->Predict(p.frame.pts_s);
}

std::vector<video::PixelRect> Rects(const std::vector<Detection>& faces, float box_scale, int w,
                                    int h) {
  std::vector<video::PixelRect> rects;
  for (const Detection& f : faces) {
    const image::CoverRegion g = image::RegionOf(f, box_scale, w, h);
    if (!g.empty()) rects.push_back({g.x1, g.y1, g.x2, g.y2});
  }
  return rects;
}

class VideoJob {
 public:
  VideoJob(Detector& detector, const VideoAnonymizeOptions& options, std::ostream* json,
           std::string input)
      : detector_(detector), options_(options), json_(json), input_(std::move(input)) {
    if (options.track) {
      track::TrackerOptions t = options.tracker;
      // The detector answers from its own threshold: that is the tracker's high score, and no
      // face under it comes to continue a track.
      t.high_score = detector.info().defaults.score_threshold;
      t.low_score = t.high_score;
      // Hiding errs on the side of covering: a face found once is carried at once (a tentative
      // track would leave a new face bare on the frames until its second detection).
      t.min_hits = 1;
      tracker_.emplace(t);
    }
  }

  Status Run(video::VideoRewriter& rewriter,
             const std::function<void(int64_t, int64_t)>& progress) {
    video::FrameSampler sampler(options_.detect_fps);
    for (;;) {
      MOGSERVE_ASSIGN_OR_RETURN(std::optional<video::RewriteFrame> frame, rewriter.Next());
      if (!frame) break;
      auto p = std::make_shared<Pending>();
      p->frame = std::move(*frame);
      p->detect = sampler.Take(p->frame.pts_s) || !tracker_;
      if (p->detect) Submit(p);
      window_.frames.push_back(std::move(p));
      while (window_.frames.size() > static_cast<size_t>(std::max(1, options_.window))) {
        MOGSERVE_RETURN_IF_ERROR(WriteOldest(rewriter));
        progress(report_.frames, rewriter.expected_frames());
      }
    }
    while (!window_.frames.empty()) {
      MOGSERVE_RETURN_IF_ERROR(WriteOldest(rewriter));
      progress(report_.frames, rewriter.expected_frames());
    }
    return rewriter.Finish();
  }

  VideoAnonymizeReport report() const { return report_; }
  // Waits until every submitted detection has answered (their callbacks hold this job's window).
  void Drain() {
    std::unique_lock<std::mutex> lock(window_.mu);
    window_.cv.wait(lock, [&] { return in_flight_ == 0; });
  }

 private:
  void Submit(const std::shared_ptr<Pending>& p) {
    {
      std::lock_guard<std::mutex> lock(window_.mu);
      ++in_flight_;
    }
    const image::Image& rgb = p->frame.rgb;
    detector_.DetectAsync(Pixels{rgb.data.data(), rgb.width, rgb.height, 0},
                          [this, p](StatusOr<DetectResult> r) {
                            std::lock_guard<std::mutex> lock(window_.mu);
                            p->result = std::move(r);
                            --in_flight_;
                            window_.cv.notify_all();
                          });
  }

  // The oldest frame, once the frames before it and its own detection are done: covered,
  // encoded, written as a JSON line.
  Status WriteOldest(video::VideoRewriter& rewriter) {
    std::shared_ptr<Pending> p = window_.frames.front();
    window_.frames.pop_front();
    if (p->detect) {
      const auto waited = Clock::now();
      std::unique_lock<std::mutex> lock(window_.mu);
      window_.cv.wait(lock, [&] { return p->result.has_value(); });
      report_.detect_wait_s += Since(waited);
      if (!p->result->ok()) {
        return Status(p->result->status().code(), "frame " + std::to_string(p->frame.index) + ": " +
                                                      p->result->status().message());
      }
      ++report_.detected;
    }
    const auto covering = Clock::now();
    const std::vector<Detection> faces = FacesOf(*p, tracker_);
    image::AnonymizeFaces(p->frame.rgb, faces, options_.cover);
    const std::vector<video::PixelRect> rects =
        Rects(faces, options_.cover.box_scale, p->frame.rgb.width, p->frame.rgb.height);
    report_.cover_s += Since(covering);
    report_.faces += static_cast<int64_t>(faces.size());
    if (json_ != nullptr) WriteLine(*p, faces);
    const int64_t index = p->frame.index;
    MOGSERVE_RETURN_IF_ERROR(rewriter.Write(std::move(p->frame), rects));
    report_.frames = index + 1;
    return Status::Ok();
  }

  void WriteLine(const Pending& p, const std::vector<Detection>& faces) {
    DetectResult covered;
    covered.width = p.frame.rgb.width;
    covered.height = p.frame.rgb.height;
    covered.faces = faces;
    nlohmann::json line = ResultToJson(covered, false);
    line["path"] = input_;
    line["frame"] = p.frame.index;
    line["pts"] = Round(p.frame.pts_s, 6);
    line["detected"] = p.detect;
    *json_ << ToJsonLine(line) << "\n";
  }

  Detector& detector_;
  const VideoAnonymizeOptions& options_;
  std::ostream* json_;
  const std::string input_;
  std::optional<track::Tracker> tracker_;
  Window window_;
  int64_t in_flight_ = 0;  // guarded by window_.mu
  VideoAnonymizeReport report_;
};

}  // namespace

StatusOr<VideoAnonymizeReport> AnonymizeVideo(
    Detector& detector, const std::string& input, const std::string& output,
    const VideoAnonymizeOptions& options, std::ostream* json,
    const std::function<void(int64_t, int64_t)>& progress) {
  if (!options.track && options.detect_fps > 0) {
    return InvalidArgument(
        "--detect-fps needs --track (the frames between detections are "
        "covered where the tracker predicts the faces)");
  }
  const auto started = Clock::now();
  video::RewriteOptions o;
  o.input = input;
  o.output = output;
  MOGSERVE_ASSIGN_OR_RETURN(std::unique_ptr<video::VideoRewriter> rewriter,
                            video::VideoRewriter::Open(o));
  VideoJob job(detector, options, json, input);
  const Status ran = job.Run(*rewriter, progress);
  job.Drain();  // a failed run may leave detections in flight: their callbacks touch the job
  MOGSERVE_RETURN_IF_ERROR(ran);
  VideoAnonymizeReport report = job.report();
  const video::VideoRewriter::Timings t = rewriter->timings();
  report.decode_s = t.decode_s;
  report.convert_s = t.convert_s;
  report.encode_s = t.encode_s;
  report.seconds = Since(started);
  return report;
}

#else

StatusOr<VideoAnonymizeReport> AnonymizeVideo(Detector&, const std::string& input,
                                              const std::string&, const VideoAnonymizeOptions&,
                                              std::ostream*,
                                              const std::function<void(int64_t, int64_t)>&) {
  return Unsupported(input +
                     ": this mogserve was built without video support (configure with "
                     "-DMOGSERVE_WITH_VIDEO=ON and FFmpeg's -dev packages: scripts/setup.sh)");
}

#endif

}  // namespace mogserve::cli
