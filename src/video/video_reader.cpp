#include "video/video_reader.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/avutil.h>
#include <libavutil/error.h>
#include <libavutil/hwcontext.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
}

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <limits>
#include <mutex>
#include <string_view>

#include "common/clock.h"
#include "common/enum_names.h"
#include "image/resize.h"
#include "video/av_error.h"

namespace mogserve::video {
namespace {

using WallClock = std::chrono::system_clock;

// FFmpeg's own log lines (errors only: its warnings repeat for every damaged frame) go to the
// server's log with any URL in them redacted, at most kLogLinesPerSecond per second in all, so a
// broken stream cannot flood the log.
constexpr int kLogLinesPerSecond = 20;

// While set, this thread's FFmpeg error lines are collected here instead of logged: the reason
// a hardware decoder could not be opened is in them ("Cannot load libcuda.so.1"), not in its
// return code.
thread_local std::string* captured_log = nullptr;

void LogFromFfmpeg(void* avcl, int level, const char* format, va_list args) {
  if (level > AV_LOG_ERROR) return;
  if (captured_log != nullptr) {
    char line[512];
    int print_prefix = 0;
    av_log_format_line2(nullptr, level, format, args, line, sizeof(line), &print_prefix);
    std::string text = line;
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    if (!text.empty()) *captured_log += (captured_log->empty() ? "" : "; ") + text;
    return;
  }
  static std::mutex mu;
  static SteadyClock::time_point window_start;
  static int lines_in_window = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    const auto now = SteadyClock::now();
    if (now - window_start >= std::chrono::seconds(1)) {
      window_start = now;
      lines_in_window = 0;
    }
    if (++lines_in_window > kLogLinesPerSecond) return;
  }
  char line[1024];
  int print_prefix = 1;
  av_log_format_line2(avcl, level, format, args, line, sizeof(line), &print_prefix);
  std::string text = RedactCredentials(line);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  spdlog::warn("ffmpeg: {}", text);
}

void InstallLogCallback() {
  static std::once_flag once;
  std::call_once(once, [] { av_log_set_callback(LogFromFfmpeg); });
}

// The code of an FFmpeg error that is not an interrupt (those are told apart by the caller).
VideoErrorCode Classify(int rc) {
  switch (rc) {
    case AVERROR(ETIMEDOUT):
      return VideoErrorCode::kTimeout;
    case AVERROR(ECONNREFUSED):
    case AVERROR(EHOSTUNREACH):
    case AVERROR(ENETUNREACH):
    case AVERROR(EADDRNOTAVAIL):
      return VideoErrorCode::kUnreachable;
    case AVERROR(ENOENT):
    case AVERROR_HTTP_NOT_FOUND:
      return VideoErrorCode::kNotFound;
    case AVERROR(EACCES):
    case AVERROR(EPERM):
    case AVERROR_HTTP_UNAUTHORIZED:
    case AVERROR_HTTP_FORBIDDEN:
      return VideoErrorCode::kUnauthorized;
    case AVERROR_INVALIDDATA:
    case AVERROR_DEMUXER_NOT_FOUND:
      return VideoErrorCode::kInvalidData;
    case AVERROR_PROTOCOL_NOT_FOUND:
      return VideoErrorCode::kBadUrl;
    default:
      return VideoErrorCode::kIoError;
  }
}

std::string Seconds(std::chrono::milliseconds ms) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.3g s", static_cast<double>(ms.count()) / 1000.0);
  return text;
}

// Whether FFmpeg's decoder can decode through a CUDA device (NVDEC).
bool HasCudaConfig(const AVCodec* decoder) {
  for (int i = 0;; ++i) {
    const AVCodecHWConfig* config = avcodec_get_hw_config(decoder, i);
    if (config == nullptr) return false;
    if ((config->methods & AV_CODEC_HW_CONFIG_METHOD_HW_DEVICE_CTX) != 0 &&
        config->device_type == AV_HWDEVICE_TYPE_CUDA) {
      return true;
    }
  }
}

