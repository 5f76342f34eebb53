#include "video/video_rewriter.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/avutil.h>
#include <libavutil/mem.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
}

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <map>
#include <system_error>
#include <vector>

#include "common/clock.h"
#include "video/av_error.h"

namespace mogserve::video {
namespace {

struct InputCloser {
  void operator()(AVFormatContext* c) const { avformat_close_input(&c); }
};
struct OutputFree {
  void operator()(AVFormatContext* c) const { avformat_free_context(c); }
};
struct CodecFree {
  void operator()(AVCodecContext* c) const { avcodec_free_context(&c); }
};
struct FrameFree {
  void operator()(AVFrame* f) const { av_frame_free(&f); }
};
struct PacketFree {
  void operator()(AVPacket* p) const { av_packet_free(&p); }
};
using InputContext = std::unique_ptr<AVFormatContext, InputCloser>;
using OutputContext = std::unique_ptr<AVFormatContext, OutputFree>;
using CodecContext = std::unique_ptr<AVCodecContext, CodecFree>;
using FramePtr = std::unique_ptr<AVFrame, FrameFree>;
using PacketPtr = std::unique_ptr<AVPacket, PacketFree>;

// The muxer for an output's extension; the lower-cased extension is matched.
StatusOr<const char*> MuxerFor(const std::string& output) {
  std::string ext = std::filesystem::path(output).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (ext == ".mp4") return "mp4";
  if (ext == ".mov") return "mov";
  if (ext == ".mkv") return "matroska";
  return InvalidArgument("output " + output + ": unsupported extension '" + ext +
                         "'; allowed: .mp4, .mov, .mkv");
}

// Hidden, beside the output (same file system, so the final rename is atomic), unique per
// process and rewriter.
std::string TemporaryPath(const std::string& output) {
  static std::atomic<int> counter{0};
  const std::filesystem::path path(output);
  // Appended piece by piece: `"." + std::string` trips GCC 12's -Wrestrict false positive.
  std::string name = ".";
  name += path.filename().string();
  name += ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter++);
  return (path.parent_path() / name).string();
}

double SecondsSince(SteadyClock::time_point start) {
  return std::chrono::duration<double>(SteadyClock::now() - start).count();
}

bool FullRange(AVPixelFormat format, AVColorRange range) {
  return range == AVCOL_RANGE_JPEG || format == AV_PIX_FMT_YUVJ420P ||
         format == AV_PIX_FMT_YUVJ422P || format == AV_PIX_FMT_YUVJ444P ||
         format == AV_PIX_FMT_YUVJ440P || format == AV_PIX_FMT_YUVJ411P;
}

// Makes `sws` convert with the frame's matrix and range on its YUV side (RGB is full range), so
// the conversion to RGB and the one back agree.
void SetColorDetails(SwsContext* sws, const AVFrame& yuv, bool yuv_is_source) {
  const int* coefficients = sws_getCoefficients(yuv.colorspace);
  const int full = yuv.color_range == AVCOL_RANGE_JPEG ? 1 : 0;
  sws_setColorspaceDetails(sws, coefficients, yuv_is_source ? full : 1, coefficients,
                           yuv_is_source ? 1 : full, 0, 1 << 16, 1 << 16);
}

// To RGB: swscale's SIMD converter (accurate rounding or full chroma interpolation would take
// its C path, ten times slower on a 720p frame). Back from RGB, rectangles only: accurate.
constexpr int kToRgbFlags = SWS_BILINEAR;
constexpr int kFromRgbFlags = SWS_BILINEAR | SWS_ACCURATE_RND;

}  // namespace

struct DecodedPicture {
  FramePtr frame;  // yuv420p, pts in the input stream's time base
};

struct VideoRewriter::Impl {
  RewriteOptions options;
  std::string temp_path;
  InputContext input;
  int video_index = -1;
  AVStream* in_video = nullptr;
  CodecContext decoder;
  CodecContext encoder;
  OutputContext output;
  AVStream* out_video = nullptr;
  std::vector<int> stream_map;  // input stream index -> output stream index, -1: not copied
  PacketPtr packet{av_packet_alloc()};
  PacketPtr encoded{av_packet_alloc()};
  FramePtr decoded{av_frame_alloc()};
  SwsContext* to_rgb = nullptr;
  SwsContext* to_yuv = nullptr;
  SwsContext* to_420 = nullptr;
  std::vector<uint8_t> scratch_rgb, scratch_yuv;  // a changed rectangle on its way back
  bool decoder_ended = false;
  bool finished = false;
  Status failed;  // the first error: later calls return it
  int64_t frames_returned = 0;
  int64_t frames_written = 0;
  int64_t first_pts = AV_NOPTS_VALUE;
  int64_t last_pts = AV_NOPTS_VALUE;
  int64_t nominal_duration = 1;          // one frame, in the input time base
  std::map<int64_t, int64_t> durations;  // pts -> duration of frames inside the encoder
  Timings timings;

