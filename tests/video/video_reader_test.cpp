#include "video/video_reader.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <thread>

#include "clips.h"
#include "common/subprocess.h"
#include "loopback.h"

namespace mogserve::video {
namespace {

using std::chrono::milliseconds;
using testing::ClipPath;
using testing::kClipFrames;
using testing::kClipHeight;
using testing::kClipWidth;

VideoSourceOptions Source(const std::string& url, milliseconds open = milliseconds(5000),
                          milliseconds io = milliseconds(5000)) {
  VideoSourceOptions o;
  o.url = url;
  o.timeouts = {open, io};
  return o;
}

// Opens `url` and expects it to fail with `code`; returns the error.
VideoError OpenFails(const VideoSourceOptions& options, VideoErrorCode code) {
  VideoReader reader(options);
  std::optional<VideoError> error = reader.Open();
  EXPECT_TRUE(error.has_value()) << options.url << " opened";
  if (!error) return {};
  EXPECT_EQ(error->code, code) << VideoErrorName(error->code) << ": " << error->message;
  return *error;
}

// Reads every frame of a clip, checking index, pts and size of each.
void ExpectWholeClip(const std::string& name, const std::string& codec) {
  VideoReader reader(Source(ClipPath(name)));
  ASSERT_EQ(reader.Open(), std::nullopt) << reader.error().message;
  EXPECT_EQ(reader.codec_name(), codec);
  EXPECT_NEAR(reader.frame_rate(), 25.0, 1e-9);
  FrameInfo frame;
  int n = 0;
  auto previous_arrival = std::chrono::steady_clock::time_point::min();
  while (reader.Next(&frame) == VideoReader::ReadState::kFrame) {
    ASSERT_EQ(frame.index, n);
    ASSERT_NEAR(frame.pts_s, n / 25.0, 1e-6) << name << " frame " << n;
    ASSERT_EQ(frame.width, kClipWidth);
    ASSERT_EQ(frame.height, kClipHeight);
    ASSERT_GE(frame.arrival, previous_arrival);
    previous_arrival = frame.arrival;
    ++n;
  }
  EXPECT_EQ(reader.error().message, "");
  EXPECT_EQ(n, kClipFrames);
  EXPECT_EQ(reader.counters().decoded, kClipFrames);
  EXPECT_EQ(reader.counters().corrupt, 0);
}

TEST(VideoReader, ReadsEveryFrameOfTheH264Clip) {
  ExpectWholeClip("clip.mp4", "h264");
  VideoReader reader(Source(ClipPath("clip.mp4")));
  ASSERT_EQ(reader.Open(), std::nullopt);
  EXPECT_EQ(reader.expected_frames(), kClipFrames);
}

// specs/video_streams.md §4, with a reader held back by its consumer: 10 frames, a 2 s stall,
// then the rest as fast as the file gives them. The stalled packets are read ~2 s late, so
// non-key ones are dropped undecoded, keyframes (one a second) still decoded, until the lag is
// under 200 ms and the next keyframe comes; from there every frame is decoded again.
TEST(VideoReader, CatchUpDropsNonKeyPacketsWhileTheReaderLags) {
  VideoSourceOptions options = Source(ClipPath("clip.mp4"));
  options.catch_up = true;
  VideoReader reader(options);
  ASSERT_EQ(reader.Open(), std::nullopt) << reader.error().message;
  FrameInfo frame;
  std::vector<int> source_frames;  // which of the clip's frames came out, by their pts
  while (reader.Next(&frame) == VideoReader::ReadState::kFrame) {
    source_frames.push_back(static_cast<int>(std::lround(frame.pts_s * 25)));
    if (source_frames.size() == 10) std::this_thread::sleep_for(milliseconds(2000));
  }
  EXPECT_EQ(reader.error().message, "");
  const ReaderCounters c = reader.counters();
  EXPECT_EQ(c.packets, kClipFrames);
  EXPECT_EQ(c.decoded + c.dropped_catchup, kClipFrames);
  EXPECT_EQ(c.decoded, static_cast<int64_t>(source_frames.size()));
  // 15 + 24 frames of the first two seconds; the lag falls 40 ms a frame from ~2 s, so
  // about 24 more before the keyframe at 3 s.
  EXPECT_GE(c.dropped_catchup, 39);
  EXPECT_LE(c.dropped_catchup, 90);
  ASSERT_GT(source_frames.size(), 12u);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(source_frames[i], i);
  EXPECT_EQ(source_frames[10], 25);  // the next keyframe: the non-key ones before it dropped
  EXPECT_EQ(source_frames[11], 50);
  // Caught up by 4 s at the latest: the last 150 frames all decoded, in order.
  const std::vector<int> tail(source_frames.end() - 150, source_frames.end());
  for (int i = 0; i < 150; ++i) ASSERT_EQ(tail[i], 100 + i);
}

TEST(VideoReader, CatchUpLeavesASourceReadAheadOfRealTimeAlone) {
  VideoSourceOptions options = Source(ClipPath("clip.mp4"));
  options.catch_up = true;
  VideoReader reader(options);
  ASSERT_EQ(reader.Open(), std::nullopt);
  FrameInfo frame;
  int n = 0;
  while (reader.Next(&frame) == VideoReader::ReadState::kFrame) ++n;
  EXPECT_EQ(n, kClipFrames);
  EXPECT_EQ(reader.counters().dropped_catchup, 0);
}

// specs/video_streams.md §1: NVDEC when asked and possible; here (no NVIDIA driver) software,
// the reason FFmpeg gave in the decoder's name, every frame decoded.
TEST(VideoReader, HwAccelFallsBackToSoftwareAndSaysWhy) {
  for (HwAccel hwaccel : {HwAccel::kCuda, HwAccel::kAuto, HwAccel::kNone}) {
    SCOPED_TRACE(HwAccelName(hwaccel));
    VideoSourceOptions options = Source(ClipPath("clip.mp4"));
    options.hwaccel = hwaccel;
    VideoReader reader(options);
    ASSERT_EQ(reader.Open(), std::nullopt) << reader.error().message;
    const std::string decoder = reader.decoder_name();
    if (hwaccel == HwAccel::kNone) {
      EXPECT_EQ(decoder, "h264 (software)");
    } else if (decoder != "h264 (cuda)") {
      EXPECT_EQ(decoder.rfind("h264 (software; cuda unavailable: ", 0), 0u) << decoder;
      EXPECT_NE(decoder.find("libcuda.so.1"), std::string::npos) << decoder;
    }
    FrameInfo frame;
    int n = 0;
    while (reader.Next(&frame) == VideoReader::ReadState::kFrame) {
      if (n++ > 0) continue;
      const image::Image preview = reader.Preview(640);  // from the picture in memory
      EXPECT_EQ(preview.width, 640);
      EXPECT_EQ(preview.height, 360);
    }
    EXPECT_EQ(n, kClipFrames);
  }
  EXPECT_EQ(ParseHwAccel("cuda"), HwAccel::kCuda);
  EXPECT_EQ(ParseHwAccel("auto"), HwAccel::kAuto);
  EXPECT_EQ(ParseHwAccel("none"), HwAccel::kNone);
  EXPECT_EQ(ParseHwAccel("gpu"), std::nullopt);
}

TEST(VideoReader, ReadsEveryFrameOfTheHevcClip) {
  ExpectWholeClip("clip_hevc.mp4", "hevc");
}

TEST(VideoReader, ReadsEveryFrameOfTheMjpegClip) {
  ExpectWholeClip("clip_mjpeg.mkv", "mjpeg");
}

// The ffmpeg CLI's own rendering of frame `index` at width x height, RGB24, area-averaged.
std::vector<uint8_t> FfmpegFrame(const std::string& clip, int index, int width, int height) {
  const std::string filter = "select=eq(n\\," + std::to_string(index) +
                             "),scale=" + std::to_string(width) + ":" + std::to_string(height) +
                             ":flags=area";
  SubprocessOptions options;
  options.out = Redirect::Pipe();
  StatusOr<SubprocessOutput> run =
      RunSubprocess({"ffmpeg", "-nostdin", "-v", "error", "-i", clip, "-vf", filter, "-frames:v",
                     "1", "-pix_fmt", "rgb24", "-f", "rawvideo", "-"},
                    options, std::chrono::seconds(60));
  if (!run.ok() || !run->status.ok()) return {};
  if (run->out.size() != static_cast<size_t>(width) * height * 3) return {};
  return std::vector<uint8_t>(run->out.begin(), run->out.end());
}

TEST(VideoReader, ScalesFramesIntoTheirBucketCanvas) {
  const auto buckets = pipeline::ShapeBuckets::FixedSquare(512);
  pipeline::CanvasPool pool;
  VideoReader reader(Source(ClipPath("clip.mp4")));
  ASSERT_EQ(reader.Open(), std::nullopt);
  FrameInfo frame;
  for (int i = 0; i <= 120; ++i) {
    ASSERT_EQ(reader.Next(&frame), VideoReader::ReadState::kFrame);
  }
  pipeline::PreparedCanvas canvas = reader.Scale(buckets, pool);
  EXPECT_EQ(canvas.width, kClipWidth);
  EXPECT_EQ(canvas.height, kClipHeight);
  ASSERT_EQ(canvas.letterbox.canvas_width, 512);
  ASSERT_EQ(canvas.letterbox.content_width, 512);
  ASSERT_EQ(canvas.letterbox.content_height, 288);
  EXPECT_NEAR(canvas.letterbox.to_source_x, 2.5, 1e-9);
  ASSERT_EQ(canvas.canvas.size(), 512u * 512 * 3);
  // The padding below the picture is black.
  for (size_t i = 512 * 288 * 3; i < canvas.canvas.size(); ++i) {
    ASSERT_EQ(canvas.canvas[i], 0) << "padding byte " << i;
  }
  // The picture is frame 120 itself: what the ffmpeg CLI renders of it at the same size (its
  // scale filter rounds differently; a wrong frame, flip or channel order is off by tens).
  const std::vector<uint8_t> expected = FfmpegFrame(ClipPath("clip.mp4"), 120, 512, 288);
  ASSERT_EQ(expected.size(), 512u * 288 * 3);
  double diff = 0;
  for (size_t i = 0; i < expected.size(); ++i) diff += std::abs(expected[i] - canvas.canvas[i]);
  EXPECT_LT(diff / expected.size(), 2.0);
  // The buffer came from the pool, and goes back to it.
  pool.Release(std::move(canvas.canvas));
  EXPECT_EQ(pool.stats().free_buffers, 1);
}

TEST(VideoReader, DamagedStreamKeepsDecodingAndCountsCorruptFrames) {
  // clip.ts with 2 % of the bytes of its middle 40 % replaced at random (fixed seed).
  std::ifstream in(ClipPath("clip.ts"), std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 1'000'000u);
  std::mt19937 rng(7);
  const size_t begin = bytes.size() * 3 / 10, end = bytes.size() * 7 / 10;
  for (size_t i = 0; i < (end - begin) / 50; ++i) {
    bytes[begin + rng() % (end - begin)] = static_cast<char>(rng());
  }
  const std::string path = ::testing::TempDir() + "/damaged.ts";
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));

