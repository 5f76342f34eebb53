// `mogserve bench video` end to end: the real binary, the embedded SSD, cameras looping the test
// clip over loopback TCP. Asserts the accounting of each point (every frame sent, decoded and
// submitted ends somewhere, once) and the search's answer, not the machine's speed.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "clips.h"
#include "e2e_support.h"

namespace mogserve::e2e {
namespace {

using video::testing::ClipPath;

// The search's accounting is under test, at the cost of detection alone: the landmark stage
// (its cost per face is docs/BENCHMARKS.md's) is off.
std::vector<std::string> BenchVideoArgs(std::vector<std::string> args) {
  args.insert(args.begin(), {"bench", "video"});
  args.insert(args.end(), {"--", "--model-dir", TestModelDir(), "--landmarks", "model"});
  return args;
}

TEST(BenchVideo, CountsEveryFrameOnceAndFindsTheLargestRealTimeN) {
  const TempDir dir;
  const std::string json = dir / "out.json";
  const ProcessResult r = RunMogserve(
      BenchVideoArgs({"--clip", ClipPath("clip.ts"), "--schedulers", "continuous", "--detect-fps",
                      "5", "--seconds", "4", "--max-streams", "2", "--json", json}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("| continuous | 5 | **"), std::string::npos) << r.out;
  const nlohmann::json report = nlohmann::json::parse(ReadText(json));
  EXPECT_NE(report.at("clip").get<std::string>().find("h264 1280x720, 25 fps"), std::string::npos)
      << report.at("clip");
  ASSERT_EQ(report.at("searches").size(), 1u);
  const nlohmann::json& search = report.at("searches")[0];
  EXPECT_EQ(search.at("scheduler"), "continuous");
  EXPECT_EQ(search.at("detect_fps"), 5.0);
  const nlohmann::json& points = search.at("points");
  ASSERT_GE(points.size(), 1u);
  EXPECT_EQ(points[0].at("streams"), 1);
  int largest_realtime = 0;
  for (const nlohmann::json& p : points) {
    SCOPED_TRACE(p.dump());
    const int streams = p.at("streams").get<int>();
    const int64_t sent = p.at("sent"), decoded = p.at("decoded"), sampled_out = p.at("sampled_out"),
                  submitted = p.at("submitted");
    // 3.2 s measured at 25 fps per camera.
    EXPECT_GT(sent, streams * 60);
    EXPECT_LE(decoded, sent + 3 * streams);
    EXPECT_GE(decoded, sent * 9 / 10) << "decoding a 720p H.264 stream keeps up";
    // 5 of every 25 frames are detected; the rest sampled out.
    EXPECT_NEAR(static_cast<double>(submitted), decoded / 5.0, 3.0 * streams);
    EXPECT_NEAR(static_cast<double>(sampled_out + submitted), static_cast<double>(decoded),
                2.0 * streams);
    EXPECT_EQ(submitted, p.at("in_time").get<int64_t>() + p.at("late").get<int64_t>() +
                             p.at("superseded").get<int64_t>() +
                             p.at("expired_or_failed").get<int64_t>());
    // Frames were answered (in time or late: how many made the deadline is the machine's speed,
    // and a machine busy with other tests may make none).
    EXPECT_GT(p.at("in_time").get<int64_t>() + p.at("late").get<int64_t>(), 0);
    EXPECT_LE(p.at("realtime_streams").get<int>(), streams);
    EXPECT_EQ(p.at("all_realtime").get<bool>(), p.at("realtime_streams").get<int>() == streams);
    EXPECT_EQ(p.at("failure").get<std::string>().empty(), p.at("all_realtime").get<bool>());
    EXPECT_GT(p.at("decode_cpu_ms_per_frame").get<double>(), 0.1) << "the readers' CPU time";
    EXPECT_LT(p.at("decode_cpu_ms_per_frame").get<double>(), 200.0);
    if (p.at("all_realtime").get<bool>()) largest_realtime = std::max(largest_realtime, streams);
  }
  EXPECT_EQ(search.at("max_realtime_streams"), largest_realtime);
}

TEST(BenchVideo, RefusesAMissingOrUnusableClip) {
  ProcessResult r = RunMogserve(BenchVideoArgs({}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--clip is required"), std::string::npos) << r.err;
  r = RunMogserve(BenchVideoArgs({"--clip", ClipPath("audio_only.m4a")}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no video stream"), std::string::npos) << r.err;
  r = RunMogserve(BenchVideoArgs({"--schedulers", "fifo", "--clip", ClipPath("clip.ts")}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--schedulers"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace mogserve::e2e