  ~Impl() {
    sws_freeContext(to_rgb);
    sws_freeContext(to_yuv);
    sws_freeContext(to_420);
    if (output != nullptr && !finished) {
      if (output->pb != nullptr) avio_closep(&output->pb);
      std::error_code ignored;
      std::filesystem::remove(temp_path, ignored);
    }
  }

  Status Remember(Status status) {
    if (!status.ok() && failed.ok()) failed = status;
    return status;
  }
  Status AvFail(const std::string& what, int rc) const {
    return Internal(what + " (" + options.input + " -> " + options.output +
                    "): " + AvErrorText(rc));
  }

  Status OpenInput();
  Status OpenDecoder();
  Status OpenEncoder(const char* muxer);
  Status AddStreams();
  Status CopyChapters();
  Status WriteHeader();
  Status Feed();
  Status CopyPacket();
  StatusOr<RewriteFrame> TakeFrame();
  Status ToEncoderFormat(FramePtr& frame);
  void ToRgb(const AVFrame& frame, image::Image& rgb);
  void PutBack(AVFrame& frame, const image::Image& rgb, const PixelRect& rect);
  Status Encode(AVFrame* frame);
};

Status VideoRewriter::Impl::OpenInput() {
  AVFormatContext* raw = nullptr;
  int rc = avformat_open_input(&raw, options.input.c_str(), nullptr, nullptr);
  if (rc == AVERROR(ENOENT)) return NotFound("input " + options.input + ": no such file");
  if (rc < 0) return InvalidData("input " + options.input + ": " + AvErrorText(rc));
  input.reset(raw);
  rc = avformat_find_stream_info(input.get(), nullptr);
  if (rc < 0) return InvalidData("input " + options.input + ": " + AvErrorText(rc));
  video_index = av_find_best_stream(input.get(), AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
  if (video_index < 0) return InvalidData("input " + options.input + " has no video stream");
  in_video = input->streams[video_index];
  return Status::Ok();
}

Status VideoRewriter::Impl::OpenDecoder() {
  const AVCodec* codec = avcodec_find_decoder(in_video->codecpar->codec_id);
  if (codec == nullptr) {
    return Unsupported("input " + options.input + ": no decoder for video codec '" +
                       avcodec_get_name(in_video->codecpar->codec_id) + "'");
  }
  decoder.reset(avcodec_alloc_context3(codec));
  int rc = avcodec_parameters_to_context(decoder.get(), in_video->codecpar);
  if (rc < 0) return AvFail("configuring the decoder", rc);
  decoder->pkt_timebase = in_video->time_base;
  // Slice threads, as VideoReader's: FFmpeg's frame threads hand frames between threads through
  // atomics in libavcodec that ThreadSanitizer cannot see (every rewrite reported races in
  // av_buffer_unref), and decoding is a small part of a rewrite (the encoder dominates).
  decoder->thread_count = options.decoder_threads;
  decoder->thread_type = FF_THREAD_SLICE;
  rc = avcodec_open2(decoder.get(), codec, nullptr);
  if (rc < 0) return AvFail("opening the decoder", rc);
  if (decoder->width <= 0 || decoder->height <= 0) {
    return InvalidData("input " + options.input + ": the video stream has no picture size");
  }
  const AVRational rate =
      in_video->avg_frame_rate.num > 0 ? in_video->avg_frame_rate : in_video->r_frame_rate;
  if (rate.num > 0 && rate.den > 0) {
    nominal_duration = std::max<int64_t>(1, av_rescale_q(1, av_inv_q(rate), in_video->time_base));
  }
  return Status::Ok();
}

// libx264 in the input stream's time base, so each frame keeps its timestamp exactly.
Status VideoRewriter::Impl::OpenEncoder(const char* muxer) {
  const AVCodec* codec = avcodec_find_encoder_by_name("libx264");
  if (codec == nullptr) return Unavailable("this FFmpeg has no libx264 encoder");
  encoder.reset(avcodec_alloc_context3(codec));
  AVCodecContext& e = *encoder;
  e.width = decoder->width;
  e.height = decoder->height;
  e.pix_fmt = AV_PIX_FMT_YUV420P;
  e.time_base = in_video->time_base;
  e.framerate =
      in_video->avg_frame_rate.num > 0 ? in_video->avg_frame_rate : in_video->r_frame_rate;
  e.sample_aspect_ratio = av_guess_sample_aspect_ratio(input.get(), in_video, nullptr);
  // yuvj formats are labelled full range (the encoder gets yuv420p); otherwise kept as is.
  e.color_range =
      FullRange(decoder->pix_fmt, decoder->color_range) ? AVCOL_RANGE_JPEG : decoder->color_range;
  e.color_primaries = decoder->color_primaries;
  e.color_trc = decoder->color_trc;
  e.colorspace = decoder->colorspace;
  e.chroma_sample_location = decoder->chroma_sample_location;
  e.thread_count = options.encoder_threads;
  if ((av_guess_format(muxer, nullptr, nullptr)->flags & AVFMT_GLOBALHEADER) != 0) {
    e.flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  }
  AVDictionary* settings = nullptr;
  av_dict_set(&settings, "preset", options.preset.c_str(), 0);
  av_dict_set_int(&settings, "crf", options.crf, 0);
  // libx264's own messages at warnings and above: not its banner and statistics on stderr.
  av_dict_set(&settings, "x264-params", "log=1", 0);
  const int rc = avcodec_open2(encoder.get(), codec, &settings);
  av_dict_free(&settings);
  if (rc < 0) {
    return InvalidArgument("opening libx264 (preset '" + options.preset + "', crf " +
                           std::to_string(options.crf) + ") for " + options.output + ": " +
                           AvErrorText(rc));
  }
  return Status::Ok();
}

// The video stream from the encoder, every other stream the container can hold copied; each
// keeps its metadata, disposition and side data (a rotation matrix among them).
Status VideoRewriter::Impl::AddStreams() {
  stream_map.assign(input->nb_streams, -1);
  for (unsigned i = 0; i < input->nb_streams; ++i) {
    const AVStream* in = input->streams[i];
    const AVCodecID id = in->codecpar->codec_id;
    const bool video = static_cast<int>(i) == video_index;
    if (!video && (id == AV_CODEC_ID_NONE ||
                   avformat_query_codec(output->oformat, id, FF_COMPLIANCE_NORMAL) == 0)) {
      spdlog::warn("{}: stream {} ({}) cannot be stored in {}: left out", options.input, i,
                   avcodec_get_name(id), options.output);
      continue;
    }
    AVStream* out = avformat_new_stream(output.get(), nullptr);
    if (out == nullptr) return AvFail("adding a stream", AVERROR(ENOMEM));
    int rc = video ? avcodec_parameters_from_context(out->codecpar, encoder.get())
                   : avcodec_parameters_copy(out->codecpar, in->codecpar);
    if (rc < 0) return AvFail("adding a stream", rc);
    if (!video) out->codecpar->codec_tag = 0;  // the output container's own tag
    out->time_base = in->time_base;            // a hint: the muxer may choose another
    out->avg_frame_rate = in->avg_frame_rate;
    out->r_frame_rate = in->r_frame_rate;
    out->sample_aspect_ratio = video ? encoder->sample_aspect_ratio : in->sample_aspect_ratio;
    out->disposition = in->disposition;
    av_dict_copy(&out->metadata, in->metadata, 0);
    if (video) av_dict_set(&out->metadata, "encoder", nullptr, 0);  // no longer true
    for (int s = 0; s < in->nb_side_data; ++s) {
      const AVPacketSideData& data = in->side_data[s];
      if (video && data.type == AV_PKT_DATA_CPB_PROPERTIES) continue;  // the old encoder's
      uint8_t* copy = av_stream_new_side_data(out, data.type, data.size);
      if (copy == nullptr) return AvFail("copying stream side data", AVERROR(ENOMEM));
      std::memcpy(copy, data.data, data.size);
    }
    stream_map[i] = out->index;
    if (video) out_video = out;
  }
  return Status::Ok();
}

Status VideoRewriter::Impl::CopyChapters() {
  for (unsigned i = 0; i < input->nb_chapters; ++i) {
    const AVChapter& in = *input->chapters[i];
    auto* copy = static_cast<AVChapter*>(av_mallocz(sizeof(AVChapter)));
    if (copy == nullptr) return AvFail("copying chapters", AVERROR(ENOMEM));
    copy->id = in.id;
    copy->time_base = in.time_base;
    copy->start = in.start;
    copy->end = in.end;
    av_dict_copy(&copy->metadata, in.metadata, 0);
    int count = static_cast<int>(output->nb_chapters);
    if (av_dynarray_add_nofree(&output->chapters, &count, copy) < 0) {
      av_dict_free(&copy->metadata);
      av_free(copy);
      return AvFail("copying chapters", AVERROR(ENOMEM));
    }
    output->nb_chapters = static_cast<unsigned>(count);
  }
  return Status::Ok();
}

Status VideoRewriter::Impl::WriteHeader() {
  av_dict_copy(&output->metadata, input->metadata, 0);
  MOGSERVE_RETURN_IF_ERROR(CopyChapters());
  int rc = avio_open(&output->pb, temp_path.c_str(), AVIO_FLAG_WRITE);
  if (rc < 0) {
    return Internal("cannot write " + options.output + " (its temporary " + temp_path +
                    "): " + AvErrorText(rc));
  }
  rc = avformat_write_header(output.get(), nullptr);
  if (rc < 0) return AvFail("writing the header", rc);
  return Status::Ok();
}

// Reads one packet: video to the decoder (the decoder flushed at the end), others copied.
Status VideoRewriter::Impl::Feed() {
  int rc = av_read_frame(input.get(), packet.get());
  if (rc == AVERROR_EOF) {
    rc = avcodec_send_packet(decoder.get(), nullptr);
    return rc < 0 && rc != AVERROR_EOF ? AvFail("flushing the decoder", rc) : Status::Ok();
  }
  if (rc < 0) return InvalidData("reading " + options.input + ": " + AvErrorText(rc));
  if (packet->stream_index != video_index) return CopyPacket();
  rc = avcodec_send_packet(decoder.get(), packet.get());
  av_packet_unref(packet.get());
  // A damaged packet loses its frame, not the file: the decoder resynchronises itself.
  if (rc < 0 && rc != AVERROR_INVALIDDATA) return AvFail("decoding", rc);
  return Status::Ok();
}

Status VideoRewriter::Impl::CopyPacket() {
  const int out_index = stream_map[packet->stream_index];
  if (out_index < 0) {
    av_packet_unref(packet.get());
    return Status::Ok();
  }
  av_packet_rescale_ts(packet.get(), input->streams[packet->stream_index]->time_base,
                       output->streams[out_index]->time_base);
  packet->stream_index = out_index;
  packet->pos = -1;
  // Buffered by the muxer until the video's packets catch up; it takes the packet's data.
  const int rc = av_interleaved_write_frame(output.get(), packet.get());
  return rc < 0 ? AvFail("copying a packet", rc) : Status::Ok();
}

// yuvj420p is yuv420p in full range: relabelled. Any other format is converted, range kept.
Status VideoRewriter::Impl::ToEncoderFormat(FramePtr& frame) {
  const auto format = static_cast<AVPixelFormat>(frame->format);
  if (format == AV_PIX_FMT_YUV420P) return Status::Ok();
  const bool full = FullRange(format, frame->color_range);
  if (format == AV_PIX_FMT_YUVJ420P) {
    frame->format = AV_PIX_FMT_YUV420P;
    frame->color_range = AVCOL_RANGE_JPEG;
    return Status::Ok();
  }
  FramePtr converted(av_frame_alloc());
  converted->format = AV_PIX_FMT_YUV420P;
  converted->width = frame->width;
  converted->height = frame->height;
  int rc = av_frame_get_buffer(converted.get(), 0);
  if (rc >= 0) rc = av_frame_copy_props(converted.get(), frame.get());
  if (rc < 0) return AvFail("converting a frame to yuv420p", rc);
  converted->color_range = full ? AVCOL_RANGE_JPEG : AVCOL_RANGE_MPEG;
  to_420 = sws_getCachedContext(to_420, frame->width, frame->height, format, frame->width,
                                frame->height, AV_PIX_FMT_YUV420P, SWS_BICUBIC | SWS_ACCURATE_RND,
                                nullptr, nullptr, nullptr);
  if (to_420 == nullptr) {
    return Unsupported("input " + options.input + ": cannot convert pixel format " +
                       av_get_pix_fmt_name(format) + " to yuv420p");
  }
  const int* coefficients = sws_getCoefficients(frame->colorspace);
  sws_setColorspaceDetails(to_420, coefficients, full, coefficients, full, 0, 1 << 16, 1 << 16);
  sws_scale(to_420, frame->data, frame->linesize, 0, frame->height, converted->data,
            converted->linesize);
  frame = std::move(converted);
  return Status::Ok();
}

void VideoRewriter::Impl::ToRgb(const AVFrame& frame, image::Image& rgb) {
  rgb = image::Image(frame.width, frame.height);
  to_rgb =
      sws_getCachedContext(to_rgb, frame.width, frame.height, AV_PIX_FMT_YUV420P, frame.width,
                           frame.height, AV_PIX_FMT_RGB24, kToRgbFlags, nullptr, nullptr, nullptr);
  SetColorDetails(to_rgb, frame, true);
  uint8_t* dst[4] = {rgb.data.data(), nullptr, nullptr, nullptr};
  const int dst_stride[4] = {rgb.width * 3, 0, 0, 0};
  sws_scale(to_rgb, frame.data, frame.linesize, 0, frame.height, dst, dst_stride);
}

StatusOr<RewriteFrame> VideoRewriter::Impl::TakeFrame() {
  auto picture = std::make_shared<DecodedPicture>();
  picture->frame.reset(av_frame_alloc());
  av_frame_move_ref(picture->frame.get(), decoded.get());
  AVFrame& f = *picture->frame;
  if (f.width != encoder->width || f.height != encoder->height) {
    return Unsupported("input " + options.input + ": the picture size changes from " +
                       std::to_string(encoder->width) + "x" + std::to_string(encoder->height) +
                       " to " + std::to_string(f.width) + "x" + std::to_string(f.height));
  }
  // The encoder needs increasing timestamps: a missing or repeated one (a broken file) becomes
  // the next possible.
  int64_t pts = f.best_effort_timestamp;
  if (pts == AV_NOPTS_VALUE) pts = last_pts == AV_NOPTS_VALUE ? 0 : last_pts + nominal_duration;
  if (last_pts != AV_NOPTS_VALUE && pts <= last_pts) pts = last_pts + 1;
  if (first_pts == AV_NOPTS_VALUE) first_pts = pts;
  last_pts = pts;
  f.pts = pts;
  durations[pts] = f.pkt_duration > 0 ? f.pkt_duration : nominal_duration;

  const auto start = SteadyClock::now();
  MOGSERVE_RETURN_IF_ERROR(ToEncoderFormat(picture->frame));
  RewriteFrame out;
  out.index = frames_returned++;
  out.pts_s = static_cast<double>(pts - first_pts) * av_q2d(in_video->time_base);
  ToRgb(*picture->frame, out.rgb);
  out.picture = std::move(picture);
  timings.convert_s += SecondsSince(start);
  return out;
}

// Converts the rectangle (widened to even edges: a 4:2:0 chroma sample covers 2x2 pixels) from
// RGB into the picture, through scratch buffers: swscale may read or write a little past the
// edges of what it converts, which must not touch the caller's image end or the pixels beside.
void VideoRewriter::Impl::PutBack(AVFrame& frame, const image::Image& rgb, const PixelRect& rect) {
  const int x1 = std::max(0, rect.x1) & ~1, y1 = std::max(0, rect.y1) & ~1;
  const int x2 = std::min(frame.width, (rect.x2 + 1) & ~1);
  const int y2 = std::min(frame.height, (rect.y2 + 1) & ~1);
  if (x2 <= x1 || y2 <= y1) return;
  const int w = x2 - x1, h = y2 - y1, cw = (w + 1) / 2, ch = (h + 1) / 2;
  const int rgb_stride = (w * 3 + 63) / 64 * 64 + 64;
  scratch_rgb.resize(static_cast<size_t>(rgb_stride) * (h + 1));
  for (int y = 0; y < h; ++y) {
    std::memcpy(&scratch_rgb[static_cast<size_t>(y) * rgb_stride], rgb.pixel(x1, y1 + y), w * 3);
  }
  const int y_stride = (w + 63) / 64 * 64 + 64, c_stride = (cw + 63) / 64 * 64 + 64;
  const size_t y_size = static_cast<size_t>(y_stride) * (h + 1);
  const size_t c_size = static_cast<size_t>(c_stride) * (ch + 1);
  scratch_yuv.resize(y_size + 2 * c_size);
  uint8_t* planes[4] = {scratch_yuv.data(), scratch_yuv.data() + y_size,
                        scratch_yuv.data() + y_size + c_size, nullptr};
  const int strides[4] = {y_stride, c_stride, c_stride, 0};
  to_yuv = sws_getCachedContext(to_yuv, w, h, AV_PIX_FMT_RGB24, w, h, AV_PIX_FMT_YUV420P,
                                kFromRgbFlags, nullptr, nullptr, nullptr);
  SetColorDetails(to_yuv, frame, false);
  const uint8_t* src[4] = {scratch_rgb.data(), nullptr, nullptr, nullptr};
  const int src_stride[4] = {rgb_stride, 0, 0, 0};
  sws_scale(to_yuv, src, src_stride, 0, h, planes, strides);
  for (int y = 0; y < h; ++y) {
    std::memcpy(frame.data[0] + static_cast<ptrdiff_t>(y1 + y) * frame.linesize[0] + x1,
                planes[0] + static_cast<ptrdiff_t>(y) * y_stride, w);
  }
  for (int p = 1; p <= 2; ++p) {
    for (int y = 0; y < ch; ++y) {
      std::memcpy(frame.data[p] + static_cast<ptrdiff_t>(y1 / 2 + y) * frame.linesize[p] + x1 / 2,
                  planes[p] + static_cast<ptrdiff_t>(y) * c_stride, cw);
    }
  }
}

// Sends a frame (null: flush) and muxes every packet the encoder has ready.
Status VideoRewriter::Impl::Encode(AVFrame* frame) {
  const auto start = SteadyClock::now();
  int rc = avcodec_send_frame(encoder.get(), frame);
  if (rc < 0) return AvFail("encoding", rc);
  while (true) {
    rc = avcodec_receive_packet(encoder.get(), encoded.get());
    if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF) break;
    if (rc < 0) return AvFail("encoding", rc);
    if (auto it = durations.find(encoded->pts); it != durations.end()) {
      if (encoded->duration <= 0) encoded->duration = it->second;
      durations.erase(it);
    }
    encoded->stream_index = out_video->index;
    av_packet_rescale_ts(encoded.get(), encoder->time_base, out_video->time_base);
    rc = av_interleaved_write_frame(output.get(), encoded.get());
    if (rc < 0) return AvFail("writing video", rc);
  }
  timings.encode_s += SecondsSince(start);
  return Status::Ok();
}