  VideoReader reader(Source(path));
  ASSERT_EQ(reader.Open(), std::nullopt) << reader.error().message;
  FrameInfo frame;
  int frames = 0;
  VideoReader::ReadState state;
  while ((state = reader.Next(&frame)) == VideoReader::ReadState::kFrame) ++frames;
  EXPECT_EQ(state, VideoReader::ReadState::kEnded) << reader.error().message;
  const ReaderCounters c = reader.counters();
  EXPECT_GT(c.corrupt, 0);
  // corrupt counts flagged frames (decoded, not returned) and rejected packets (never decoded).
  EXPECT_LE(frames, c.decoded);
  EXPECT_GE(frames, c.decoded - c.corrupt);
  EXPECT_GT(frames, 100);  // the undamaged start and end at least
  EXPECT_LT(frames, testing::kClipFrames);
  std::filesystem::remove(path);
}

TEST(VideoReader, MissingFileIsNotFound) {
  const VideoError e = OpenFails(Source("/nonexistent/clip.mp4"), VideoErrorCode::kNotFound);
  EXPECT_NE(e.message.find("/nonexistent/clip.mp4"), std::string::npos) << e.message;
}

TEST(VideoReader, RandomBytesAreInvalidData) {
  // No extension: FFmpeg would take ".bin" for binary text art, a format it knows.
  const std::string path = ::testing::TempDir() + "/random_bytes";
  std::mt19937 rng(7);
  std::ofstream f(path, std::ios::binary);
  for (int i = 0; i < 200'000; ++i) f.put(static_cast<char>(rng()));
  f.close();
  const VideoError e = OpenFails(Source(path), VideoErrorCode::kInvalidData);
  EXPECT_NE(e.message.find("Invalid data"), std::string::npos) << e.message;
  std::filesystem::remove(path);
}

TEST(VideoReader, Mpeg4IsAnUnsupportedCodec) {
  const VideoError e =
      OpenFails(Source(ClipPath("clip_mpeg4.mp4")), VideoErrorCode::kUnsupportedCodec);
  EXPECT_NE(e.message.find("video codec 'mpeg4'"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("supported: h264, hevc, mjpeg"), std::string::npos) << e.message;
  // Allowed explicitly, it decodes.
  VideoSourceOptions o = Source(ClipPath("clip_mpeg4.mp4"));
  o.codecs = {"mpeg4"};
  VideoReader reader(o);
  ASSERT_EQ(reader.Open(), std::nullopt);
  FrameInfo frame;
  EXPECT_EQ(reader.Next(&frame), VideoReader::ReadState::kFrame);
}

TEST(VideoReader, AudioOnlyHasNoVideoStream) {
  const VideoError e =
      OpenFails(Source(ClipPath("audio_only.m4a")), VideoErrorCode::kNoVideoStream);
  EXPECT_NE(e.message.find("has no video stream"), std::string::npos) << e.message;
}

TEST(VideoReader, ClosedPortIsUnreachableWithoutCredentials) {
  const int port = testing::ClosedTcpPort();
  const VideoError e =
      OpenFails(Source("rtsp://admin:s3cret@127.0.0.1:" + std::to_string(port) + "/live"),
                VideoErrorCode::kUnreachable);
  EXPECT_NE(e.message.find("rtsp://***@127.0.0.1:" + std::to_string(port) + "/live"),
            std::string::npos)
      << e.message;
  EXPECT_EQ(e.message.find("s3cret"), std::string::npos) << e.message;
  EXPECT_EQ(e.message.find("admin"), std::string::npos) << e.message;
  OpenFails(Source("tcp://127.0.0.1:" + std::to_string(port)), VideoErrorCode::kUnreachable);
}

TEST(VideoReader, SilentServerTimesOutWithinTheTimeout) {
  testing::SilentListener silent;
  const auto start = std::chrono::steady_clock::now();
  const VideoError e = OpenFails(Source("tcp://127.0.0.1:" + std::to_string(silent.port()),
                                        milliseconds(1500), milliseconds(1000)),
                                 VideoErrorCode::kTimeout);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 1.5 + 1.0);
  EXPECT_NE(e.message.find("tcp://127.0.0.1"), std::string::npos) << e.message;
}

TEST(VideoReader, InterruptEndsABlockedOpenAtOnce) {
  testing::SilentListener silent;
  VideoReader reader(Source("tcp://127.0.0.1:" + std::to_string(silent.port()),
                            milliseconds(60'000), milliseconds(60'000)));
  std::thread interrupter([&] {
    std::this_thread::sleep_for(milliseconds(300));
    reader.Interrupt();
  });
  const auto start = std::chrono::steady_clock::now();
  std::optional<VideoError> error = reader.Open();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  interrupter.join();
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->code, VideoErrorCode::kCancelled) << error->message;
  EXPECT_LT(seconds, 1.3);
}

