#include "video/stream_ingest.h"

#include <pthread.h>

#include <spdlog/spdlog.h>

#include <cmath>

#include "common/clock.h"

namespace mogserve::video {

using scheduler::Outcome;

namespace {

// Which frames detect_fps keeps: the first of each 1/fps slot of presentation time, so a 25 fps
// source at 5 fps gives frames 0, 5, 10, ... and a variable frame rate still gets one per slot.
class FrameSampler {
 public:
  explicit FrameSampler(double fps) : fps_(fps) {}
  bool Take(double pts_s) {
    if (fps_ <= 0) return true;
    // The epsilon keeps pts values that are exact multiples (0.2 s at 5 fps) in their own slot.
    const int64_t slot = static_cast<int64_t>(std::floor(pts_s * fps_ + 1e-6));
    if (slot <= last_slot_) return false;
    last_slot_ = slot;
    return true;
  }

 private:
  double fps_;
  int64_t last_slot_ = -1;
};

// An unparsable URL is refused by the reader when it opens; until then it counts as a file.
bool IsLiveUrl(const std::string& url) {
  StatusOr<SourceScheme> scheme = ParseSourceScheme(url);
  return scheme.ok() && IsLive(*scheme);
}

}  // namespace

StreamIngest::StreamIngest(pipeline::Pipeline& pipeline, IngestOptions options,
                           ResultCallback on_result)
    : pipeline_(pipeline),
      options_(std::move(options)),
      on_result_(std::move(on_result)),
      paced_(options_.realtime || IsLiveUrl(options_.source.url)),
      reader_(options_.source) {
  thread_ = std::thread([this] { Run(); });
  const std::string name = ("in-" + options_.id).substr(0, 15);  // the kernel's limit
  pthread_setname_np(thread_.native_handle(), name.c_str());
}

StreamIngest::~StreamIngest() {
  Stop();
  if (thread_.joinable()) thread_.join();
}

void StreamIngest::Stop() {
  stop_ = true;
  reader_.Interrupt();
  std::lock_guard<std::mutex> lock(mu_);
  cv_.notify_all();
}

std::optional<VideoError> StreamIngest::Wait() {
  if (thread_.joinable()) thread_.join();
  return error_;
}

IngestCounters StreamIngest::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counters_;
}

void StreamIngest::Run() {
  if (std::optional<VideoError> failed = reader_.Open()) {
    if (!stop_) error_ = std::move(failed);
  } else {
    expected_frames_ = reader_.expected_frames();
    opened_ = true;
    ReadFrames();
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return pending_.empty(); });
  }
  finished_ = true;
}

bool StreamIngest::ConnectionEnded(const VideoError& error) {
  // A live source that has sent frames ends by closing its connection, and FFmpeg reports that
  // per protocol: EOF (tcp, http MPEG-TS), EIO (rtmp), "invalid data" (MJPEG multipart cut at
  // the end of a part). There is no reconnecting yet, so that is the stream's end, not a failure.
  const bool read_error =
      error.code == VideoErrorCode::kIoError || error.code == VideoErrorCode::kInvalidData;
  if (!IsLiveUrl(options_.source.url) || !read_error || reader_.counters().decoded == 0) {
    return false;
  }
  spdlog::warn("stream {}: {} closed: {}", options_.id, reader_.display_url(), error.message);
  return true;
}

