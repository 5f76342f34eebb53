#include "video/stream_ingest.h"

#include <pthread.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>

#include "common/clock.h"
#include "common/enum_names.h"
#include "video/frame_sampler.h"

namespace mogserve::video {

using scheduler::Outcome;

namespace {

// An unparsable URL is refused by the reader when it opens; until then it counts as a file.
bool IsLiveUrl(const std::string& url) {
  StatusOr<SourceScheme> scheme = ParseSourceScheme(url);
  return scheme.ok() && IsLive(*scheme);
}

// Seconds of a steady time point, for the lag (differences only).
double Seconds(SteadyClock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

// What a stream's frames are submitted with: with tracking, the detection threshold lowered to
// the tracker's low score (its second pass needs the faces under the threshold too).
std::optional<DetectOptions> SubmitDetect(const IngestOptions& o, const pipeline::Pipeline& p) {
  if (!o.track) return o.detect;
  DetectOptions d = o.detect.value_or(p.default_detect());
  d.score_threshold = std::min(d.score_threshold, o.track->low_score);
  return d;
}

// A reconnection's gap on the tracker's clock (TrackTime): its tracks coast over it as over
// three frames of a 30 fps source.
constexpr double kReconnectGapS = 0.1;

}  // namespace

constexpr EnumNames<StreamState, StreamState::kFailed> kStreamStateNames{
    {"connecting", "running", "reconnecting", "ended", "failed"}};

const char* StreamStateName(StreamState state) {
  return NameOf(kStreamStateNames, state, "failed");
}

StreamIngest::StreamIngest(pipeline::Pipeline& pipeline, IngestOptions options,
                           ResultCallback on_result)
    : pipeline_(pipeline),
      options_(std::move(options)),
      on_result_(std::move(on_result)),
      paced_(options_.realtime || IsLiveUrl(options_.source.url)),
      live_(IsLiveUrl(options_.source.url)),
      display_url_(RedactCredentials(options_.source.url)),
      window_(SteadyClock::now()),
      submit_detect_(SubmitDetect(options_, pipeline)) {
  status_.since = std::chrono::system_clock::now();
  if (options_.track) {
    track::TrackerOptions t = *options_.track;
    t.high_score = options_.detect.value_or(pipeline.default_detect()).score_threshold;
    tracker_.emplace(t);
  }
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
  {
    std::lock_guard<std::mutex> lock(reader_mu_);
    if (reader_) reader_->Interrupt();
  }
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

IngestStatus StreamIngest::status() const {
  const auto now = SteadyClock::now();
  std::lock_guard<std::mutex> lock(mu_);
  IngestStatus s = status_;
  s.counters = counters_;
  s.fps.received = window_.PerSecond(StreamEvent::kReceived, now);
  s.fps.decoded = window_.PerSecond(StreamEvent::kDecoded, now);
  s.fps.dropped_catchup = window_.PerSecond(StreamEvent::kDroppedCatchup, now);
  s.fps.corrupt = window_.PerSecond(StreamEvent::kCorrupt, now);
  s.fps.sampled_out = window_.PerSecond(StreamEvent::kSampledOut, now);
  s.fps.detected = window_.PerSecond(StreamEvent::kDetected, now);
  s.fps.superseded = window_.PerSecond(StreamEvent::kSuperseded, now);
  s.fps.expired = window_.PerSecond(StreamEvent::kExpired, now);
  s.latency = window_.Latency(now);
  if (tracker_) s.tracks = tracker_->stats();
  return s;
}

void StreamIngest::SetState(StreamState state, const std::optional<VideoError>& error) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto now = std::chrono::system_clock::now();
  if (state != status_.state) status_.since = now;
  status_.state = state;
  if (error) {
    status_.last_error = error;
    status_.last_error_at = now;
  }
}

void StreamIngest::Run() {
  ReconnectBackoff backoff(options_.backoff);
  while (!stop_) {
    const Attempt attempt = Connect();
    if (stop_) break;
    const bool retry =
        options_.reconnect && live_ && (!attempt.error || IsRetryable(attempt.error->code));
    if (!retry) {
      error_ = attempt.error;
      SetState(attempt.error ? StreamState::kFailed : StreamState::kEnded, attempt.error);
      if (attempt.error && options_.reconnect) {
        spdlog::warn("stream {}: failed, not retried: {}", options_.id, attempt.error->message);
      }
      break;
    }
    const VideoError lost =
        attempt.error ? *attempt.error
                      : VideoError{VideoErrorCode::kIoError,
                                   "reading " + display_url_ + ": the source ended the stream"};
    const std::chrono::milliseconds delay = backoff.Next(attempt.ran_for);
    SetState(StreamState::kReconnecting, lost);
    spdlog::warn("stream {}: {}; reconnecting in {:.1f} s", options_.id, lost.message,
                 static_cast<double>(delay.count()) / 1000.0);
    if (!WaitUntil(SteadyClock::now() + delay)) break;
  }
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return pending_.empty(); });
  finished_ = true;
}