// The process's CUDA device for decoding, opened once and shared by every stream (a CUDA context
// costs hundreds of MB of GPU memory; one per camera would not do). Null with `why` when it
// cannot be opened; the answer is kept (a driver does not appear while the process runs).
AVBufferRef* SharedCudaDevice(std::string* why) {
  static std::mutex mu;
  static AVBufferRef* device = nullptr;  // lives as long as the process
  static std::string failure;
  static bool tried = false;
  std::lock_guard<std::mutex> lock(mu);
  if (!tried) {
    tried = true;
    std::string ffmpeg_says;
    captured_log = &ffmpeg_says;
    const int rc = av_hwdevice_ctx_create(&device, AV_HWDEVICE_TYPE_CUDA, nullptr, nullptr, 0);
    captured_log = nullptr;
    if (rc < 0) {
      device = nullptr;
      failure = "cuda unavailable: " + (ffmpeg_says.empty() ? AvErrorText(rc) : ffmpeg_says);
    }
  }
  if (device == nullptr) *why = failure;
  return device;
}

}  // namespace

constexpr EnumNames<HwAccel, HwAccel::kNone> kHwAccelNames{{"auto", "cuda", "none"}};

const char* HwAccelName(HwAccel hwaccel) {
  return NameOf(kHwAccelNames, hwaccel, "none");
}

std::optional<HwAccel> ParseHwAccel(const std::string& text) {
  return FindByName(kHwAccelNames, text);
}

constexpr EnumNames<VideoErrorCode, VideoErrorCode::kCancelled> kVideoErrorNames{
    {"bad_url", "unreachable", "timeout", "not_found", "unauthorized", "no_video_stream",
     "unsupported_codec", "invalid_data", "io_error", "cancelled"}};

const char* VideoErrorName(VideoErrorCode code) {
  return NameOf(kVideoErrorNames, code, "io_error");
}

struct VideoReader::Impl {
  VideoSourceOptions options;
  std::string display_url;
  VideoError error;

  std::atomic<bool> stop{false};
  // The blocking call in progress ends after this (steady clock, ns since its epoch). Written by
  // the reading thread; read by the interrupt callback.
  std::atomic<int64_t> deadline_ns{std::numeric_limits<int64_t>::max()};
  std::chrono::milliseconds deadline_budget{0};  // what the deadline was set to, for messages
  bool watchdog_deadline = false;  // the deadline is the no-frame watchdog's, not the I/O one

  AVFormatContext* format = nullptr;
  AVCodecContext* codec = nullptr;
  AVPacket* packet = nullptr;
  AVFrame* frame = nullptr;
  AVFrame* sw_frame = nullptr;  // a frame decoded on the GPU, copied to memory (NV12)
  AVFrame* picture = nullptr;   // what Next last returned: `frame` or `sw_frame`
  std::string decoded_by;       // "cuda", "software", "software; <why not cuda>"
  CatchUp catch_up;
  // HLS/DASH: segments arrive whole, each a segment's length after it began, so reading always
  // trails the source by about a segment — a structural lag, not falling behind: catching up
  // would drop frames of every segment.
  bool segmented = false;
  SwsContext* sws = nullptr;
  SwsContext* preview_sws = nullptr;
  int stream_index = -1;
  AVRational time_base{1, 1};
  int64_t first_pts = AV_NOPTS_VALUE;
  bool waiting_for_key = true;  // packets before the first keyframe cannot be decoded
  bool draining = false;        // the end was reached; the decoder is being flushed
  ReaderCounters counters;
  FrameInfo last;
  double pending_decode_ms = 0;  // decoder time since the last frame returned

  // When each recent packet was read, by timestamp, so a frame gets its packet's arrival.
  struct Arrival {
    int64_t ts = AV_NOPTS_VALUE;
    SteadyClock::time_point steady{};
    WallClock::time_point wall{};
  };
  std::array<Arrival, 64> arrivals{};
  size_t next_arrival = 0;

  ~Impl() {
    sws_freeContext(sws);
    sws_freeContext(preview_sws);
    av_frame_free(&frame);
    av_frame_free(&sw_frame);
    av_packet_free(&packet);
    avcodec_free_context(&codec);
    avformat_close_input(&format);
  }

  static int InterruptCallback(void* opaque) {
    const Impl* self = static_cast<const Impl*>(opaque);
    if (self->stop.load(std::memory_order_relaxed)) return 1;
    return SteadyClock::now().time_since_epoch().count() > self->deadline_ns.load() ? 1 : 0;
  }
  void SetDeadline(std::chrono::milliseconds budget) {
    deadline_budget = budget;
    watchdog_deadline = false;
    deadline_ns = (SteadyClock::now() + budget).time_since_epoch().count();
  }
  // The I/O timeout, or the watchdog's end when that comes first.
  void SetReadDeadline(SteadyClock::time_point watchdog_end) {
    SetDeadline(options.timeouts.io);
    if (watchdog_end.time_since_epoch().count() < deadline_ns.load()) {
      deadline_ns = watchdog_end.time_since_epoch().count();
      watchdog_deadline = true;
    }
  }
  bool DeadlinePassed() const {
    return SteadyClock::now().time_since_epoch().count() > deadline_ns.load();
  }