VideoRewriter::VideoRewriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

VideoRewriter::~VideoRewriter() = default;

StatusOr<std::unique_ptr<VideoRewriter>> VideoRewriter::Open(const RewriteOptions& options) {
  MOGSERVE_ASSIGN_OR_RETURN(const char* muxer, MuxerFor(options.output));
  // FFmpeg's default logger at its default level would print libx264's banner on stderr (the
  // wrapper logs it at "info"); a level someone chose is left alone.
  if (av_log_get_level() == AV_LOG_INFO) av_log_set_level(AV_LOG_WARNING);
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  MOGSERVE_RETURN_IF_ERROR(impl->OpenInput());
  MOGSERVE_RETURN_IF_ERROR(impl->OpenDecoder());
  MOGSERVE_RETURN_IF_ERROR(impl->OpenEncoder(muxer));
  impl->temp_path = TemporaryPath(options.output);
  AVFormatContext* raw = nullptr;
  const int rc = avformat_alloc_output_context2(&raw, nullptr, muxer, impl->temp_path.c_str());
  if (rc < 0) return impl->AvFail("creating the output", rc);
  impl->output.reset(raw);
  MOGSERVE_RETURN_IF_ERROR(impl->AddStreams());
  MOGSERVE_RETURN_IF_ERROR(impl->WriteHeader());
  return std::unique_ptr<VideoRewriter>(new VideoRewriter(std::move(impl)));
}

