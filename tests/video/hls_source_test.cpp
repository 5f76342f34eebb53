// HLS, the HTTP source kind the other loopback tests lack: ffmpeg writes the clip as a live HLS
// playlist in real time (1 s segments of 25 frames, each starting at a keyframe), Python's
// http.server serves the folder, and detect-video joins the live playlist at its newest
// segment (live_start_index -1) and follows it to its end.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <thread>

#include "clips.h"
#include "e2e_support.h"
#include "loopback.h"

namespace mogserve::e2e {
namespace {

using std::chrono::milliseconds;
using video::testing::ClipPath;

// Grace Hopper's face in clip frame `frame` (make_clip.sh): x1 = 126 + 4 px a frame for
// t < 8 s, y about 450..565; ±8 px tells neighbouring frames apart.
int HopperFacesAt(const nlohmann::json& faces, int frame) {
  int hopper = 0;
  for (const auto& face : faces) {
    const auto& box = face.at("box");
    const double x1 = box[0], y1 = box[1], y2 = box[3];
    if (std::abs(y1 - 450) < 25 && std::abs(y2 - 565) < 25 &&
        std::abs(x1 - (126 + 4.0 * frame)) <= 8) {
      ++hopper;
    }
  }
  return hopper;
}

TEST(DetectVideoHls, JoinsALivePlaylistAtItsNewestSegmentAndFollowsIt) {
  const TempDir dir;
  ChildProcess writer;
  ASSERT_TRUE(writer.Start(
      MOGSERVE_FFMPEG, {"-nostdin", "-v", "error", "-re", "-i", ClipPath("clip.mp4"), "-c", "copy",
                        "-f", "hls", "-hls_time", "1", "-hls_list_size", "0",
                        "-hls_segment_filename", dir / "seg%03d.ts", dir / "live.m3u8"}))
      << writer.spawn_error();
  const int port = video::testing::ClosedTcpPort();
  ChildProcess http;
  ASSERT_TRUE(http.Start("/usr/bin/python3", {"-m", "http.server", std::to_string(port), "--bind",
                                              "127.0.0.1", "--directory", dir.path().string()}))
      << http.spawn_error();
  // Two segments out: the playlist is live (no end tag) and holds more than one segment.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!(std::filesystem::exists(dir / "seg002.ts") && video::testing::IsListening(port)) &&
         std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(milliseconds(50));
  }
  ASSERT_TRUE(std::filesystem::exists(dir / "seg002.ts"));
  ASSERT_TRUE(video::testing::IsListening(port)) << "http.server does not listen on " << port;

  const ProcessResult r =
      RunMogserve({"detect-video", "--model-dir", TestModelDir(), "-q", "--detect-fps", "5",
                   "http://127.0.0.1:" + std::to_string(port) + "/live.m3u8"});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  const std::vector<nlohmann::json> lines = ParseJsonLines(r.out);
  // How many samples are left to answer depends on when the reader joined (the newest segment
  // once the model is loaded and warm: later on a slower or busier machine) and on the engine's
  // speed, so no count is asserted beyond two; where it joined and that it followed the playlist
  // to its end, answering each sample with its own frame's faces, are.
  ASSERT_GE(lines.size(), 2u) << r.out;
  // Joined at a segment boundary: the reader's frame 0 is clip frame 25 k. Find k from the
  // first line (Grace Hopper's position), then every line must match its own clip frame.
  int offset = -1;
  for (int k = 1; k < 8 && offset < 0; ++k) {
    if (HopperFacesAt(lines.front().at("faces"), 25 * k) == 1) offset = 25 * k;
  }
  ASSERT_GT(offset, 0) << "the first result is not the start of a segment after the first: "
                       << lines.front().dump();
  // Joined at the newest segment, not at the playlist's start (FFmpeg's default: 3 from the end).
  EXPECT_GE(offset, 50) << "joined an old segment";
  int previous = -1;
  for (const nlohmann::json& line : lines) {
    SCOPED_TRACE(line.dump());
    const int frame = line.at("frame");
    EXPECT_GT(frame, previous);
    previous = frame;
    EXPECT_EQ(frame % 5, 0);
    EXPECT_NEAR(line.at("pts").get<double>(), frame / 25.0, 1e-3);
    const int clip_frame = offset + frame;
    if (clip_frame < 200) {
      EXPECT_EQ(HopperFacesAt(line.at("faces"), clip_frame), 1);
    } else {
      EXPECT_EQ(line.at("faces").size(), 0u);
    }
  }
  // Followed to the playlist's end: the last frames of the clip are there.
  EXPECT_GE(offset + lines.back().at("frame").get<int>(), 240);
  writer.Wait(std::chrono::seconds(10));
  http.Signal(SIGTERM);
  http.Wait(std::chrono::seconds(5));
}

}  // namespace
}  // namespace mogserve::e2e
