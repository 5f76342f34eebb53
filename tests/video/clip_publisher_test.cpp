// ClipPublisher (bench video's cameras) with the real reader over loopback: frames paced at the
// clip's rate, every one delivered, timestamps increasing across loops of the clip.
#include "video/clip_publisher.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "clips.h"
#include "common/subprocess.h"
#include "loopback.h"
#include "video/video_reader.h"

namespace mogserve::video {
namespace {

using std::chrono::milliseconds;
using testing::ClipPath;

TEST(ClipPublisher, ProbeDescribesTheClip) {
  StatusOr<ClipInfo> info = ClipPublisher::Probe(ClipPath("clip.mp4"));
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_EQ(info->codec, "h264");
  EXPECT_EQ(info->width, testing::kClipWidth);
  EXPECT_EQ(info->height, testing::kClipHeight);
  EXPECT_NEAR(info->fps, 25.0, 1e-9);
  EXPECT_NEAR(info->seconds, 10.0, 0.05);
  EXPECT_GT(info->bit_rate, 0);

  EXPECT_FALSE(ClipPublisher::Probe("/nonexistent/clip.mp4").ok());
  StatusOr<ClipInfo> audio = ClipPublisher::Probe(ClipPath("audio_only.m4a"));
  ASSERT_FALSE(audio.ok());
  EXPECT_NE(audio.status().message().find("no video stream"), std::string::npos)
      << audio.status().message();
}

// The clip's first second (25 frames, cut at its second keyframe by the ffmpeg CLI without
// re-encoding) loops twice over TCP in about 2 s: 50 frames in order, pts 0..1.96 s without a
// jump or a repeat at the loop, delivered at the clip's rate rather than at once.
TEST(ClipPublisher, LoopsTheClipAtItsFrameRateOverTcp) {
  const std::string short_clip =
      (std::filesystem::temp_directory_path() / ("one_second_" + std::to_string(getpid()) + ".mp4"))
          .string();
  Subprocess ffmpeg;
  ASSERT_TRUE(ffmpeg
                  .Start({"ffmpeg", "-nostdin", "-v", "error", "-y", "-i", ClipPath("clip.mp4"),
                          "-frames:v", "25", "-c", "copy", short_clip})
                  .ok());
  ASSERT_TRUE(ffmpeg.Wait(std::chrono::seconds(60)).ok());
  const int port = testing::ClosedTcpPort();
  const std::string url = "tcp://127.0.0.1:" + std::to_string(port);
  PublisherOptions options;
  options.clip = short_clip;
  options.url = url;
  options.listen = true;
  StatusOr<std::unique_ptr<ClipPublisher>> publisher = ClipPublisher::Start(options);
  ASSERT_TRUE(publisher.ok()) << publisher.status().message();
  for (int i = 0; i < 100 && !testing::IsListening(port); ++i) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  VideoSourceOptions source;
  source.url = url;
  source.timeouts = {milliseconds(5000), milliseconds(5000)};
  source.probe_size_bytes = 32'000;
  source.analyze_duration = milliseconds(0);
  VideoReader reader(source);
  ASSERT_EQ(reader.Open(), std::nullopt) << reader.error().message;
  FrameInfo frame;
  std::chrono::steady_clock::time_point first_arrival;
  for (int n = 0; n < 50; ++n) {
    ASSERT_EQ(reader.Next(&frame), VideoReader::ReadState::kFrame)
        << "frame " << n << ": " << reader.error().message;
    if (n == 0) first_arrival = frame.arrival;
    ASSERT_NEAR(frame.pts_s, n / 25.0, 1e-3) << "frame " << n;
  }
  const double took_s = std::chrono::duration<double>(frame.arrival - first_arrival).count();
  EXPECT_GT(took_s, 1.6) << "49 frame intervals at 25 fps take 1.96 s";
  EXPECT_LT(took_s, 3.0);
  EXPECT_GE((*publisher)->frames_sent(), 50);
  EXPECT_EQ((*publisher)->error(), "");
  (*publisher)->Stop();
  std::filesystem::remove(short_clip);
}

// Stop ends a publisher still waiting for its reader at once.
TEST(ClipPublisher, StopInterruptsAWaitForTheReader) {
  PublisherOptions options;
  options.clip = ClipPath("clip.mp4");
  options.url = "tcp://127.0.0.1:" + std::to_string(testing::ClosedTcpPort());
  options.listen = true;
  StatusOr<std::unique_ptr<ClipPublisher>> publisher = ClipPublisher::Start(options);
  ASSERT_TRUE(publisher.ok()) << publisher.status().message();
  std::this_thread::sleep_for(milliseconds(100));
  const auto before = std::chrono::steady_clock::now();
  (*publisher)->Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - before, milliseconds(1000));
  EXPECT_EQ((*publisher)->frames_sent(), 0);
  EXPECT_EQ((*publisher)->error(), "");
}

}  // namespace
}  // namespace mogserve::video