StreamIngest::Attempt StreamIngest::Connect() {
  VideoSourceOptions source = options_.source;
  if (live_) {
    source.no_frame_timeout = options_.no_frame_timeout;
    source.catch_up = true;  // a file read in bulk or paced is never behind its source
  }
  std::unique_ptr<VideoReader> previous;
  {
    std::lock_guard<std::mutex> lock(reader_mu_);
    if (stop_) return {};
    previous = std::move(reader_);
    reader_ = std::make_unique<VideoReader>(std::move(source));
  }
  previous.reset();  // closes the lost connection outside the lock
  VideoReader& reader = *reader_;
  if (std::optional<VideoError> failed = reader.Open()) {
    if (stop_) return {};
    return {std::move(failed), std::chrono::milliseconds(0)};
  }
  expected_frames_ = reader.expected_frames();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (opened_) ++status_.reconnects;
    status_.codec = reader.codec_name();
    status_.decoder = reader.decoder_name();
    status_.source_fps = reader.frame_rate();
  }
  opened_ = true;
  spdlog::info("stream {}: {}: decoder {}", options_.id, display_url_, reader.decoder_name());
  SetState(StreamState::kRunning, std::nullopt);
  SteadyClock::time_point first_frame{};
  Attempt attempt;
  attempt.error = ReadFrames(reader, &first_frame);
  if (first_frame != SteadyClock::time_point{}) {
    attempt.ran_for =
        std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - first_frame);
  }
  if (stop_) attempt.error.reset();
  return attempt;
}

bool StreamIngest::ConnectionEnded(const VideoReader& reader, const VideoError& error) {
  // A live source that has sent frames ends by closing its connection, and FFmpeg reports that
  // per protocol: EOF (tcp, http MPEG-TS), EIO (rtmp), "invalid data" (MJPEG multipart cut at
  // the end of a part).
  const bool read_error =
      error.code == VideoErrorCode::kIoError || error.code == VideoErrorCode::kInvalidData;
  if (!live_ || !read_error || reader.counters().decoded == 0) return false;
  spdlog::warn("stream {}: {} closed: {}", options_.id, display_url_, error.message);
  return true;
}

void StreamIngest::TakeReaderCounts(const VideoReader& reader, ReaderCounters* seen) {
  const ReaderCounters now = reader.counters();
  const auto t = SteadyClock::now();
  const int64_t dropped = now.dropped_catchup - seen->dropped_catchup;
  counters_.received += now.packets - seen->packets;
  counters_.corrupt += now.corrupt - seen->corrupt;
  counters_.decoded += dropped;  // together: every snapshot of the counters adds up
  counters_.dropped_catchup += dropped;
  window_.Add(StreamEvent::kReceived, t, now.packets - seen->packets);
  window_.Add(StreamEvent::kCorrupt, t, now.corrupt - seen->corrupt);
  window_.Add(StreamEvent::kDecoded, t, dropped);
  window_.Add(StreamEvent::kDroppedCatchup, t, dropped);
  *seen = now;
}

