#include "video/clip_publisher.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
}

#include <pthread.h>

#include "video/av_error.h"

namespace mogserve::video {
namespace {

using Steady = std::chrono::steady_clock;

struct InputCloser {
  void operator()(AVFormatContext* c) const { avformat_close_input(&c); }
};
using InputContext = std::unique_ptr<AVFormatContext, InputCloser>;

struct PacketFree {
  void operator()(AVPacket* p) const { av_packet_free(&p); }
};

// The clip opened for reading, its video stream found.
StatusOr<InputContext> OpenClip(const std::string& clip, int* video_stream) {
  AVFormatContext* raw = nullptr;
  if (int rc = avformat_open_input(&raw, clip.c_str(), nullptr, nullptr); rc < 0) {
    return NotFound("clip " + clip + ": " + AvErrorText(rc));
  }
  InputContext input(raw);
  if (int rc = avformat_find_stream_info(input.get(), nullptr); rc < 0) {
    return InvalidArgument("clip " + clip + ": " + AvErrorText(rc));
  }
  *video_stream = av_find_best_stream(input.get(), AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
  if (*video_stream < 0) return InvalidArgument("clip " + clip + " has no video stream");
  return input;
}

double FramesPerSecond(const AVStream& stream) {
  const AVRational r = stream.avg_frame_rate.num > 0 ? stream.avg_frame_rate : stream.r_frame_rate;
  return r.num > 0 && r.den > 0 ? av_q2d(r) : 25.0;
}

}  // namespace

struct ClipPublisher::Input {
  InputContext context;
  int stream = -1;
};

StatusOr<ClipInfo> ClipPublisher::Probe(const std::string& clip) {
  int index = -1;
  MOGSERVE_ASSIGN_OR_RETURN(InputContext input, OpenClip(clip, &index));
  const AVStream& stream = *input->streams[index];
  ClipInfo info;
  info.codec = avcodec_get_name(stream.codecpar->codec_id);
  info.width = stream.codecpar->width;
  info.height = stream.codecpar->height;
  info.fps = FramesPerSecond(stream);
  info.seconds = stream.duration > 0
                     ? static_cast<double>(stream.duration) * av_q2d(stream.time_base)
                     : static_cast<double>(input->duration) / AV_TIME_BASE;
  info.bit_rate = stream.codecpar->bit_rate > 0 ? stream.codecpar->bit_rate : input->bit_rate;
  return info;
}

StatusOr<std::unique_ptr<ClipPublisher>> ClipPublisher::Start(PublisherOptions options) {
  auto input = std::make_unique<Input>();
  MOGSERVE_ASSIGN_OR_RETURN(input->context, OpenClip(options.clip, &input->stream));
  std::unique_ptr<ClipPublisher> publisher(new ClipPublisher(std::move(options), std::move(input)));
  publisher->thread_ = std::thread([p = publisher.get()] { p->Run(); });
  pthread_setname_np(publisher->thread_.native_handle(), "publisher");
  return publisher;
}

ClipPublisher::ClipPublisher(PublisherOptions options, std::unique_ptr<Input> input)
    : options_(std::move(options)), input_(std::move(input)) {}

ClipPublisher::~ClipPublisher() {
  Stop();
}

void ClipPublisher::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

std::string ClipPublisher::error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

void ClipPublisher::Run() {
  std::string error = Publish();
  std::lock_guard<std::mutex> lock(mu_);
  error_ = std::move(error);
}

std::string ClipPublisher::Publish() {
  AVFormatContext* in = input_->context.get();
  const AVStream& in_stream = *in->streams[input_->stream];
  const AVRational in_base = in_stream.time_base;

  AVFormatContext* out = nullptr;
  if (int rc = avformat_alloc_output_context2(&out, nullptr, "mpegts", options_.url.c_str());
      rc < 0) {
    return "output " + options_.url + ": " + AvErrorText(rc);
  }
  struct OutputCloser {
    AVFormatContext* c;
    bool header = false;
    ~OutputCloser() {
      if (header) av_write_trailer(c);
      avio_closep(&c->pb);
      avformat_free_context(c);
    }
  } closer{out};
  out->interrupt_callback.callback = [](void* self) -> int {
    return static_cast<ClipPublisher*>(self)->stop_ ? 1 : 0;
  };
  out->interrupt_callback.opaque = this;
  AVStream* out_stream = avformat_new_stream(out, nullptr);
  if (out_stream == nullptr) return "output " + options_.url + ": out of memory";
  avcodec_parameters_copy(out_stream->codecpar, in_stream.codecpar);
  out_stream->codecpar->codec_tag = 0;
  out_stream->time_base = in_base;

  AVDictionary* io_options = nullptr;
  if (options_.listen) av_dict_set(&io_options, "listen", "1", 0);
  const int opened = avio_open2(&out->pb, options_.url.c_str(), AVIO_FLAG_WRITE,
                                &out->interrupt_callback, &io_options);
  av_dict_free(&io_options);
  if (stop_) return "";
  if (opened < 0) return "output " + options_.url + ": " + AvErrorText(opened);
  if (int rc = avformat_write_header(out, nullptr); rc < 0) {
    return stop_ ? "" : "output " + options_.url + ": " + AvErrorText(rc);
  }
  closer.header = true;

  // Pacing: a frame goes out when its decode time (since the clip's first) has passed.
  const Steady::time_point start = Steady::now() + options_.phase;
  const int64_t frame_ticks =
      av_rescale_q(1, av_inv_q(av_d2q(FramesPerSecond(in_stream), 1000)), in_base);
  int64_t first = AV_NOPTS_VALUE;
  int64_t loop_ticks = 0;  // the clip's length, known after the first pass
  int64_t end_ticks = 0;   // of the packets read in this pass, relative to `first`
  int64_t offset = 0;      // added to this pass's timestamps
  std::unique_ptr<AVPacket, PacketFree> packet(av_packet_alloc());
  while (!stop_) {
    const int rc = av_read_frame(in, packet.get());
    if (rc == AVERROR_EOF) {
      if (end_ticks <= 0) return "clip " + options_.clip + " holds no video packets";
      if (loop_ticks == 0) loop_ticks = end_ticks;
      offset += loop_ticks;
      if (int s = av_seek_frame(in, input_->stream,
                                in_stream.start_time == AV_NOPTS_VALUE ? 0 : in_stream.start_time,
                                AVSEEK_FLAG_BACKWARD);
          s < 0) {
        return "clip " + options_.clip + ": rewinding: " + AvErrorText(s);
      }
      continue;
    }
    if (rc < 0) return "clip " + options_.clip + ": " + AvErrorText(rc);
    if (packet->stream_index != input_->stream) {
      av_packet_unref(packet.get());
      continue;
    }
    const int64_t dts = packet->dts != AV_NOPTS_VALUE ? packet->dts : packet->pts;
    if (first == AV_NOPTS_VALUE) first = dts;
    const int64_t at = dts - first;
    if (loop_ticks == 0) {
      end_ticks = std::max(end_ticks, at + (packet->duration > 0 ? packet->duration : frame_ticks));
    }
    const Steady::time_point due =
        start + std::chrono::duration_cast<Steady::duration>(std::chrono::duration<double>(
                    static_cast<double>(at + offset) * av_q2d(in_base)));
    while (!stop_ && Steady::now() < due) {
      std::this_thread::sleep_until(std::min(due, Steady::now() + std::chrono::milliseconds(20)));
    }
    if (stop_) break;
    if (packet->pts != AV_NOPTS_VALUE) packet->pts += offset;
    if (packet->dts != AV_NOPTS_VALUE) packet->dts += offset;
    av_packet_rescale_ts(packet.get(), in_base, out_stream->time_base);
    packet->stream_index = 0;
    packet->pos = -1;
    const int written = av_write_frame(out, packet.get());
    av_packet_unref(packet.get());
    if (written < 0) return stop_ ? "" : "output " + options_.url + ": " + AvErrorText(written);
    avio_flush(out->pb);
    ++frames_sent_;
  }
  return "";
}

}  // namespace mogserve::video