TEST(VideoReader, HttpStatusesAreClassifiedWithoutCredentials) {
  testing::FixedStatusHttpServer unauthorized("401 Unauthorized");
  const VideoError e = OpenFails(
      Source("http://viewer:hunter2@127.0.0.1:" + std::to_string(unauthorized.port()) + "/live.ts"),
      VideoErrorCode::kUnauthorized);
  EXPECT_EQ(e.message.find("hunter2"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("http://***@127.0.0.1"), std::string::npos) << e.message;
  EXPECT_GE(unauthorized.requests(), 1);

  testing::FixedStatusHttpServer forbidden("403 Forbidden");
  OpenFails(Source("http://127.0.0.1:" + std::to_string(forbidden.port()) + "/x.ts"),
            VideoErrorCode::kUnauthorized);
  testing::FixedStatusHttpServer missing("404 Not Found");
  OpenFails(Source("http://127.0.0.1:" + std::to_string(missing.port()) + "/nope"),
            VideoErrorCode::kNotFound);
}

TEST(VideoReader, NoFrameWatchdogEndsAReadWhileBytesStillFlow) {
  // The start of the clip, then MPEG-TS null packets without end: every read gets data in
  // time, so only the watchdog notices that no picture comes any more.
  std::ifstream in(ClipPath("clip.ts"), std::ios::binary);
  std::string prefix(188 * 1000, '\0');
  in.read(prefix.data(), static_cast<std::streamsize>(prefix.size()));
  testing::TrickleServer trickle(prefix);
  VideoSourceOptions o = Source("tcp://127.0.0.1:" + std::to_string(trickle.port()),
                                milliseconds(20'000), milliseconds(20'000));
  o.no_frame_timeout = milliseconds(1000);
  VideoReader reader(o);
  ASSERT_EQ(reader.Open(), std::nullopt) << reader.error().message;
  // The prefix's frames come at once (the last one, cut short, only when the watchdog ends the
  // read and the demuxer lets go of it); then nothing for 1 s.
  const auto opened = std::chrono::steady_clock::now();
  FrameInfo frame;
  int frames = 0;
  VideoReader::ReadState state;
  while ((state = reader.Next(&frame)) == VideoReader::ReadState::kFrame) ++frames;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - opened).count();
  EXPECT_GT(frames, 0);
  ASSERT_EQ(state, VideoReader::ReadState::kFailed);
  EXPECT_EQ(reader.error().code, VideoErrorCode::kTimeout) << reader.error().message;
  EXPECT_NE(reader.error().message.find("no frame within 1 s"), std::string::npos)
      << reader.error().message;
  EXPECT_GE(seconds, 0.9);
  EXPECT_LT(seconds, 5.0);  // not the 20 s I/O timeout
}

TEST(VideoReader, UnknownSchemeIsABadUrl) {
  const VideoError e = OpenFails(Source("gopher://u:pw@host/x"), VideoErrorCode::kBadUrl);
  EXPECT_EQ(e.message.find("pw"), std::string::npos) << e.message;
}

TEST(VideoReader, ErrorNamesAreStable) {
  EXPECT_STREQ(VideoErrorName(VideoErrorCode::kUnauthorized), "unauthorized");
  EXPECT_STREQ(VideoErrorName(VideoErrorCode::kNoVideoStream), "no_video_stream");
  EXPECT_STREQ(VideoErrorName(VideoErrorCode::kUnsupportedCodec), "unsupported_codec");
  EXPECT_STREQ(VideoErrorName(VideoErrorCode::kInvalidData), "invalid_data");
  EXPECT_STREQ(VideoErrorName(VideoErrorCode::kTimeout), "timeout");
}

}  // namespace
}  // namespace mogserve::video