std::optional<VideoError> StreamIngest::ReadFrames(VideoReader& reader,
                                                   SteadyClock::time_point* first_frame) {
  FrameSampler sampler(options_.detect_fps);  // per connection: timestamps restart
  const bool pace_file = options_.realtime && !live_;
  const auto started = SteadyClock::now();
  ReaderCounters seen;
  int64_t sampled_before = 0;
  FrameInfo frame;
  while (!stop_) {
    const VideoReader::ReadState state = reader.Next(&frame);
    {
      std::lock_guard<std::mutex> lock(mu_);
      TakeReaderCounts(reader, &seen);
    }
    if (state == VideoReader::ReadState::kEnded) return std::nullopt;
    if (state == VideoReader::ReadState::kFailed) {
      if (stop_) return std::nullopt;
      if (!ConnectionEnded(reader, reader.error())) return reader.error();
      // A lost connection (retried when reconnecting), or the stream's end.
      if (!options_.reconnect) return std::nullopt;
      return VideoError{VideoErrorCode::kIoError, reader.error().message};
    }
    if (pace_file) {
      // A file played like a camera: its frame "arrives" when its presentation time comes.
      const auto due = started + std::chrono::duration_cast<SteadyClock::duration>(
                                     std::chrono::duration<double>(frame.pts_s));
      if (!WaitUntil(due)) return std::nullopt;
      frame.arrival = SteadyClock::now();
      frame.received_at = std::chrono::system_clock::now();
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      const double offset_s = Seconds(frame.arrival) - frame.pts_s;
      if (*first_frame == SteadyClock::time_point{}) {
        *first_frame = frame.arrival;
        lag_origin_s_ = offset_s;
      }
      lag_origin_s_ = std::min(lag_origin_s_, offset_s);
      status_.lag_ms = (offset_s - lag_origin_s_) * 1000;
      status_.decoder = reader.decoder_name();  // NVDEC may be refused at the first frame
      status_.width = frame.width;
      status_.height = frame.height;
    }
    // A frame is counted as decoded together with where it went (sampled out here, submitted in
    // Submit), so every snapshot of the counters adds up; one abandoned by Stop while it waited
    // for its time never arrived.
    if (!sampler.Take(frame.pts_s)) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        const auto now = SteadyClock::now();
        ++counters_.decoded;
        ++counters_.sampled_out;
        window_.Add(StreamEvent::kDecoded, now);
        window_.Add(StreamEvent::kSampledOut, now);
      }
      if (options_.every_frame) {
        AddSampledOut(reader, frame);
      } else {
        ++sampled_before;
      }
      continue;
    }
    Submit(reader, frame, sampled_before);
    sampled_before = 0;
  }
  return std::nullopt;
}

bool StreamIngest::WaitUntil(SteadyClock::time_point t) {
  std::unique_lock<std::mutex> lock(mu_);
  return !cv_.wait_until(lock, t, [&] { return stop_.load(); });
}

std::shared_ptr<const image::Image> StreamIngest::TakePreview(VideoReader& reader,
                                                              const FrameInfo& frame) {
  if (options_.preview_max_side_px <= 0) return nullptr;
  const double scale = std::min(
      1.0, static_cast<double>(options_.preview_max_side_px) / std::max(frame.width, frame.height));
  const auto bytes = static_cast<int64_t>(frame.width * scale * frame.height * scale * 3);
  {
    std::unique_lock<std::mutex> lock(mu_);
    auto room = [&] {
      return preview_bytes_ == 0 || preview_bytes_ + bytes <= options_.preview_budget_bytes;
    };
    if (paced_ && !room()) return nullptr;
    cv_.wait(lock, [&] { return stop_ || room(); });  // results free previews (OnResult)
  }
  return std::make_shared<const image::Image>(reader.Preview(options_.preview_max_side_px));
}

void StreamIngest::Submit(VideoReader& reader, const FrameInfo& frame, int64_t sampled_before) {
  std::shared_ptr<const image::Image> preview = TakePreview(reader, frame);
  pipeline::PreparedCanvas canvas = reader.Scale(pipeline_.buckets(), pipeline_.canvas_pool());
  int64_t seq = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (preview) preview_bytes_ += static_cast<int64_t>(preview->data.size());
    seq = next_seq_++;
    pending_[seq] = {frame, canvas.preprocess_ms, sampled_before, std::move(preview)};
    pending_[seq].connection = status_.reconnects;
    ++counters_.decoded;
    ++counters_.submitted;
    window_.Add(StreamEvent::kDecoded, SteadyClock::now());
  }
  pipeline::SubmitRequest request;
  request.priority = scheduler::Priority::kStream;
  request.client = "stream:" + options_.id;
  request.latest_only = paced_;
  if (paced_) request.timeout = options_.frame_timeout;
  request.detect = submit_detect_;
  pipeline_.SubmitPrepared(
      std::move(request), std::move(canvas),
      [this, seq](pipeline::RequestResult result) { OnResult(seq, std::move(result)); },
      paced_ ? pipeline::SubmitMode::kRefuse : pipeline::SubmitMode::kBlock);
}