StatusOr<std::optional<RewriteFrame>> VideoRewriter::Next() {
  Impl& m = *impl_;
  if (!m.failed.ok()) return m.failed;
  if (m.finished) return FailedPrecondition("rewriting " + m.options.output + ": finished");
  while (!m.decoder_ended) {
    const auto start = SteadyClock::now();
    const int rc = avcodec_receive_frame(m.decoder.get(), m.decoded.get());
    if (rc == 0) {
      m.timings.decode_s += SecondsSince(start);
      StatusOr<RewriteFrame> frame = m.TakeFrame();
      if (!frame.ok()) return m.Remember(frame.status());
      return std::optional<RewriteFrame>(std::move(frame).value());
    }
    if (rc == AVERROR_EOF) {
      m.decoder_ended = true;
    } else if (rc != AVERROR(EAGAIN)) {
      return m.Remember(m.AvFail("decoding", rc));
    } else if (Status fed = m.Feed(); !fed.ok()) {
      return m.Remember(fed);
    }
    m.timings.decode_s += SecondsSince(start);
  }
  return std::optional<RewriteFrame>();
}

Status VideoRewriter::Write(RewriteFrame frame, std::span<const PixelRect> changed) {
  Impl& m = *impl_;
  if (!m.failed.ok()) return m.failed;
  if (frame.picture == nullptr || frame.index != m.frames_written || m.finished) {
    return FailedPrecondition("rewriting " + m.options.output + ": frame " +
                              std::to_string(frame.index) + " written out of order (expected " +
                              std::to_string(m.frames_written) + ")");
  }
  AVFrame& picture = *frame.picture->frame;
  if (!changed.empty()) {
    if (frame.rgb.width != picture.width || frame.rgb.height != picture.height) {
      return InvalidArgument("rewriting " + m.options.output + ": frame " +
                             std::to_string(frame.index) + " changed size");
    }
    const auto start = SteadyClock::now();
    // The decoder may still hold this picture as a reference: changing it then needs a copy.
    if (int rc = av_frame_make_writable(&picture); rc < 0) {
      return m.Remember(m.AvFail("copying a frame", rc));
    }
    for (const PixelRect& rect : changed) m.PutBack(picture, frame.rgb, rect);
    m.timings.convert_s += SecondsSince(start);
  }
  // A decoded keyframe's type would force one in the output: the encoder chooses its own.
  picture.pict_type = AV_PICTURE_TYPE_NONE;
  MOGSERVE_RETURN_IF_ERROR(m.Remember(m.Encode(&picture)));
  ++m.frames_written;
  return Status::Ok();
}

