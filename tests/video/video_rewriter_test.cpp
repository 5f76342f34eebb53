#include "video/video_rewriter.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
}

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <vector>

#include "clips.h"

namespace mogserve::video {
namespace {

namespace fs = std::filesystem;
using testing::ClipPath;
using testing::kClipFrames;
using testing::kClipHeight;
using testing::kClipWidth;

// A fresh folder for a test's outputs, removed with everything in it.
class ScratchDir {
 public:
  ScratchDir() {
    static int counter = 0;
    path_ = fs::temp_directory_path() /
            ("mogserve_rewriter_" + std::to_string(getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~ScratchDir() { fs::remove_all(path_); }
  std::string File(const std::string& name) const { return (path_ / name).string(); }
  std::vector<std::string> Entries() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(path_)) {
      names.push_back(entry.path().filename().string());
    }
    return names;
  }

 private:
  fs::path path_;
};

// What a test learns about a media file by demuxing and decoding it with libavformat.
struct Packet {
  std::vector<uint8_t> data;
  int64_t pts = 0;  // in the stream's time base
  int64_t dts = 0;
};
struct Probe {
  int width = 0, height = 0;
  AVRational frame_rate{0, 1};
  AVRational video_time_base{0, 1}, audio_time_base{0, 1};
  std::vector<int64_t> video_pts;            // each decoded frame's, in presentation order
  std::map<int, std::vector<uint8_t>> luma;  // frame index -> Y plane, width x height
  std::vector<Packet> audio;
  std::string title;
  std::string video_codec;
};

// Takes every frame the decoder has ready: its timestamp, and its Y plane when kept.
void Drain(AVCodecContext* decoder, AVFrame* frame, const std::set<int>& keep, Probe& probe) {
  while (avcodec_receive_frame(decoder, frame) == 0) {
    const int index = static_cast<int>(probe.video_pts.size());
    probe.video_pts.push_back(frame->best_effort_timestamp);
    if (keep.count(index) == 0) continue;
    std::vector<uint8_t>& y = probe.luma[index];
    for (int row = 0; row < frame->height; ++row) {
      const uint8_t* line = frame->data[0] + row * frame->linesize[0];
      y.insert(y.end(), line, line + frame->width);
    }
  }
}

// Decodes the whole video stream (keeping the Y plane of frames in `keep`) and lists the audio
// packets.
Probe ProbeFile(const std::string& path, const std::set<int>& keep) {
  Probe probe;
  AVFormatContext* format = nullptr;
  if (avformat_open_input(&format, path.c_str(), nullptr, nullptr) < 0) {
    ADD_FAILURE() << "cannot open " << path;
    return probe;
  }
  avformat_find_stream_info(format, nullptr);
  const int video = av_find_best_stream(format, AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
  const int audio = av_find_best_stream(format, AVMEDIA_TYPE_AUDIO, -1, -1, nullptr, 0);
  if (const AVDictionaryEntry* t = av_dict_get(format->metadata, "title", nullptr, 0)) {
    probe.title = t->value;
  }
  const AVStream* vs = format->streams[video];
  probe.width = vs->codecpar->width;
  probe.height = vs->codecpar->height;
  probe.frame_rate = vs->avg_frame_rate;
  probe.video_time_base = vs->time_base;
  probe.video_codec = avcodec_get_name(vs->codecpar->codec_id);
  if (audio >= 0) probe.audio_time_base = format->streams[audio]->time_base;
  const AVCodec* codec = avcodec_find_decoder(vs->codecpar->codec_id);
  AVCodecContext* decoder = avcodec_alloc_context3(codec);
  avcodec_parameters_to_context(decoder, vs->codecpar);
  decoder->pkt_timebase = vs->time_base;
  avcodec_open2(decoder, codec, nullptr);
  AVPacket* packet = av_packet_alloc();
  AVFrame* frame = av_frame_alloc();
  while (av_read_frame(format, packet) >= 0) {
    if (packet->stream_index == video) {
      avcodec_send_packet(decoder, packet);
      Drain(decoder, frame, keep, probe);
    } else if (packet->stream_index == audio) {
      probe.audio.push_back({std::vector<uint8_t>(packet->data, packet->data + packet->size),
                             packet->pts, packet->dts});
    }
    av_packet_unref(packet);
  }
  avcodec_send_packet(decoder, nullptr);
  Drain(decoder, frame, keep, probe);
  av_frame_free(&frame);
  av_packet_free(&packet);
  avcodec_free_context(&decoder);
  avformat_close_input(&format);
  return probe;
}

// PSNR (dB) of two Y planes of `width` columns over the pixels `inside` accepts.
double LumaPsnr(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b, int width,
                const std::function<bool(int, int)>& inside = nullptr) {
  double sum = 0;
  int64_t n = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const int x = static_cast<int>(i % width), y = static_cast<int>(i / width);
    if (inside && !inside(x, y)) continue;
    const double d = static_cast<double>(a[i]) - b[i];
    sum += d * d;
    ++n;
  }
  const double mse = n > 0 ? sum / static_cast<double>(n) : 0;
  return mse <= 0 ? 99.0 : 10 * std::log10(255.0 * 255.0 / mse);
}

double MeanLuma(const std::vector<uint8_t>& y, int width, const PixelRect& r) {
  double sum = 0;
  for (int row = r.y1; row < r.y2; ++row) {
    for (int x = r.x1; x < r.x2; ++x) sum += y[static_cast<size_t>(row) * width + x];
  }
  return sum / ((r.x2 - r.x1) * (r.y2 - r.y1));
}

void Fill(image::Image& rgb, const PixelRect& r, uint8_t value) {
  for (int y = r.y1; y < r.y2; ++y) {
    for (int x = r.x1; x < r.x2; ++x) {
      uint8_t* p = rgb.pixel(x, y);
      p[0] = p[1] = p[2] = value;
    }
  }
}

// Rewrites `input` to `output`, keeping `window` frames between Next and Write (as the
// anonymizer does); `edit` changes a frame and says which rectangles it changed.
using Edit = std::function<std::vector<PixelRect>(RewriteFrame&)>;
VideoRewriter::Timings Rewrite(const std::string& input, const std::string& output,
                               const Edit& edit = nullptr, int window = 4) {
  auto opened = VideoRewriter::Open({.input = input, .output = output});
  EXPECT_TRUE(opened.ok()) << opened.status().ToString();
  if (!opened.ok()) return {};
  VideoRewriter& rewriter = **opened;
  EXPECT_EQ(rewriter.expected_frames(), kClipFrames);
  EXPECT_NEAR(rewriter.frame_rate(), 25.0, 1e-9);
  std::vector<RewriteFrame> pending;
  int64_t expected_index = 0;
  auto write_oldest = [&] {
    RewriteFrame frame = std::move(pending.front());
    pending.erase(pending.begin());
    const std::vector<PixelRect> rects = edit ? edit(frame) : std::vector<PixelRect>{};
    const Status written = rewriter.Write(std::move(frame), rects);
    EXPECT_TRUE(written.ok()) << written.ToString();
  };
  while (true) {
    auto next = rewriter.Next();
    EXPECT_TRUE(next.ok()) << next.status().ToString();
    if (!next.ok() || !next->has_value()) break;
    EXPECT_EQ((*next)->index, expected_index++);
    pending.push_back(std::move(**next));
    if (static_cast<int>(pending.size()) > window) write_oldest();
  }
  while (!pending.empty()) write_oldest();
  const Status finished = rewriter.Finish();
  EXPECT_TRUE(finished.ok()) << finished.ToString();
  return rewriter.timings();
}

const std::set<int> kSampled = {0, 37, 125, 212, 249};

// The unchanged rewrite of clip_audio.mp4 and the input, probed once for the tests below.
class VideoRewriterClip : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    input_ = new Probe(ProbeFile(ClipPath("clip_audio.mp4"), kSampled));
    dir_ = new ScratchDir;
    const VideoRewriter::Timings t = Rewrite(ClipPath("clip_audio.mp4"), dir_->File("plain.mp4"));
    std::printf("[ timing ] per frame: decode %.2f ms, convert %.2f ms, encode %.2f ms\n",
                t.decode_s * 1000 / kClipFrames, t.convert_s * 1000 / kClipFrames,
                t.encode_s * 1000 / kClipFrames);
    plain_ = new Probe(ProbeFile(dir_->File("plain.mp4"), kSampled));
  }
  static void TearDownTestSuite() {
    delete plain_;
    delete input_;
    delete dir_;
  }
  static Probe* input_;
  static Probe* plain_;
  static ScratchDir* dir_;
};
Probe* VideoRewriterClip::input_ = nullptr;
Probe* VideoRewriterClip::plain_ = nullptr;
ScratchDir* VideoRewriterClip::dir_ = nullptr;

TEST_F(VideoRewriterClip, KeepsEveryFrameAndItsTimestamp) {
  const Probe& in = *input_;
  const Probe& out = *plain_;
  EXPECT_EQ(out.video_codec, "h264");
  EXPECT_EQ(out.width, kClipWidth);
  EXPECT_EQ(out.height, kClipHeight);
  EXPECT_EQ(av_q2d(out.frame_rate), 25.0);
  ASSERT_EQ(in.video_pts.size(), static_cast<size_t>(kClipFrames));
  ASSERT_EQ(out.video_pts.size(), in.video_pts.size());
  for (size_t i = 0; i < in.video_pts.size(); ++i) {
    ASSERT_EQ(av_rescale_q(out.video_pts[i], out.video_time_base, in.video_time_base),
              in.video_pts[i])
        << "frame " << i;
    ASSERT_EQ(av_rescale_q(in.video_pts[i], in.video_time_base, out.video_time_base),
              out.video_pts[i])
        << "frame " << i << ": not exact in the output time base";
  }
}

TEST_F(VideoRewriterClip, CopiesTheAudioPacketsAndTheTitle) {
  const Probe& in = *input_;
  const Probe& out = *plain_;
  EXPECT_EQ(out.title, "mogserve test clip");
  ASSERT_GT(in.audio.size(), 400u);
  ASSERT_EQ(out.audio.size(), in.audio.size());
  for (size_t i = 0; i < in.audio.size(); ++i) {
    ASSERT_EQ(out.audio[i].data, in.audio[i].data) << "audio packet " << i;
    ASSERT_EQ(av_rescale_q(out.audio[i].pts, out.audio_time_base, in.audio_time_base),
              in.audio[i].pts)
        << "audio packet " << i;
    ASSERT_EQ(av_rescale_q(out.audio[i].dts, out.audio_time_base, in.audio_time_base),
              in.audio[i].dts)
        << "audio packet " << i;
  }
}

TEST_F(VideoRewriterClip, UnchangedFramesStayCloseToTheInput) {
  for (int index : kSampled) {
    const double psnr = LumaPsnr(input_->luma.at(index), plain_->luma.at(index), kClipWidth);
    std::printf("[ psnr   ] frame %d: %.2f dB\n", index, psnr);
    EXPECT_GT(psnr, 40.0) << "frame " << index;
  }
}

// A black rectangle passed to Write, and a white square painted in rgb but not passed.
constexpr PixelRect kBlack{301, 101, 599, 399};  // odd edges: widened to even ones
constexpr PixelRect kHidden{800, 100, 1000, 300};

TEST_F(VideoRewriterClip, OnlyTheChangedRectanglesReachTheOutput) {
  const std::string path = dir_->File("edited.mp4");
  Rewrite(ClipPath("clip_audio.mp4"), path, [](RewriteFrame& frame) {
    Fill(frame.rgb, kBlack, 0);
    Fill(frame.rgb, kHidden, 255);
    return std::vector<PixelRect>{kBlack};
  });
  const Probe out = ProbeFile(path, kSampled);
  ASSERT_EQ(out.video_pts.size(), static_cast<size_t>(kClipFrames));
  // Beyond a macroblock of the black rectangle the encoder sees the same pixels as before.
  auto far_outside = [](int x, int y) {
    return x < kBlack.x1 - 16 || x >= kBlack.x2 + 16 || y < kBlack.y1 - 16 || y >= kBlack.y2 + 16;
  };
  auto in_hidden = [](int x, int y) {
    return x >= kHidden.x1 && x < kHidden.x2 && y >= kHidden.y1 && y < kHidden.y2;
  };
  for (int index : kSampled) {
    const std::vector<uint8_t>& y = out.luma.at(index);
    const double black = MeanLuma(y, kClipWidth, kBlack);
    const double outside = LumaPsnr(input_->luma.at(index), y, kClipWidth, far_outside);
    const double plain =
        LumaPsnr(input_->luma.at(index), plain_->luma.at(index), kClipWidth, far_outside);
    const double hidden = LumaPsnr(input_->luma.at(index), y, kClipWidth, in_hidden);
    std::printf(
        "[ edit   ] frame %d: black mean Y %.1f, outside %.2f dB (unchanged %.2f dB), "
        "hidden square %.2f dB, mean Y %.1f\n",
        index, black, outside, plain, hidden, MeanLuma(y, kClipWidth, kHidden));
    EXPECT_LT(black, 20.0) << "frame " << index;  // limited range: black is Y 16
    EXPECT_GT(outside, 40.0) << "frame " << index;
    EXPECT_NEAR(outside, plain, 1.5) << "frame " << index;
    EXPECT_GT(hidden, 35.0) << "frame " << index << ": the white square reached the output";
    EXPECT_LT(MeanLuma(y, kClipWidth, kHidden), 230.0) << "frame " << index;
  }
}

TEST(VideoRewriter, RefusesAnUnknownOutputExtension) {
  ScratchDir dir;
  auto opened = VideoRewriter::Open({.input = ClipPath("clip.mp4"), .output = dir.File("a.avi")});
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(opened.status().message().find(".mp4, .mov, .mkv"), std::string::npos)
      << opened.status().message();
  EXPECT_TRUE(dir.Entries().empty());
}

TEST(VideoRewriter, RefusesInputsWithoutVideo) {
  ScratchDir dir;
  auto audio =
      VideoRewriter::Open({.input = ClipPath("audio_only.m4a"), .output = dir.File("a.mp4")});
  ASSERT_FALSE(audio.ok());
  EXPECT_EQ(audio.status().code(), StatusCode::kInvalidData);
  EXPECT_NE(audio.status().message().find("audio_only.m4a"), std::string::npos);

  const std::string text = dir.File("notes.txt");
  std::ofstream(text) << "not a video\n";
  auto garbage = VideoRewriter::Open({.input = text, .output = dir.File("b.mp4")});
  ASSERT_FALSE(garbage.ok());
  EXPECT_NE(garbage.status().message().find("notes.txt"), std::string::npos);

  auto missing = VideoRewriter::Open({.input = dir.File("none.mp4"), .output = dir.File("c.mp4")});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(dir.Entries(), std::vector<std::string>{"notes.txt"});
}

TEST(VideoRewriter, LeavesNoFileWhenDestroyedBeforeFinish) {
  ScratchDir dir;
  const std::string output = dir.File("out.mp4");
  {
    auto opened = VideoRewriter::Open({.input = ClipPath("clip_audio.mp4"), .output = output});
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    for (int i = 0; i < 10; ++i) {
      auto next = (*opened)->Next();
      ASSERT_TRUE(next.ok() && next->has_value());
      ASSERT_TRUE((*opened)->Write(std::move(**next), {}).ok());
    }
    // Writing goes to a hidden temporary, not to the output.
    const std::vector<std::string> entries = dir.Entries();
    ASSERT_EQ(entries.size(), 1u);
    EXPECT_EQ(entries[0].rfind(".out.mp4.tmp.", 0), 0u) << entries[0];
    EXPECT_FALSE(fs::exists(output));
    const Status early = (*opened)->Finish();
    EXPECT_EQ(early.code(), StatusCode::kFailedPrecondition) << early.ToString();
  }
  EXPECT_TRUE(dir.Entries().empty());
}

TEST(VideoRewriter, RefusesFramesOutOfOrder) {
  ScratchDir dir;
  auto opened = VideoRewriter::Open({.input = ClipPath("clip.mp4"), .output = dir.File("out.mkv")});
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  auto first = (*opened)->Next();
  auto second = (*opened)->Next();
  ASSERT_TRUE(first.ok() && second.ok() && first->has_value() && second->has_value());
  EXPECT_EQ((*second)->index, 1);
  EXPECT_EQ((*opened)->Write(std::move(**second), {}).code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE((*opened)->Write(std::move(**first), {}).ok());
}

TEST(VideoRewriter, WritesMatroska) {
  ScratchDir dir;
  Rewrite(ClipPath("clip_audio.mp4"), dir.File("out.mkv"));
  const Probe out = ProbeFile(dir.File("out.mkv"), {});
  EXPECT_EQ(out.video_pts.size(), static_cast<size_t>(kClipFrames));
  // Matroska holds no negative timestamp: the muxer shifts every stream by the AAC priming
  // (1024 samples, 21 ms), so the frames keep their spacing, not their absolute times.
  for (int i = 0; i < kClipFrames; ++i) {
    ASSERT_EQ(out.video_pts[i] - out.video_pts[0], i * 40) << "frame " << i;  // ms
  }
  EXPECT_EQ(out.title, "mogserve test clip");
  EXPECT_GT(out.audio.size(), 400u);
  EXPECT_EQ(dir.Entries(), std::vector<std::string>{"out.mkv"});
}

}  // namespace
}  // namespace mogserve::video