void StreamIngest::Count(Outcome outcome) {
  const auto now = SteadyClock::now();
  switch (outcome) {
    case Outcome::kDone:
      ++counters_.detected;
      window_.Add(StreamEvent::kDetected, now);
      break;
    case Outcome::kSuperseded:
      ++counters_.superseded;
      window_.Add(StreamEvent::kSuperseded, now);
      break;
    case Outcome::kRejectedDeadline:
      ++counters_.expired;
      window_.Add(StreamEvent::kExpired, now);
      break;
    default:
      ++counters_.failed;
      window_.Add(StreamEvent::kFailed, now);
      break;
  }
}

void StreamIngest::OnResult(int64_t seq, pipeline::RequestResult result) {
  const auto now = SteadyClock::now();
  std::lock_guard<std::mutex> lock(mu_);
  Count(result.outcome);
  Pending& mine = pending_.at(seq);
  mine.latency_ms = std::chrono::duration<double, std::milli>(now - mine.frame.arrival).count();
  if (result.outcome == Outcome::kDone) window_.AddLatency(mine.latency_ms, now);
  ended_.emplace(seq, std::move(result));
  DeliverInOrder();
}

void StreamIngest::AddSampledOut(VideoReader& reader, const FrameInfo& frame) {
  std::shared_ptr<const image::Image> preview = TakePreview(reader, frame);
  std::lock_guard<std::mutex> lock(mu_);
  if (preview) preview_bytes_ += static_cast<int64_t>(preview->data.size());
  const int64_t seq = next_seq_++;
  Pending& p = pending_[seq];
  p.frame = frame;
  p.preview = std::move(preview);
  p.sampled_out = true;
  p.connection = status_.reconnects;
  ended_.emplace(seq, pipeline::RequestResult{});
  DeliverInOrder();
}

void StreamIngest::DeliverInOrder() {
  for (auto it = ended_.find(next_delivery_); it != ended_.end();
       it = ended_.find(next_delivery_)) {
    auto pending = pending_.find(next_delivery_);
    skipped_ += pending->second.sampled_before;
    if (pending->second.preview) {
      preview_bytes_ -= static_cast<int64_t>(pending->second.preview->data.size());
    }
    const bool detected = !pending->second.sampled_out && it->second.outcome == Outcome::kDone;
    if (detected || options_.every_frame) {
      FrameResult r = MakeResult(pending->second, std::move(it->second));
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

FrameResult StreamIngest::MakeResult(Pending& pending, pipeline::RequestResult result) {
  FrameResult r;
  r.stream = options_.id;
  r.seq = next_delivery_;
  r.frame = pending.frame;
  r.detected = !pending.sampled_out && result.outcome == Outcome::kDone;
  r.result = std::move(result);
  r.latency_ms = pending.latency_ms;
  r.scale_ms = pending.scale_ms;
  r.preview = std::move(pending.preview);
  DetectResult& answer = r.result.result;
  if (!r.detected) {  // every_frame: a frame without the detector's answer
    answer = DetectResult{};
    answer.width = pending.frame.width;
    answer.height = pending.frame.height;
  }
  if (tracker_) {
    const double t_s = TrackTime(pending);
    answer.faces = r.detected ? tracker_->Update(t_s, answer.faces) : tracker_->Predict(t_s);
  }
  return r;
}

double StreamIngest::TrackTime(const Pending& pending) {
  if (pending.connection != track_connection_) {
    track_connection_ = pending.connection;
    track_offset_s_ = track_last_s_ + kReconnectGapS - pending.frame.pts_s;
  }
  track_last_s_ = std::max(track_last_s_, pending.frame.pts_s + track_offset_s_);
  return track_last_s_;
}

}  // namespace mogserve::video