Status VideoRewriter::Finish() {
  Impl& m = *impl_;
  if (!m.failed.ok()) return m.failed;
  if (m.finished) return FailedPrecondition("rewriting " + m.options.output + ": finished");
  if (!m.decoder_ended || m.frames_written != m.frames_returned) {
    return FailedPrecondition("rewriting " + m.options.output + ": " +
                              std::to_string(m.frames_written) + " frames written of " +
                              std::to_string(m.frames_returned) + " read" +
                              (m.decoder_ended ? "" : ", and the input not read to its end"));
  }
  MOGSERVE_RETURN_IF_ERROR(m.Remember(m.Encode(nullptr)));
  const auto start = SteadyClock::now();
  int rc = av_write_trailer(m.output.get());
  if (rc < 0) return m.Remember(m.AvFail("writing the trailer", rc));
  rc = avio_closep(&m.output->pb);
  if (rc < 0) return m.Remember(m.AvFail("closing the output", rc));
  m.timings.encode_s += SecondsSince(start);
  std::error_code error;
  std::filesystem::rename(m.temp_path, m.options.output, error);
  if (error) {
    return m.Remember(Internal("cannot rename " + m.temp_path + " to " + m.options.output + ": " +
                               error.message()));
  }
  m.finished = true;
  return Status::Ok();
}

int64_t VideoRewriter::expected_frames() const {
  const AVStream& stream = *impl_->in_video;
  if (stream.nb_frames > 0) return stream.nb_frames;
  const double fps = av_q2d(stream.avg_frame_rate);
  if (stream.duration != AV_NOPTS_VALUE && fps > 0) {
    return static_cast<int64_t>(
        static_cast<double>(stream.duration) * av_q2d(stream.time_base) * fps + 0.5);
  }
  return 0;
}

double VideoRewriter::frame_rate() const {
  return av_q2d(impl_->in_video->avg_frame_rate);
}

int VideoRewriter::width() const {
  return impl_->encoder->width;
}

int VideoRewriter::height() const {
  return impl_->encoder->height;
}

VideoRewriter::Timings VideoRewriter::timings() const {
  return impl_->timings;
}

}  // namespace mogserve::video