  // Records a failure of `phase` ("opening", "reading", ...) from FFmpeg's code `rc`.
  VideoError& Fail(const std::string& phase, int rc) {
    if (rc == AVERROR_EXIT && stop) {
      return Fail(VideoErrorCode::kCancelled, phase + " " + display_url + ": interrupted");
    }
    if (watchdog_deadline && (rc == AVERROR_EXIT || DeadlinePassed())) {
      return Fail(VideoErrorCode::kTimeout, phase + " " + display_url + ": no frame within " +
                                                Seconds(options.no_frame_timeout));
    }
    if (rc == AVERROR_EXIT || (rc == AVERROR(ETIMEDOUT) && DeadlinePassed())) {
      return Fail(VideoErrorCode::kTimeout,
                  phase + " " + display_url + ": no answer within " + Seconds(deadline_budget));
    }
    return Fail(Classify(rc), phase + " " + display_url + ": " + AvErrorText(rc));
  }
  VideoError& Fail(VideoErrorCode code, std::string message) {
    error = {code, RedactCredentials(message)};
    return error;
  }

  std::optional<VideoError> OpenInput();
  std::optional<VideoError> OpenDecoder();
  // Gives the decoder a CUDA device when asked and possible; notes what decodes and why.
  void AttachCuda(const AVCodec* decoder, const std::string& name);
  void FallBackToSoftware(const std::string& why);
  static AVPixelFormat PickFormat(AVCodecContext* ctx, const AVPixelFormat* formats);
  // Whether catching up drops the packet just read (counted).
  bool DropToCatchUp();
  // Makes `picture` the frame just decoded, copied to memory when it is on the GPU.
  std::optional<VideoError> TakePicture();
  void RecordArrival();
  FrameInfo DescribeFrame();
};

std::optional<VideoError> VideoReader::Impl::OpenInput() {
  StatusOr<SourceScheme> scheme = ParseSourceScheme(options.url);
  if (!scheme.ok()) return Fail(VideoErrorCode::kBadUrl, scheme.status().message());
  format = avformat_alloc_context();
  format->interrupt_callback = {&Impl::InterruptCallback, this};
  AVDictionary* dict = nullptr;
  for (const auto& [key, value] :
       FormatOptions(*scheme, options.timeouts, options.rtsp_transport, options.listen)) {
    av_dict_set(&dict, key.c_str(), value.c_str(), 0);
  }
  av_dict_set(&dict, "probesize", std::to_string(options.probe_size_bytes).c_str(), 0);
  av_dict_set(&dict, "analyzeduration",
              std::to_string(options.analyze_duration.count() * 1000).c_str(), 0);
  SetDeadline(options.timeouts.open);
  // On failure avformat_open_input frees the context and sets it to null.
  int rc = avformat_open_input(&format, options.url.c_str(), nullptr, &dict);
  av_dict_free(&dict);
  if (rc < 0) return Fail("opening", rc);
  segmented = std::string_view(format->iformat->name) == "hls" ||
              std::string_view(format->iformat->name) == "dash";
  rc = avformat_find_stream_info(format, nullptr);
  if (rc < 0) return Fail("probing", rc);
  return std::nullopt;
}