void StreamIngest::ReadFrames() {
  FrameSampler sampler(options_.detect_fps);
  const bool pace_file = options_.realtime && !IsLiveUrl(options_.source.url);
  const auto started = SteadyClock::now();
  int64_t sampled_before = 0;
  FrameInfo frame;
  while (!stop_) {
    const VideoReader::ReadState state = reader_.Next(&frame);
    {
      std::lock_guard<std::mutex> lock(mu_);
      counters_.corrupt = reader_.counters().corrupt;
    }
    if (state == VideoReader::ReadState::kEnded) return;
    if (state == VideoReader::ReadState::kFailed) {
      if (!stop_ && !ConnectionEnded(reader_.error())) error_ = reader_.error();
      return;
    }
    if (pace_file) {
      // A file played like a camera: its frame "arrives" when its presentation time comes.
      const auto due = started + std::chrono::duration_cast<SteadyClock::duration>(
                                     std::chrono::duration<double>(frame.pts_s));
      if (!WaitUntil(due)) return;
      frame.arrival = SteadyClock::now();
      frame.received_at = std::chrono::system_clock::now();
    }
    // A frame is counted as decoded together with where it went (sampled out here, submitted in
    // Submit), so every snapshot of the counters adds up; one abandoned by Stop while it waited
    // for its time never arrived.
    if (!sampler.Take(frame.pts_s)) {
      std::lock_guard<std::mutex> lock(mu_);
      ++counters_.decoded;
      ++counters_.sampled_out;
      ++sampled_before;
      continue;
    }
    Submit(frame, sampled_before);
    sampled_before = 0;
  }
}

bool StreamIngest::WaitUntil(SteadyClock::time_point t) {
  std::unique_lock<std::mutex> lock(mu_);
  return !cv_.wait_until(lock, t, [&] { return stop_.load(); });
}

void StreamIngest::Submit(const FrameInfo& frame, int64_t sampled_before) {
  pipeline::PreparedCanvas canvas = reader_.Scale(pipeline_.buckets(), pipeline_.canvas_pool());
  int64_t seq = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    seq = next_seq_++;
    pending_[seq] = {frame, canvas.preprocess_ms, sampled_before};
    ++counters_.decoded;
    ++counters_.submitted;
  }
  pipeline::SubmitRequest request;
  request.priority = scheduler::Priority::kStream;
  request.client = "stream:" + options_.id;
  request.latest_only = paced_;
  if (paced_) request.timeout = options_.frame_timeout;
  request.detect = options_.detect;
  pipeline_.SubmitPrepared(
      std::move(request), std::move(canvas),
      [this, seq](pipeline::RequestResult result) { OnResult(seq, std::move(result)); },
      paced_ ? pipeline::SubmitMode::kRefuse : pipeline::SubmitMode::kBlock);
}

void StreamIngest::Count(Outcome outcome) {
  switch (outcome) {
    case Outcome::kDone:
      ++counters_.detected;
      break;
    case Outcome::kSuperseded:
      ++counters_.superseded;
      break;
    case Outcome::kRejectedDeadline:
      ++counters_.expired;
      break;
    default:
      ++counters_.failed;
      break;
  }
}

void StreamIngest::OnResult(int64_t seq, pipeline::RequestResult result) {
  const auto now = SteadyClock::now();
  std::lock_guard<std::mutex> lock(mu_);
  Count(result.outcome);
  Pending& mine = pending_.at(seq);
  mine.latency_ms = std::chrono::duration<double, std::milli>(now - mine.frame.arrival).count();
  ended_.emplace(seq, std::move(result));
  // Deliver every frame whose predecessors have all ended, in order.
  for (auto it = ended_.find(next_delivery_); it != ended_.end();
       it = ended_.find(next_delivery_)) {
    auto pending = pending_.find(next_delivery_);
    skipped_ += pending->second.sampled_before;
    if (it->second.outcome == Outcome::kDone) {
      FrameResult r;
      r.stream = options_.id;
      r.seq = next_delivery_;
      r.frame = pending->second.frame;
      r.result = std::move(it->second);
      r.latency_ms = pending->second.latency_ms;
      r.scale_ms = pending->second.scale_ms;
      r.skipped = skipped_;
      skipped_ = 0;
      on_result_(r);
    } else {
      ++skipped_;
    }
    ended_.erase(it);
    pending_.erase(pending);
    ++next_delivery_;
  }
  cv_.notify_all();
}

}  // namespace mogserve::video