std::optional<VideoError> VideoReader::Impl::OpenDecoder() {
  stream_index = av_find_best_stream(format, AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
  if (stream_index < 0) {
    return Fail(VideoErrorCode::kNoVideoStream, display_url + " has no video stream");
  }
  const AVStream* stream = format->streams[stream_index];
  const std::string name = avcodec_get_name(stream->codecpar->codec_id);
  if (std::find(options.codecs.begin(), options.codecs.end(), name) == options.codecs.end()) {
    std::string supported;
    for (const std::string& c : options.codecs) supported += (supported.empty() ? "" : ", ") + c;
    return Fail(VideoErrorCode::kUnsupportedCodec,
                "video codec '" + name + "' of " + display_url +
                    " is not supported; supported: " + supported);
  }
  const AVCodec* decoder = avcodec_find_decoder(stream->codecpar->codec_id);
  if (decoder == nullptr) {
    return Fail(VideoErrorCode::kUnsupportedCodec, "no decoder for video codec '" + name + "'");
  }
  codec = avcodec_alloc_context3(decoder);
  int rc = avcodec_parameters_to_context(codec, stream->codecpar);
  if (rc < 0) return Fail("configuring the decoder of", rc);
  codec->pkt_timebase = stream->time_base;
  codec->thread_count = std::max(1, options.decode_threads);
  codec->thread_type = FF_THREAD_SLICE;
  codec->flags |= AV_CODEC_FLAG_LOW_DELAY;
  AttachCuda(decoder, name);
  rc = avcodec_open2(codec, decoder, nullptr);
  if (rc < 0) return Fail("opening the decoder of", rc);
  time_base = stream->time_base;
  packet = av_packet_alloc();
  frame = av_frame_alloc();
  sw_frame = av_frame_alloc();
  catch_up = CatchUp(options.catch_up_options);
  return std::nullopt;
}

void VideoReader::Impl::AttachCuda(const AVCodec* decoder, const std::string& name) {
  decoded_by = "software";
  if (options.hwaccel == HwAccel::kNone) return;
  if (!HasCudaConfig(decoder)) {
    return FallBackToSoftware("this FFmpeg has no cuda decoder for " + name);
  }
  std::string why;
  AVBufferRef* device = SharedCudaDevice(&why);
  if (device == nullptr) return FallBackToSoftware(why);
  codec->hw_device_ctx = av_buffer_ref(device);
  codec->opaque = this;
  codec->get_format = &Impl::PickFormat;
  decoded_by = "cuda";
}

void VideoReader::Impl::FallBackToSoftware(const std::string& why) {
  decoded_by = "software; " + why;
  if (options.hwaccel == HwAccel::kCuda) {
    spdlog::warn("{}: --hwaccel cuda: decoding in software: {}", display_url, why);
  } else {
    spdlog::info("{}: decoding in software: {}", display_url, why);
  }
}

// FFmpeg offers the formats it can decode this stream to, hardware ones first; it asks again
// without CUDA when NVDEC then fails to set up (an unsupported profile or size).
AVPixelFormat VideoReader::Impl::PickFormat(AVCodecContext* ctx, const AVPixelFormat* formats) {
  Impl* self = static_cast<Impl*>(ctx->opaque);
  for (const AVPixelFormat* f = formats; *f != AV_PIX_FMT_NONE; ++f) {
    if (*f == AV_PIX_FMT_CUDA) return *f;
  }
  for (const AVPixelFormat* f = formats; *f != AV_PIX_FMT_NONE; ++f) {
    const AVPixFmtDescriptor* desc = av_pix_fmt_desc_get(*f);
    if (desc != nullptr && (desc->flags & AV_PIX_FMT_FLAG_HWACCEL) == 0) {
      if (self->decoded_by == "cuda") self->FallBackToSoftware("cuda refused this stream");
      return *f;
    }
  }
  return AV_PIX_FMT_NONE;
}

bool VideoReader::Impl::DropToCatchUp() {
  if (!options.catch_up || segmented) return false;
  const int64_t ts = packet->dts != AV_NOPTS_VALUE ? packet->dts : packet->pts;
  std::optional<double> ts_s;
  if (ts != AV_NOPTS_VALUE) ts_s = static_cast<double>(ts) * av_q2d(time_base);
  const double now_s = std::chrono::duration<double>(SteadyClock::now().time_since_epoch()).count();
  if (!catch_up.Drop(now_s, ts_s, (packet->flags & AV_PKT_FLAG_KEY) != 0)) return false;
  ++counters.dropped_catchup;
  return true;
}

std::optional<VideoError> VideoReader::Impl::TakePicture() {
  picture = frame;
  if (frame->format != AV_PIX_FMT_CUDA) return std::nullopt;
  av_frame_unref(sw_frame);
  int rc = av_hwframe_transfer_data(sw_frame, frame, 0);  // NV12 (P010 for 10-bit)
  if (rc >= 0) rc = av_frame_copy_props(sw_frame, frame);
  if (rc < 0) return Fail("copying a frame decoded on the GPU from", rc);
  picture = sw_frame;
  return std::nullopt;
}

void VideoReader::Impl::RecordArrival() {
  Arrival& a = arrivals[next_arrival++ % arrivals.size()];
  a.ts = packet->pts != AV_NOPTS_VALUE ? packet->pts : packet->dts;
  a.steady = SteadyClock::now();
  a.wall = WallClock::now();
}

FrameInfo VideoReader::Impl::DescribeFrame() {
  FrameInfo info;
  info.index = counters.decoded - 1;
  info.width = frame->width;
  info.height = frame->height;
  info.decode_ms = pending_decode_ms;
  const int64_t ts = frame->best_effort_timestamp;
  if (ts != AV_NOPTS_VALUE) {
    if (first_pts == AV_NOPTS_VALUE) first_pts = ts;
    info.pts_s = static_cast<double>(ts - first_pts) * av_q2d(time_base);
  } else {
    const double fps = av_q2d(format->streams[stream_index]->avg_frame_rate);
    info.pts_s = fps > 0 ? static_cast<double>(info.index) / fps : 0;
  }
  // The packet this frame came from; without a match (no timestamps), the latest packet's.
  const int64_t key = frame->pts != AV_NOPTS_VALUE ? frame->pts : frame->pkt_dts;
  const Arrival* match = &arrivals[(next_arrival + arrivals.size() - 1) % arrivals.size()];
  for (const Arrival& a : arrivals) {
    if (key != AV_NOPTS_VALUE && a.ts == key) match = &a;
  }
  info.arrival = match->steady;
  info.received_at = match->wall;
  return info;
}

VideoReader::VideoReader(VideoSourceOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->display_url = RedactCredentials(options.url);
  impl_->options = std::move(options);
}

VideoReader::~VideoReader() = default;

std::optional<VideoError> VideoReader::Open() {
  InstallLogCallback();
  if (auto failed = impl_->OpenInput()) return failed;
  return impl_->OpenDecoder();
}

VideoReader::ReadState VideoReader::Next(FrameInfo* out) {
  Impl& m = *impl_;
  if (m.codec == nullptr) {
    m.Fail(VideoErrorCode::kIoError, "reading " + m.display_url + ": the source is not open");
    return ReadState::kFailed;
  }
  // The watchdog counts from the call: a bulk reader may be held back between calls.
  auto watchdog_end = m.options.no_frame_timeout.count() > 0
                          ? SteadyClock::now() + m.options.no_frame_timeout
                          : SteadyClock::time_point::max();
  while (true) {
    auto start = SteadyClock::now();
    int rc = avcodec_receive_frame(m.codec, m.frame);
    m.pending_decode_ms += MillisecondsSince(start);
    if (rc == 0) {
      ++m.counters.decoded;
      if (m.frame->decode_error_flags != 0 || (m.frame->flags & AV_FRAME_FLAG_CORRUPT) != 0) {
        ++m.counters.corrupt;
        continue;
      }
      if (m.TakePicture()) return ReadState::kFailed;
      m.last = m.DescribeFrame();
      m.pending_decode_ms = 0;
      *out = m.last;
      return ReadState::kFrame;
    }
    if (rc == AVERROR_EOF) return ReadState::kEnded;
    if (rc != AVERROR(EAGAIN)) {
      m.Fail("decoding", rc);
      return ReadState::kFailed;
    }
    if (m.stop) {
      m.Fail(VideoErrorCode::kCancelled, "reading " + m.display_url + ": interrupted");
      return ReadState::kFailed;
    }
    m.SetReadDeadline(watchdog_end);
    if (m.DeadlinePassed()) {
      m.Fail("reading", AVERROR_EXIT);
      return ReadState::kFailed;
    }
    rc = av_read_frame(m.format, m.packet);
    if (rc == AVERROR_EOF) {
      avcodec_send_packet(m.codec, nullptr);  // flush: the decoder returns what it holds
      continue;
    }
    if (rc < 0) {
      m.Fail("reading", rc);
      return ReadState::kFailed;
    }
    if (m.packet->stream_index != m.stream_index ||
        (m.waiting_for_key && (m.packet->flags & AV_PKT_FLAG_KEY) == 0)) {
      av_packet_unref(m.packet);
      continue;
    }
    m.waiting_for_key = false;
    ++m.counters.packets;
    if (m.DropToCatchUp()) {
      av_packet_unref(m.packet);
      // Video dropped to catch up is a source alive, not a silent camera: with a long GOP the
      // next keyframe may be further away than the watchdog's limit.
      if (m.options.no_frame_timeout.count() > 0) {
        watchdog_end = SteadyClock::now() + m.options.no_frame_timeout;
      }
      continue;
    }
    m.RecordArrival();
    start = SteadyClock::now();
    rc = avcodec_send_packet(m.codec, m.packet);
    m.pending_decode_ms += MillisecondsSince(start);
    av_packet_unref(m.packet);
    // A damaged packet loses its frame, not the stream: the decoder resynchronises itself.
    if (rc == AVERROR_INVALIDDATA) {
      ++m.counters.corrupt;
    } else if (rc < 0 && rc != AVERROR(EAGAIN)) {
      m.Fail("decoding", rc);
      return ReadState::kFailed;
    }
  }
}

pipeline::PreparedCanvas VideoReader::Scale(const pipeline::ShapeBuckets& buckets,
                                            pipeline::CanvasPool& pool) {
  Impl& m = *impl_;
  const auto start = SteadyClock::now();
  pipeline::PreparedCanvas out;
  out.width = m.picture->width;
  out.height = m.picture->height;
  out.decode_ms = m.last.decode_ms;
  const pipeline::ShapeBuckets::Placement placement = buckets.Place(out.width, out.height);
  out.bucket = placement.bucket;
  out.letterbox = placement.letterbox;
  const image::Letterbox& box = out.letterbox;
  out.canvas = pool.Acquire(int64_t{box.canvas_width} * box.canvas_height * 3);
  // Area averaging when shrinking, like the upload path's antialiased resize; a new size (a
  // resolution change) makes a new context.
  m.sws = sws_getCachedContext(
      m.sws, m.picture->width, m.picture->height, static_cast<AVPixelFormat>(m.picture->format),
      box.content_width, box.content_height, AV_PIX_FMT_RGB24, SWS_AREA, nullptr, nullptr, nullptr);
  uint8_t* dst[4] = {out.canvas.data(), nullptr, nullptr, nullptr};
  const int dst_stride[4] = {box.canvas_width * 3, 0, 0, 0};
  sws_scale(m.sws, m.picture->data, m.picture->linesize, 0, m.picture->height, dst, dst_stride);
  image::ZeroLetterboxPadding(box, out.canvas.data());
  out.preprocess_ms = MillisecondsSince(start);
  return out;
}

image::Image VideoReader::Preview(int max_side_px) {
  Impl& m = *impl_;
  const int w = m.picture->width, h = m.picture->height;
  const double scale = std::min(1.0, static_cast<double>(max_side_px) / std::max(w, h));
  image::Image out(std::max(1, static_cast<int>(w * scale + 0.5)),
                   std::max(1, static_cast<int>(h * scale + 0.5)));
  m.preview_sws = sws_getCachedContext(
      m.preview_sws, w, h, static_cast<AVPixelFormat>(m.picture->format), out.width, out.height,
      AV_PIX_FMT_RGB24, SWS_AREA, nullptr, nullptr, nullptr);
  uint8_t* dst[4] = {out.data.data(), nullptr, nullptr, nullptr};
  const int dst_stride[4] = {out.width * 3, 0, 0, 0};
  sws_scale(m.preview_sws, m.picture->data, m.picture->linesize, 0, h, dst, dst_stride);
  return out;
}

void VideoReader::Interrupt() {
  impl_->stop = true;
}

const VideoError& VideoReader::error() const {
  return impl_->error;
}

const std::string& VideoReader::display_url() const {
  return impl_->display_url;
}

std::string VideoReader::codec_name() const {
  return impl_->codec != nullptr ? avcodec_get_name(impl_->codec->codec_id) : "";
}

std::string VideoReader::decoder_name() const {
  if (impl_->codec == nullptr) return "";
  return codec_name() + " (" + impl_->decoded_by + ")";
}

int64_t VideoReader::expected_frames() const {
  const Impl& m = *impl_;
  if (m.format == nullptr || m.stream_index < 0) return 0;
  const AVStream* stream = m.format->streams[m.stream_index];
  if (stream->nb_frames > 0) return stream->nb_frames;
  const double fps = av_q2d(stream->avg_frame_rate);
  if (stream->duration != AV_NOPTS_VALUE && fps > 0) {
    return static_cast<int64_t>(
        static_cast<double>(stream->duration) * av_q2d(stream->time_base) * fps + 0.5);
  }
  return 0;
}

double VideoReader::frame_rate() const {
  const Impl& m = *impl_;
  if (m.format == nullptr || m.stream_index < 0) return 0;
  return av_q2d(m.format->streams[m.stream_index]->avg_frame_rate);
}

ReaderCounters VideoReader::counters() const {
  return impl_->counters;
}

}  // namespace mogserve::video
