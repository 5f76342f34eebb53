// `mogserve serve --stream ID=URL` and /v1/streams end to end: the real server and SSD, streams
// from the test clip and from loopback sockets, added, listed, failing and deleted over HTTP.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clips.h"
#include "image/decode.h"
#include "loopback.h"
#include "rtsp_server.h"
#include "serve_support.h"
#include "support/ws_client.h"

namespace mogserve::e2e {
namespace {

using std::chrono::milliseconds;
using video::testing::ClipPath;

// Polls GET /v1/streams/{id} until `done` holds for its JSON (or 60 s pass); returns the last.
nlohmann::json WaitForStream(httplib::Client& client, const std::string& id,
                             const std::function<bool(const nlohmann::json&)>& done) {
  nlohmann::json last;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < give_up) {
    auto res = client.Get("/v1/streams/" + id);
    if (res && res->status == 200) {
      last = nlohmann::json::parse(res->body);
      if (done(last)) return last;
    }
    std::this_thread::sleep_for(milliseconds(50));
  }
  ADD_FAILURE() << "stream " << id << " never got there: " << last.dump();
  return last;
}

httplib::Result Post(httplib::Client& client, const nlohmann::json& body) {
  return client.Post("/v1/streams", body.dump(), "application/json");
}

TEST(ServeStreams, AddListFailAndDeleteOverHttp) {
  video::testing::SilentListener silent;
  ServeProcess server;
  ASSERT_TRUE(server.Start({"--stream", "cam=" + ClipPath("clip.mp4"), "--stream-open-timeout",
                            "60", "--stream-io-timeout", "60"}));
  ASSERT_TRUE(server.WaitReady()) << server.Log();
  auto client = server.NewClient();
  // Taken after the server's own port (--port 0), which it therefore cannot be: a stream sent
  // to the server itself would wait for an RTSP answer until its open timeout.
  const int closed = video::testing::ClosedTcpPort();

  // --stream's stream: a file plays at its own rate, like a camera, through the SSD.
  const nlohmann::json cam = WaitForStream(
      *client, "cam", [](const nlohmann::json& s) { return s["frames"]["detected"] > 0; });
  EXPECT_EQ(cam["url"], ClipPath("clip.mp4"));
  EXPECT_EQ(cam["state"], "running");
  const int frame = cam["last"]["frame"];
  const int faces = cam["last"]["faces"];  // as detect-video finds on that frame of the clip
  if (frame < 100) {
    EXPECT_EQ(faces, 4) << frame;
  } else if (frame < 200) {
    EXPECT_TRUE(faces == 4 || faces == 5) << frame << ": " << faces;
  } else {
    EXPECT_EQ(faces, 0) << frame;
  }

  // Added at run time: answered before the source is contacted.
  auto added =
      Post(*client, {{"id", "quiet"}, {"url", "tcp://127.0.0.1:" + std::to_string(silent.port())}});
  ASSERT_TRUE(added);
  EXPECT_EQ(added->status, 201) << added->body;
  EXPECT_EQ(nlohmann::json::parse(added->body)["state"], "connecting");
  auto again = Post(*client, {{"id", "quiet"}, {"url", ClipPath("clip.mp4")}});
  EXPECT_EQ(again->status, 409);
  EXPECT_NE(again->body.find("stream_exists"), std::string::npos);
  auto scheme = Post(*client, {{"id", "g"}, {"url", "gopher://u:pw@host/x"}});
  EXPECT_EQ(scheme->status, 400);
  EXPECT_NE(scheme->body.find("unsupported_url"), std::string::npos);
  EXPECT_EQ(scheme->body.find("pw"), std::string::npos);
  EXPECT_EQ(Post(*client, {{"id", "bad id!"}, {"url", "x.mp4"}})->status, 422);
  // Not JSON: 400, as /v1/detect.
  EXPECT_EQ(client->Post("/v1/streams", "not json", "application/json")->status, 400);

  // Failures end in `failed` with the reader's code and message, credentials removed.
  ASSERT_EQ(Post(*client, {{"id", "old"}, {"url", ClipPath("clip_mpeg4.mp4")}})->status, 201);
  const std::string camera = "rtsp://admin:s3cret@127.0.0.1:" + std::to_string(closed) + "/live";
  auto cred = Post(*client, {{"id", "cred"}, {"url", camera}});
  ASSERT_EQ(cred->status, 201);
  EXPECT_EQ(cred->body.find("s3cret"), std::string::npos) << cred->body;
  // What time does not mend fails at once, with no retry loop.
  video::testing::FixedStatusHttpServer locked("401 Unauthorized");
  ASSERT_EQ(Post(*client, {{"id", "locked"},
                           {"url", "http://viewer:hunter2@127.0.0.1:" +
                                       std::to_string(locked.port()) + "/live.ts"}})
                ->status,
            201);
  const std::string noise = ::testing::TempDir() + "/serve_random_bytes";
  {
    std::mt19937 rng(7);
    std::ofstream f(noise, std::ios::binary);
    for (int i = 0; i < 200'000; ++i) f.put(static_cast<char>(rng()));
  }
  ASSERT_EQ(Post(*client, {{"id", "noise"}, {"url", noise}})->status, 201);
  ASSERT_EQ(Post(*client, {{"id", "mute"}, {"url", ClipPath("audio_only.m4a")}})->status, 201);
  auto failed = [](const nlohmann::json& s) { return s["state"] == "failed"; };
  const nlohmann::json old = WaitForStream(*client, "old", failed);
  EXPECT_EQ(old["error"]["code"], "unsupported_codec");
  EXPECT_NE(old["error"]["message"].get<std::string>().find(
                "video codec 'mpeg4' of " + ClipPath("clip_mpeg4.mp4") +
                " is not supported; supported: h264, hevc, mjpeg"),
            std::string::npos)
      << old;
  const nlohmann::json denied = WaitForStream(*client, "locked", failed);
  EXPECT_EQ(denied["error"]["code"], "unauthorized") << denied;
  EXPECT_EQ(denied["url"], "http://***@127.0.0.1:" + std::to_string(locked.port()) + "/live.ts");
  EXPECT_EQ(WaitForStream(*client, "noise", failed)["error"]["code"], "invalid_data");
  EXPECT_EQ(WaitForStream(*client, "mute", failed)["error"]["code"], "no_video_stream");
  // A camera that cannot be reached now may come back: retried, the cause kept.
  const nlohmann::json unreachable = WaitForStream(*client, "cred", [](const nlohmann::json& s) {
    return s["state"] == "reconnecting" && s.contains("last_error");
  });
  EXPECT_EQ(unreachable["last_error"]["code"], "unreachable") << unreachable;
  EXPECT_FALSE(unreachable.contains("error"));
  EXPECT_EQ(unreachable["url"], "rtsp://***@127.0.0.1:" + std::to_string(closed) + "/live");
  EXPECT_EQ(locked.requests(), 1);  // not retried

  // Restart retries a failed stream (once: it fails again, for the same reason).
  auto restarted = client->Post("/v1/streams/locked/restart", "", "application/json");
  ASSERT_TRUE(restarted);
  EXPECT_EQ(restarted->status, 200) << restarted->body;
  EXPECT_EQ(WaitForStream(*client, "locked", failed)["error"]["code"], "unauthorized");
  EXPECT_EQ(locked.requests(), 2);
  EXPECT_EQ(client->Post("/v1/streams/nope/restart", "", "application/json")->status, 404);
  EXPECT_EQ(client->Get("/v1/streams/locked/restart")->status, 405);
  EXPECT_EQ(client->Post("/v1/streams/locked", "{}", "application/json")->status, 405);
  std::filesystem::remove(noise);

  auto list = client->Get("/v1/streams");
  ASSERT_EQ(list->status, 200);
  EXPECT_EQ(list->body.find("s3cret"), std::string::npos);
  EXPECT_EQ(list->body.find("hunter2"), std::string::npos);
  std::vector<std::string> ids;
  const nlohmann::json listed = nlohmann::json::parse(list->body);
  for (const auto& s : listed["streams"]) ids.push_back(s["id"]);
  EXPECT_EQ(ids,
            (std::vector<std::string>{"cam", "cred", "locked", "mute", "noise", "old", "quiet"}));

  // DELETE interrupts the stream blocked on its silent source at once.
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(client->Delete("/v1/streams/quiet")->status, 204);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  EXPECT_EQ(client->Get("/v1/streams/quiet")->status, 404);
  EXPECT_EQ(client->Delete("/v1/streams/quiet")->status, 404);
  auto put = client->Put("/v1/streams", "{}", "application/json");
  EXPECT_EQ(put->status, 405);
  EXPECT_EQ(put->get_header_value("Allow"), "GET, HEAD, POST");

  const ProcessResult stopped = server.Stop();
  EXPECT_EQ(stopped.exit_code, 0) << stopped.Describe();
  // Credentials appear nowhere in the log either.
  EXPECT_EQ(stopped.out.find("s3cret"), std::string::npos);
  EXPECT_EQ(stopped.err.find("s3cret"), std::string::npos);
  EXPECT_EQ(stopped.err.find("hunter2"), std::string::npos);
}

// ffmpeg publishing the clip in a loop at real time, as MPEG-TS on a TCP port of 127.0.0.1 (one
// client, like a camera's stream); killed and started again on the same port.
class LoopingPublisher {
 public:
  explicit LoopingPublisher(int port) : port_(port) {}
  bool Start() {
    child_ = std::make_unique<ChildProcess>();
    const std::vector<std::string> args = {
        "-nostdin",
        "-v",
        "error",
        "-stream_loop",
        "-1",
        "-re",
        "-i",
        ClipPath("clip.mp4"),
        "-c",
        "copy",
        "-f",
        "mpegts",
        "tcp://127.0.0.1:" + std::to_string(port_) + "?listen=1"};
    if (!child_->Start(MOGSERVE_FFMPEG, args)) return false;
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!video::testing::IsListening(port_) && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(milliseconds(20));
    }
    return video::testing::IsListening(port_);
  }
  void Kill() {
    child_->Signal(SIGKILL);
    child_->Wait(std::chrono::seconds(10));
  }
  // Stops sending (the process is stopped); once resumed, -re sends what it owes at once.
  bool Pause() { return child_->Signal(SIGSTOP); }
  bool Resume() { return child_->Signal(SIGCONT); }
  std::string url() const { return "tcp://127.0.0.1:" + std::to_string(port_); }

 private:
  int port_;
  std::unique_ptr<ChildProcess> child_;
};

int64_t Frames(const nlohmann::json& s, const char* stage) {
  return s["frames"][stage].get<int64_t>();
}

// specs/video_streams.md §5: every frame through the decoder is dropped to catch up, sampled
// out or submitted; every submitted one detected, superseded, expired, failed or still in
// flight (at most one queued and one running per stream).
void ExpectIdentities(const nlohmann::json& s) {
  SCOPED_TRACE(s.dump());
  EXPECT_EQ(Frames(s, "decoded"),
            Frames(s, "dropped_catchup") + Frames(s, "sampled_out") + Frames(s, "submitted"));
  const int64_t in_flight = Frames(s, "submitted") - Frames(s, "detected") -
                            Frames(s, "superseded") - Frames(s, "expired") - Frames(s, "failed");
  EXPECT_GE(in_flight, 0);
  EXPECT_LE(in_flight, 2);
  EXPECT_EQ(Frames(s, "failed"), 0);
}

// specs/video_streams.md §4: a live source whose frames come in seconds late (the camera's
// publisher stalls for 3 s, then sends its backlog at once) is caught up by dropping non-key
// packets undecoded until the lag is under 200 ms and the next keyframe comes; then every
// frame is decoded again. The decoder field says what decodes (no GPU here: software, and why).
TEST(ServeStreams, AStreamFallenBehindDropsFramesToCatchUp) {
  const int port = video::testing::ClosedTcpPort();
  LoopingPublisher publisher(port);
  ASSERT_TRUE(publisher.Start());
  ServeProcess server;
  ASSERT_TRUE(server.Start({}));
  ASSERT_TRUE(server.WaitReady()) << server.Log();
  auto client = server.NewClient();
  ASSERT_EQ(Post(*client, {{"id", "cam"}, {"url", publisher.url()}, {"detect_fps", 2}})->status,
            201);
  const nlohmann::json before = WaitForStream(*client, "cam", [](const nlohmann::json& s) {
    return s["state"] == "running" && Frames(s, "detected") >= 2 && Frames(s, "decoded") >= 50;
  });
  EXPECT_EQ(Frames(before, "dropped_catchup"), 0) << before;
  const std::string decoder = before["decoder"];
  EXPECT_TRUE(decoder == "h264 (cuda)" ||
              decoder.rfind("h264 (software; cuda unavailable: ", 0) == 0)
      << decoder;

  ASSERT_TRUE(publisher.Pause());
  std::this_thread::sleep_for(milliseconds(3000));
  ASSERT_TRUE(publisher.Resume());
  const auto resumed = std::chrono::steady_clock::now();
  const nlohmann::json caught_up = WaitForStream(*client, "cam", [&](const nlohmann::json& s) {
    return Frames(s, "dropped_catchup") > 0 &&
           Frames(s, "decoded") >= Frames(before, "decoded") + 4 * 25;
  });
  // About 3 s of frames (75) minus a keyframe a second were dropped, not decoded.
  EXPECT_GT(Frames(caught_up, "dropped_catchup"), 25) << caught_up;
  EXPECT_LT(Frames(caught_up, "dropped_catchup"), 100) << caught_up;
  EXPECT_EQ(caught_up["state"], "running");
  EXPECT_EQ(caught_up["reconnects"], 0);
  ExpectIdentities(caught_up);
  // Caught up: the lag is back under 200 ms and stays there; nothing more is dropped.
  std::this_thread::sleep_for(milliseconds(1000));
  auto got = client->Get("/v1/streams/cam");
  ASSERT_TRUE(got);
  const nlohmann::json after = nlohmann::json::parse(got->body);
  EXPECT_LT(after["lag_ms"].get<double>(), 200) << after;
  EXPECT_EQ(Frames(after, "dropped_catchup"), Frames(caught_up, "dropped_catchup")) << after;
  EXPECT_GT(Frames(after, "detected"), Frames(before, "detected"));
  ExpectIdentities(after);
  EXPECT_LT(std::chrono::steady_clock::now() - resumed, std::chrono::seconds(20));
  std::printf("3 s stall: %lld frames dropped to catch up, lag then %.1f ms, decoder %s\n",
              static_cast<long long>(Frames(after, "dropped_catchup")),
              after["lag_ms"].get<double>(), decoder.c_str());

  auto metrics = client->Get("/metrics");
  ASSERT_EQ(metrics->status, 200);
  EXPECT_GE(MetricValue(ParseMetrics(metrics->body),
                        "mogserve_stream_frames_total{stream=\"cam\",stage=\"dropped_catchup\"}"),
            Frames(caught_up, "dropped_catchup"));
  const ProcessResult stopped = server.Stop();
  EXPECT_EQ(stopped.exit_code, 0) << stopped.Describe();
}

TEST(ServeStreams, ALostSourceReconnectsWhileAnotherStreamRunsOn) {
  const int port_a = video::testing::ClosedTcpPort();
  int port_b = video::testing::ClosedTcpPort();
  while (port_b == port_a) port_b = video::testing::ClosedTcpPort();
  LoopingPublisher a(port_a), b(port_b);
  ASSERT_TRUE(a.Start());
  ASSERT_TRUE(b.Start());
  ServeProcess server;
  ASSERT_TRUE(server.Start({}));
  ASSERT_TRUE(server.WaitReady()) << server.Log();
  auto client = server.NewClient();
  // 2 fps each: a loaded 2-core test machine keeps up.
  ASSERT_EQ(Post(*client, {{"id", "a"}, {"url", a.url()}, {"detect_fps", 2}})->status, 201);
  ASSERT_EQ(Post(*client, {{"id", "b"}, {"url", b.url()}, {"detect_fps", 2}})->status, 201);
  auto detecting = [](const nlohmann::json& s) {
    return s["state"] == "running" && Frames(s, "detected") >= 3;
  };
  WaitForStream(*client, "a", detecting);
  const nlohmann::json b_before = WaitForStream(*client, "b", detecting);
  const auto outage_start = std::chrono::steady_clock::now();

  // The source dies: the stream notices at once (EOF), keeps the cause and retries.
  a.Kill();
  const nlohmann::json lost = WaitForStream(
      *client, "a", [](const nlohmann::json& s) { return s["state"] == "reconnecting"; });
  EXPECT_LT(std::chrono::steady_clock::now() - outage_start, std::chrono::seconds(3));
  EXPECT_TRUE(lost.contains("last_error")) << lost;
  std::this_thread::sleep_for(milliseconds(1500));  // refused meanwhile: unreachable
  auto got = client->Get("/v1/streams/a");
  ASSERT_TRUE(got);
  const nlohmann::json down = nlohmann::json::parse(got->body);
  EXPECT_EQ(down["state"], "reconnecting") << down;
  EXPECT_EQ(down["last_error"]["code"], "unreachable") << down;

  // It comes back: running again, one reconnect, detecting again.
  ASSERT_TRUE(a.Start());
  const int64_t detected_down = Frames(down, "detected");
  const nlohmann::json back = WaitForStream(*client, "a", [&](const nlohmann::json& s) {
    return s["state"] == "running" && Frames(s, "detected") >= detected_down + 3;
  });
  EXPECT_EQ(back["reconnects"], 1) << back;
  const nlohmann::json b_after =
      WaitForStream(*client, "b", [](const nlohmann::json&) { return true; });
  const double outage_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - outage_start).count();

  // The other stream ran on at its rate, never interrupted.
  EXPECT_EQ(b_after["state"], "running");
  EXPECT_EQ(b_after["reconnects"], 0);
  EXPECT_FALSE(b_after.contains("last_error"));
  // Its frames kept coming and going to the engine at 2 fps (what the engine then made of them
  // depends on the machine's load: detected, or superseded by the next).
  const double b_rate =
      static_cast<double>(Frames(b_after, "submitted") - Frames(b_before, "submitted")) / outage_s;
  EXPECT_GT(b_rate, 2 * 0.75) << "b submitted " << b_rate << " fps while a was down";
  EXPECT_LT(b_rate, 2 * 1.25);
  EXPECT_GT(Frames(b_after, "detected"), Frames(b_before, "detected"));

  // Live stats: 25 fps received and decoded, 2 sampled, latency percentiles ordered.
  for (const nlohmann::json& s : {back, b_after}) {
    SCOPED_TRACE(s.dump());
    ExpectIdentities(s);
    EXPECT_EQ(s["codec"], "h264");
    EXPECT_EQ(s["width"], 1280);
    EXPECT_EQ(s["height"], 720);
    EXPECT_GE(Frames(s, "received"), Frames(s, "decoded"));
  }
  const nlohmann::json& f = b_after["fps"];
  EXPECT_NEAR(f["decoded"].get<double>(), 25, 4) << b_after;
  EXPECT_NEAR(f["received"].get<double>(), 25, 4) << b_after;
  EXPECT_NEAR(
      f["detected"].get<double>() + f["superseded"].get<double>() + f["expired"].get<double>(), 2,
      0.8)
      << b_after;
  EXPECT_NEAR(f["sampled_out"].get<double>(), 23, 4) << b_after;
  const nlohmann::json& l = b_after["latency_ms"];
  EXPECT_GT(l["p50"].get<double>(), 0);
  EXPECT_LE(l["p50"].get<double>(), l["p95"].get<double>());
  EXPECT_LE(l["p95"].get<double>(), l["p99"].get<double>());
  EXPECT_LT(l["p99"].get<double>(), 2000);  // run within the 1 s frame timeout
  EXPECT_LT(std::abs(b_after["lag_ms"].get<double>()), 2000);

  // The same in Prometheus, one series per stream.
  auto metrics = client->Get("/metrics");
  ASSERT_EQ(metrics->status, 200);
  const auto m = ParseMetrics(metrics->body);
  EXPECT_EQ(MetricValue(m, "mogserve_stream_reconnects_total{stream=\"a\"}"), 1);
  EXPECT_EQ(MetricValue(m, "mogserve_stream_reconnects_total{stream=\"b\"}"), 0);
  EXPECT_EQ(MetricValue(m, "mogserve_stream_up{stream=\"a\"}"), 1);
  EXPECT_GE(MetricValue(m, "mogserve_stream_frames_total{stream=\"b\",stage=\"detected\"}"),
            Frames(b_after, "detected"));
  EXPECT_GT(MetricValue(m, "mogserve_stream_latency_seconds{stream=\"b\",quantile=\"0.5\"}"), 0);
  const double decoded =
      MetricValue(m, "mogserve_stream_frames_total{stream=\"a\",stage=\"decoded\"}");
  const double sampled_out =
      MetricValue(m, "mogserve_stream_frames_total{stream=\"a\",stage=\"sampled_out\"}");
  const double submitted =
      MetricValue(m, "mogserve_stream_frames_total{stream=\"a\",stage=\"submitted\"}");
  EXPECT_EQ(decoded, sampled_out + submitted);

  // SIGTERM with live streams: a clean exit.
  const ProcessResult stopped = server.Stop();
  EXPECT_EQ(stopped.exit_code, 0) << stopped.Describe();
  EXPECT_NE((stopped.out + stopped.err).find("stream a: "), std::string::npos);
  a.Kill();
  b.Kill();
}

// specs/video_streams.md §7: a real RTSP server (GstRtspServer) killed 3 s into its clip: the
// stream sees the end of its session at once and retries; the server started again, the stream
// runs again after one reconnect. A second stream from another source runs on meanwhile.
TEST(ServeStreams, AKilledRtspServerIsReconnectedWhileAnotherStreamRunsOn) {
  const int rtsp_port = video::testing::ClosedTcpPort();
  int other_port = video::testing::ClosedTcpPort();
  while (other_port == rtsp_port) other_port = video::testing::ClosedTcpPort();
  video::testing::RtspServer rtsp(ClipPath("clip.mp4"), rtsp_port);
  MOGSERVE_START_RTSP_SERVER(rtsp);
  LoopingPublisher other(other_port);
  ASSERT_TRUE(other.Start());
  ServeProcess server;
  ASSERT_TRUE(server.Start({}));
  ASSERT_TRUE(server.WaitReady()) << server.Log();
  auto client = server.NewClient();
  ASSERT_EQ(Post(*client, {{"id", "cam"}, {"url", rtsp.url()}, {"detect_fps", 2}})->status, 201);
  ASSERT_EQ(Post(*client, {{"id", "other"}, {"url", other.url()}, {"detect_fps", 2}})->status, 201);
  // 3 s into the clip (the RTSP server plays it from its start to each new client).
  const nlohmann::json playing = WaitForStream(*client, "cam", [](const nlohmann::json& s) {
    return s["state"] == "running" && Frames(s, "decoded") >= 75;
  });
  EXPECT_EQ(playing["codec"], "h264");
  EXPECT_GT(Frames(playing, "detected"), 0);
  const nlohmann::json other_before = WaitForStream(
      *client, "other", [](const nlohmann::json& s) { return Frames(s, "detected") >= 3; });

  rtsp.Kill();
  const auto killed = std::chrono::steady_clock::now();
  const nlohmann::json lost = WaitForStream(
      *client, "cam", [](const nlohmann::json& s) { return s["state"] == "reconnecting"; });
  EXPECT_LT(std::chrono::steady_clock::now() - killed, std::chrono::seconds(1)) << lost;
  EXPECT_TRUE(lost.contains("last_error")) << lost;
  std::this_thread::sleep_for(milliseconds(1500));  // retried meanwhile: refused
  auto got = client->Get("/v1/streams/cam");
  ASSERT_TRUE(got);
  const nlohmann::json down = nlohmann::json::parse(got->body);
  EXPECT_EQ(down["state"], "reconnecting") << down;
  EXPECT_EQ(down["last_error"]["code"], "unreachable") << down;

  MOGSERVE_START_RTSP_SERVER(rtsp);
  const int64_t detected_down = Frames(down, "detected");
  const nlohmann::json back = WaitForStream(*client, "cam", [&](const nlohmann::json& s) {
    return s["state"] == "running" && Frames(s, "detected") >= detected_down + 3;
  });
  EXPECT_EQ(back["reconnects"], 1) << back;
  const double outage_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  const nlohmann::json other_after =
      WaitForStream(*client, "other", [](const nlohmann::json&) { return true; });

  // The other stream was never interrupted: its frames kept going to the engine at 2 fps.
  EXPECT_EQ(other_after["state"], "running");
  EXPECT_EQ(other_after["reconnects"], 0);
  EXPECT_FALSE(other_after.contains("last_error")) << other_after;
  const double rate =
      static_cast<double>(Frames(other_after, "submitted") - Frames(other_before, "submitted")) /
      outage_s;
  EXPECT_GT(rate, 2 * 0.75) << "other submitted " << rate << " fps while cam was down";
  EXPECT_LT(rate, 2 * 1.25);
  EXPECT_GT(Frames(other_after, "detected"), Frames(other_before, "detected"));
  for (const nlohmann::json& s : {back, other_after}) ExpectIdentities(s);

  const ProcessResult stopped = server.Stop();
  EXPECT_EQ(stopped.exit_code, 0) << stopped.Describe();
  rtsp.Kill();
  other.Kill();
}

// Reads a streamed answer until `enough` holds for what arrived (or 60 s pass); what arrived.
std::string ReadStream(ServeProcess& server, const std::string& path,
                       const std::function<bool(const std::string&)>& enough,
                       std::string* content_type = nullptr) {
  auto client = server.NewClient();
  std::string body;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  auto res = client->Get(
      path,
      [&](const httplib::Response& r) {
        if (content_type != nullptr) *content_type = r.get_header_value("Content-Type");
        return r.status == 200;
      },
      [&](const char* data, size_t n) {
        body.append(data, n);
        return !enough(body) && std::chrono::steady_clock::now() < give_up;
      });
  EXPECT_TRUE(enough(body)) << path << " gave: " << body.substr(0, 2000);
  return body;
}

struct SseEvent {
  std::string event;
  nlohmann::json data;
};

std::vector<SseEvent> ParseSse(const std::string& text) {
  std::vector<SseEvent> events;
  size_t start = 0;
  for (size_t end; (end = text.find("\n\n", start)) != std::string::npos; start = end + 2) {
    const std::string block = text.substr(start, end - start);
    SseEvent e;
    std::istringstream lines(block);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("event: ", 0) == 0) e.event = line.substr(7);
      if (line.rfind("data: ", 0) == 0) e.data = nlohmann::json::parse(line.substr(6));
    }
    if (!e.event.empty()) events.push_back(std::move(e));
  }
  return events;
}

int CountEvents(const std::string& text, const std::string& event, const std::string& stream) {
  int n = 0;
  for (const SseEvent& e : ParseSse(text)) n += e.event == event && e.data["stream"] == stream;
  return n;
}

// The clip's faces at the SSD's threshold (detect_video_test.cpp): 4 on frames 0-99, 4 or 5 on
// 100-199, none after; at 3 fps the first frame of each third of a second (0, 9, 17, 25, ...).
void ExpectClipFaces(const nlohmann::json& line) {
  const int frame = line["frame"];
  const size_t faces = line["faces"].size();
  const int slot = static_cast<int>(line["pts"].get<double>() * 3 + 1e-6);
  EXPECT_EQ(frame, (slot * 25 + 2) / 3) << line;
  EXPECT_EQ(line["width"], 1280);
  const int in_clip = frame % 250;  // the publisher loops the clip
  if (in_clip < 100) {
    EXPECT_EQ(faces, 4u) << line;
  } else if (in_clip < 200) {
    EXPECT_TRUE(faces == 4u || faces == 5u) << line;
  } else {
    EXPECT_EQ(faces, 0u) << line;
  }
}

// A watcher that connects, asks, and never reads a byte.
class IdleWatcher {
 public:
  IdleWatcher(int port, const std::string& path) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    ok_ = connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    const std::string request = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    ok_ = ok_ && write(fd_, request.data(), request.size()) == static_cast<ssize_t>(request.size());
  }
  ~IdleWatcher() { close(fd_); }
  bool ok() const { return ok_; }

 private:
  int fd_ = -1;
  bool ok_ = false;
};

TEST(ServeStreams, ResultsArePushedToWatchersOverHttp) {
  const int port_a = video::testing::ClosedTcpPort();
  int port_b = video::testing::ClosedTcpPort();
  while (port_b == port_a) port_b = video::testing::ClosedTcpPort();
  LoopingPublisher a(port_a), b(port_b);
  ASSERT_TRUE(a.Start());
  ASSERT_TRUE(b.Start());
  ServeProcess server;
  ASSERT_TRUE(server.Start({"--max-stream-subscribers", "4"}));
  ASSERT_TRUE(server.WaitReady()) << server.Log();
  auto client = server.NewClient();
  EXPECT_EQ(client->Get("/v1/streams/cam1/snapshot.jpg")->status, 404);
  ASSERT_EQ(Post(*client, {{"id", "cam1"}, {"url", a.url()}, {"detect_fps", 3}})->status, 201);
  ASSERT_EQ(Post(*client, {{"id", "cam2"}, {"url", b.url()}, {"detect_fps", 3}})->status, 201);
  EXPECT_EQ(Post(*client, {{"id", "events"}, {"url", a.url()}})->status, 422);  // reserved

  // Two watchers that never read: they cost the streams nothing.
  IdleWatcher idle_sse(server.port(), "/v1/streams/events");
  IdleWatcher idle_mjpeg(server.port(), "/v1/streams/cam1/mjpeg?fps=30");
  ASSERT_TRUE(idle_sse.ok() && idle_mjpeg.ok());

  // Server-Sent Events of both streams on one connection.
  std::string type;
  const std::string sse = ReadStream(
      server, "/v1/streams/events?ids=cam1,cam2",
      [](const std::string& text) {
        return CountEvents(text, "frame", "cam1") >= 6 && CountEvents(text, "frame", "cam2") >= 6;
      },
      &type);
  EXPECT_EQ(type, "text/event-stream");
  const std::vector<SseEvent> events = ParseSse(sse);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events[0].event, "state") << sse.substr(0, 500);
  std::map<std::string, int> previous = {{"cam1", -1}, {"cam2", -1}};
  for (const SseEvent& e : events) {
    if (e.event != "frame") continue;
    SCOPED_TRACE(e.data.dump());
    ExpectClipFaces(e.data);
    if (e.data["seq"] > 0) {
      EXPECT_GT(e.data["frame"].get<int>(), previous[e.data["stream"]]);  // in order
    }
    previous[e.data["stream"]] = e.data["frame"];
  }
  // Each stream's faces appeared (4 faces held for 3 results), once.
  EXPECT_EQ(CountEvents(sse, "faces", "cam1") + CountEvents(sse, "faces", "cam2"), 2) << sse;

  // One stream's lines, chunked NDJSON.
  const std::string lines = ReadStream(
      server, "/v1/streams/cam2/results",
      [](const std::string& t) { return std::count(t.begin(), t.end(), '\n') >= 3; }, &type);
  EXPECT_EQ(type, "application/x-ndjson");
  for (const nlohmann::json& line : ParseJsonLines(lines.substr(0, lines.rfind('\n') + 1))) {
    EXPECT_EQ(line["stream"], "cam2");
    ExpectClipFaces(line);
  }

  // The latest detected frame, with and without its boxes.
  auto boxed = client->Get("/v1/streams/cam1/snapshot.jpg");
  ASSERT_EQ(boxed->status, 200) << boxed->body;
  EXPECT_EQ(boxed->get_header_value("Content-Type"), "image/jpeg");
  auto plain = client->Get("/v1/streams/cam1/snapshot.jpg?boxes=0");
  ASSERT_EQ(plain->status, 200);
  auto green_pixels = [](const std::string& jpeg) {
    auto decoded = image::Decode(
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(jpeg.data()), jpeg.size()));
    EXPECT_TRUE(decoded.ok());
    if (!decoded.ok()) return -1;
    EXPECT_EQ(decoded->width, 640);
    EXPECT_EQ(decoded->height, 360);
    int n = 0;
    const image::Image& img = decoded->image;
    for (int y = 0; y < img.height; ++y) {
      for (int x = 0; x < img.width; ++x) {
        const uint8_t* p = img.pixel(x, y);
        n += p[1] > 200 && p[0] < 90 && p[2] < 90;
      }
    }
    return n;
  };
  const int frame = std::stoi(boxed->get_header_value("X-Frame"));
  if (frame < 200) {  // faces on it: their outlines are green
    EXPECT_GT(green_pixels(boxed->body), 200 + green_pixels(plain->body)) << frame;
  }

  // MJPEG while watched.
  const std::string mjpeg = ReadStream(
      server, "/v1/streams/cam1/mjpeg?fps=5&boxes=1",
      [](const std::string& t) {
        size_t n = 0;
        for (size_t at = t.find("--mogserveframe\r\n"); at != std::string::npos;
             at = t.find("--mogserveframe\r\n", at + 1)) {
          ++n;
        }
        return n >= 3;
      },
      &type);
  EXPECT_EQ(type, "multipart/x-mixed-replace; boundary=mogserveframe");
  EXPECT_NE(mjpeg.find("Content-Type: image/jpeg\r\nContent-Length: "), std::string::npos);
  EXPECT_NE(mjpeg.find("\xff\xd8"), std::string::npos);

  EXPECT_EQ(client->Get("/v1/streams/nope/results")->status, 404);
  EXPECT_EQ(client->Get("/v1/streams/nope/snapshot.jpg")->status, 404);
  EXPECT_EQ(client->Get("/v1/streams/cam1/mjpeg?fps=0")->status, 422);

  // A deleted stream tells its watchers.
  std::string removal;
  std::this_thread::sleep_for(milliseconds(1000));  // the watchers above are let go
  std::thread watcher([&] {
    removal = ReadStream(server, "/v1/streams/events?ids=cam2", [](const std::string& t) {
      return t.find("event: removed") != std::string::npos;
    });
  });
  WaitForStream(*client, "cam2", [&](const nlohmann::json& s) {
    return s["frames"]["detected"] > 0;  // and the watcher has had time to subscribe
  });
  std::this_thread::sleep_for(milliseconds(1000));
  EXPECT_EQ(client->Delete("/v1/streams/cam2")->status, 204);
  watcher.join();
  EXPECT_EQ(CountEvents(removal, "removed", "cam2"), 1) << removal;

  // At most --max-stream-subscribers watchers: the idle two and two more, then 503.
  IdleWatcher third(server.port(), "/v1/streams/cam1/results");
  IdleWatcher fourth(server.port(), "/v1/streams/events");
  ASSERT_TRUE(third.ok() && fourth.ok());
  for (int i = 0;; ++i) {  // the watchers above are taken, the earlier ones let go, meanwhile
    int status = 0;
    std::string body;
    client->Get(
        "/v1/streams/cam1/results",
        [&](const httplib::Response& r) {
          status = r.status;
          return r.status != 200;  // a stream answer: let go at once
        },
        [&](const char* data, size_t n) {
          body.append(data, n);
          return true;
        });
    if (status == 503) {
      EXPECT_NE(body.find("too_many_subscribers"), std::string::npos) << body;
      break;
    }
    ASSERT_LT(i, 200) << "never refused";
    std::this_thread::sleep_for(milliseconds(100));
  }
  EXPECT_EQ(client->Get("/v1/streams/cam1/snapshot.jpg")->status, 200);  // not a watcher

  // The idle watchers did not hold the streams back.
  const nlohmann::json cam1 =
      WaitForStream(*client, "cam1", [](const nlohmann::json&) { return true; });
  EXPECT_EQ(cam1["state"], "running");
  EXPECT_NEAR(cam1["fps"]["decoded"].get<double>(), 25, 4) << cam1;
  const ProcessResult stopped = server.Stop();  // with watchers connected
  EXPECT_EQ(stopped.exit_code, 0) << stopped.Describe();
  a.Kill();
  b.Kill();
}

// specs/video_streams.md §7: an encoder pushing RTSP (ANNOUNCE/RECORD, ffmpeg -f rtsp) into a
// `listen` stream: the clip's faces on its frames; when the encoder is done the stream listens
// again; DELETE ends the wait at once.
TEST(ServeStreams, AnRtspPushIntoAListeningStreamGivesTheClipsFaces) {
  const int port = video::testing::ClosedTcpPort();
  ServeProcess server;
  ASSERT_TRUE(server.Start({}));
  ASSERT_TRUE(server.WaitReady()) << server.Log();
  auto client = server.NewClient();
  const std::string url = "rtsp://127.0.0.1:" + std::to_string(port) + "/live";
  auto added = Post(*client, {{"id", "push"}, {"url", url}, {"listen", true}, {"detect_fps", 3}});
  ASSERT_EQ(added->status, 201) << added->body;
  EXPECT_EQ(nlohmann::json::parse(added->body)["listen"], true);
  auto file = Post(*client, {{"id", "f"}, {"url", ClipPath("clip.mp4")}, {"listen", true}});
  EXPECT_EQ(file->status, 422);
  EXPECT_NE(file->body.find("listen is for rtsp://, rtmp:// and tcp:// URLs"), std::string::npos)
      << file->body;
  auto listens = [port] {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!video::testing::IsListening(port) && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(milliseconds(20));
    }
    return video::testing::IsListening(port);
  };
  ASSERT_TRUE(listens()) << "the stream does not listen on " << port;

  ChildProcess encoder;
  ASSERT_TRUE(
      encoder.Start(MOGSERVE_FFMPEG, {"-nostdin", "-v", "error", "-re", "-i", ClipPath("clip.mp4"),
                                      "-c", "copy", "-f", "rtsp", "-rtsp_transport", "tcp", url}));
  const std::string text = ReadStream(server, "/v1/streams/push/results", [](const std::string& t) {
    return std::count(t.begin(), t.end(), '\n') >= 6;
  });
  int previous = -1;
  for (const nlohmann::json& line : ParseJsonLines(text.substr(0, text.rfind('\n') + 1))) {
    SCOPED_TRACE(line.dump());
    const int frame = line["frame"];
    const size_t faces = line["faces"].size();
    EXPECT_GT(frame, previous);
    previous = frame;
    EXPECT_EQ(line["width"], 1280);
    if (frame < 100) {
      EXPECT_EQ(faces, 4u);
    } else if (frame < 200) {
      EXPECT_TRUE(faces == 4u || faces == 5u);
    } else {
      EXPECT_EQ(faces, 0u);
    }
  }
  const ProcessResult pushed = encoder.Wait(std::chrono::seconds(30));
  EXPECT_EQ(pushed.exit_code, 0) << pushed.Describe();
  const nlohmann::json after = WaitForStream(
      *client, "push", [](const nlohmann::json& s) { return Frames(s, "detected") >= 20; });
  EXPECT_EQ(after["codec"], "h264");

  // The encoder is done: the stream listens for the next one.
  ASSERT_TRUE(listens()) << "the stream does not listen again";
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(client->Delete("/v1/streams/push")->status, 204);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  const ProcessResult stopped = server.Stop();
  EXPECT_EQ(stopped.exit_code, 0) << stopped.Describe();
}

// GET /v1/streams/ws: the SSE events as WebSocket messages {"event","data"}, over real sockets
// (support/ws_client.h, written from RFC 6455), filtered by ?ids, the watcher cap shared.
TEST(ServeStreams, StreamsWebSocketCarriesTheEvents) {
  const int port_a = video::testing::ClosedTcpPort();
  int port_b = video::testing::ClosedTcpPort();
  while (port_b == port_a) port_b = video::testing::ClosedTcpPort();
  LoopingPublisher a(port_a), b(port_b);
  ASSERT_TRUE(a.Start());
  ASSERT_TRUE(b.Start());
  ServeProcess server;
  ASSERT_TRUE(server.Start({"--max-stream-subscribers", "3"}));
  ASSERT_TRUE(server.WaitReady()) << server.Log();
  auto client = server.NewClient();
  ASSERT_EQ(Post(*client, {{"id", "cam1"}, {"url", a.url()}, {"detect_fps", 3}})->status, 201);
  ASSERT_EQ(Post(*client, {{"id", "cam2"}, {"url", b.url()}, {"detect_fps", 3}})->status, 201);

  // Without the upgrade: 426, as /v1/detect/ws.
  auto plain = client->Get("/v1/streams/ws");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->status, 426) << plain->body;

  // One stream's events: its state first, then its frames (each its own frame's faces, in
  // order, none dropped for a reader that keeps up) and its faces appearing, once.
  WsClient one(server.port(), "/v1/streams/ws?ids=cam1");
  ASSERT_EQ(one.handshake_status(), 101);
  const nlohmann::json hello = one.Read();
  EXPECT_EQ(hello["event"], "state") << hello;
  EXPECT_EQ(hello["data"]["stream"], "cam1") << hello;
  int frames = 0, faces_events = 0, previous = -1;
  while (frames < 6) {
    const std::optional<nlohmann::json> m = one.TryRead(std::chrono::seconds(30));
    ASSERT_TRUE(m.has_value()) << "after " << frames << " frame events";
    const nlohmann::json& data = (*m)["data"];
    EXPECT_EQ(data["stream"], "cam1") << *m;
    if ((*m)["event"] == "frame") {
      SCOPED_TRACE(m->dump());
      EXPECT_EQ((*m)["dropped"], 0);
      ExpectClipFaces(data);
      EXPECT_GT(data["frame"].get<int>(), previous);
      previous = data["frame"];
      ++frames;
    } else if ((*m)["event"] == "faces") {
      EXPECT_EQ(data["event"], "faces_present") << *m;
      ++faces_events;
    } else {
      EXPECT_EQ((*m)["event"], "state") << *m;
    }
  }
  EXPECT_LE(faces_events, 1);

  // Every stream's, on another socket.
  std::map<std::string, int> frames_of;
  {
    WsClient all(server.port(), "/v1/streams/ws");
    ASSERT_EQ(all.handshake_status(), 101);
    std::set<std::string> states;  // before the first frame event
    bool framed = false;
    while (frames_of["cam1"] < 3 || frames_of["cam2"] < 3) {
      const std::optional<nlohmann::json> m = all.TryRead(std::chrono::seconds(30));
      ASSERT_TRUE(m.has_value());
      const std::string stream = (*m)["data"]["stream"];
      if ((*m)["event"] == "state" && !framed) states.insert(stream);
      if ((*m)["event"] == "frame") {
        framed = true;
        ExpectClipFaces((*m)["data"]);
        ++frames_of[stream];
      }
    }
    EXPECT_EQ(states, (std::set<std::string>{"cam1", "cam2"}));

    // The cap is shared with the streamed watchers: two sockets and an SSE reader fill it.
    IdleWatcher sse(server.port(), "/v1/streams/events");
    ASSERT_TRUE(sse.ok());
    std::this_thread::sleep_for(milliseconds(500));
    WsClient refused(server.port(), "/v1/streams/ws");
    EXPECT_EQ(refused.handshake_status(), 503);
  }
  // A socket that closed frees its place (within the events' 250 ms tick).
  for (int i = 0;; ++i) {
    WsClient again(server.port(), "/v1/streams/ws?ids=cam2");
    if (again.handshake_status() == 101) {
      EXPECT_EQ(again.Read()["event"], "state");
      break;
    }
    EXPECT_EQ(again.handshake_status(), 503);
    ASSERT_LT(i, 50) << "the closed socket's place was never freed";
    std::this_thread::sleep_for(milliseconds(100));
  }

  // A deleted stream's watchers are told.
  EXPECT_EQ(client->Delete("/v1/streams/cam1")->status, 204);
  for (;;) {
    const std::optional<nlohmann::json> m = one.TryRead(std::chrono::seconds(10));
    ASSERT_TRUE(m.has_value()) << "no removed event";
    if ((*m)["event"] == "removed") {
      EXPECT_EQ((*m)["data"]["stream"], "cam1");
      break;
    }
  }
  // SIGTERM with the socket open: the server closes it (the client answers the close, as a
  // browser does) and exits at once.
  const auto stopping = std::chrono::steady_clock::now();
  ProcessResult stopped;
  std::thread stopper([&] { stopped = server.Stop(); });
  while (one.TryRead(std::chrono::seconds(20)).has_value()) {
  }
  stopper.join();
  EXPECT_EQ(stopped.exit_code, 0) << stopped.Describe();
  EXPECT_LT(std::chrono::steady_clock::now() - stopping, std::chrono::seconds(5))
      << stopped.Describe();
  a.Kill();
  b.Kill();
}

// serve --streams-file: the streams to start with, as POST /v1/streams takes them.
TEST(ServeStreams, StreamsFileStartsItsStreams) {
  TempDir dir;
  const std::filesystem::path file = dir.path() / "streams.json";
  std::ofstream(file)
      << nlohmann::json::array(
             {{{"id", "cam"}, {"url", ClipPath("clip.mp4")}, {"detect_fps", 5}, {"track", true}},
              {{"id", "hevc"}, {"url", ClipPath("clip_hevc.mp4")}, {"detect_fps", 1}}})
             .dump(2);
  ServeProcess server;
  ASSERT_TRUE(
      server.Start({"--streams-file", file.string(), "--stream", "flag=" + ClipPath("clip.mp4")}));
  ASSERT_TRUE(server.WaitReady()) << server.Log();
  auto client = server.NewClient();
  // With track: the stream follows its faces (the clip's first frames hold four).
  const nlohmann::json cam = WaitForStream(*client, "cam", [](const nlohmann::json& s) {
    return s.contains("tracks") && s["tracks"]["started"].get<int>() >= 4;
  });
  EXPECT_EQ(cam["detect_fps"], 5);
  EXPECT_EQ(cam["track"], true);
  EXPECT_EQ(cam["every_frame"], false);
  EXPECT_EQ(cam["url"], ClipPath("clip.mp4"));
  const nlohmann::json hevc = WaitForStream(
      *client, "hevc", [](const nlohmann::json& s) { return Frames(s, "decoded") > 0; });
  EXPECT_EQ(hevc["detect_fps"], 1);
  EXPECT_FALSE(hevc.contains("tracks")) << hevc.dump();
  EXPECT_EQ(hevc["codec"], "hevc");
  EXPECT_EQ(
      WaitForStream(*client, "flag", [](const nlohmann::json&) { return true; })["detect_fps"], 0);
  std::vector<std::string> ids;
  const nlohmann::json listed = nlohmann::json::parse(client->Get("/v1/streams")->body);
  for (const auto& s : listed["streams"]) ids.push_back(s["id"]);
  EXPECT_EQ(ids, (std::vector<std::string>{"cam", "flag", "hevc"}));
  // POST /v1/streams takes the same fields, no others.
  auto unknown =
      Post(*client, {{"id", "x"}, {"url", ClipPath("clip.mp4")}, {"rtsp_transport", "udp"}});
  EXPECT_EQ(unknown->status, 422);
  EXPECT_NE(unknown->body.find("unknown field 'rtsp_transport'; a stream takes id, url, "
                               "detect_fps, listen, track and every_frame"),
            std::string::npos)
      << unknown->body;
  const ProcessResult stopped = server.Stop();
  EXPECT_EQ(stopped.exit_code, 0) << stopped.Describe();
}

TEST(ServeStreams, AMalformedStreamsFileIsAUsageError) {
  TempDir dir;
  const std::string clip = ClipPath("clip.mp4");
  const std::string path = (dir.path() / "streams.json").string();
  // Each file's content and the message it gets.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"[{\"id\": \"a\",", path + ": not valid JSON"},
      {"{\"id\": \"a\"}", path + ": expected a JSON array of streams"},
      {"[{\"id\": \"a\", \"url\": \"" + clip + "\"}, {\"id\": \"b\"}]",
       path + ": entry 1 ('b'): field 'url' is missing (a string)"},
      {"[{\"id\": \"a\", \"url\": \"" + clip + "\", \"detect_fps\": \"fast\"}]",
       "entry 0 ('a'): field 'detect_fps' must be a number >= 0 (0: every frame), got string"},
      {"[{\"id\": \"a\", \"url\": \"" + clip + "\", \"detect_fps\": -1}]",
       "entry 0 ('a'): field 'detect_fps' must be >= 0"},
      {"[{\"id\": \"a\", \"url\": \"" + clip + "\", \"loop\": true}]",
       "entry 0 ('a'): unknown field 'loop'; a stream takes id, url, detect_fps, listen, track "
       "and every_frame"},
      {"[{\"id\": \"a\", \"url\": \"" + clip + "\", \"track\": \"yes\"}]",
       "entry 0 ('a'): field 'track' must be true or false, got string"},
      {"[{\"id\": \"a\", \"url\": \"" + clip + "\", \"listen\": true}]",
       "entry 0 ('a'): field 'listen' is for rtsp://, rtmp:// and tcp:// URLs"},
      {"[{\"id\": \"a\", \"url\": \"rtsp://127.0.0.1:1/live\", \"listen\": 1}]",
       "entry 0 ('a'): field 'listen' must be true or false, got number"},
      {"[{\"id\": 7, \"url\": \"" + clip + "\"}]",
       "entry 0: field 'id' must be a string, got number"},
      {"[{\"id\": \"a\", \"url\": \"gopher://u:pw@host/x\"}]",
       "entry 0 ('a'): field 'url': unsupported video source scheme 'gopher://'"},
      {"[{\"id\": \"a\", \"url\": \"" + clip + "\"}, {\"id\": \"a\", \"url\": \"" + clip + "\"}]",
       "entry 1 ('a'): field 'id': 'a' is taken by an earlier entry; ids are unique"},
  };
  for (const auto& [content, message] : cases) {
    SCOPED_TRACE(content);
    std::ofstream(path) << content;
    const ProcessResult r = RunMogserve(
        {"serve", "--model-dir", TestModelDir(), "--port", "0", "--streams-file", path});
    EXPECT_EQ(r.exit_code, 2) << r.Describe();
    EXPECT_NE(r.err.find("--streams-file "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("pw@"), std::string::npos) << r.err;
  }
  const ProcessResult missing = RunMogserve({"serve", "--model-dir", TestModelDir(), "--port", "0",
                                             "--streams-file", "/nonexistent/s.json"});
  EXPECT_EQ(missing.exit_code, 2) << missing.Describe();
  EXPECT_NE(missing.err.find("--streams-file /nonexistent/s.json: cannot be read"),
            std::string::npos)
      << missing.err;
  // An id that --stream took already: refused once the registry sees both.
  std::ofstream(path) << "[{\"id\": \"cam\", \"url\": \"" + clip + "\"}]";
  const ProcessResult taken = RunMogserve({"serve", "--model-dir", TestModelDir(), "--port", "0",
                                           "--stream", "cam=" + clip, "--streams-file", path});
  EXPECT_NE(taken.exit_code, 0) << taken.Describe();
  EXPECT_NE(taken.err.find("entry 0 ('cam'): stream 'cam' exists already"), std::string::npos)
      << taken.err;
}

// specs/video_streams.md §6: at most 48 MiB per stream (probe, decoder, canvases, previews,
// queues). Eight 720p streams at 25 fps (the clip played like a camera), each detected at 1 fps;
// batches of one, and one detection before the baseline, so the engine's own memory is there
// before and does not grow with the streams.
TEST(ServeStreams, EightStreamsStayWithinTheirMemoryBound) {
  ServeProcess server;
  ASSERT_TRUE(server.Start({"--max-batch-size", "1", "--plan-batch-sizes", "1"}));
  ASSERT_TRUE(server.WaitReady()) << server.Log();
  auto client = server.NewClient();
  ASSERT_EQ(client->Post("/v1/detect", PhotoBytes("sample1.jpg"), "image/jpeg")->status, 200);
  std::this_thread::sleep_for(milliseconds(500));
  const int64_t before = server.child().ResidentBytes();
  ASSERT_GT(before, 0);
  ASSERT_TRUE(server.child().ResetPeakResident());
  for (int i = 0; i < 8; ++i) {
    ASSERT_EQ(
        Post(*client,
             {{"id", "cam" + std::to_string(i)}, {"url", ClipPath("clip.mp4")}, {"detect_fps", 1}})
            ->status,
        201);
  }
  for (int i = 0; i < 8; ++i) {  // 4 s of video in, frames through the pipeline
    WaitForStream(*client, "cam" + std::to_string(i), [](const nlohmann::json& s) {
      return s["frames"]["decoded"] >= 100 && s["frames"]["submitted"] >= 3;
    });
  }
  const int64_t peak = server.child().PeakResidentBytes();
  const double per_stream_mib = static_cast<double>(peak - before) / 8 / (1 << 20);
  std::printf("8 streams: %.1f MiB before, peak %.1f MiB: %.1f MiB per stream\n",
              static_cast<double>(before) / (1 << 20), static_cast<double>(peak) / (1 << 20),
              per_stream_mib);
  EXPECT_LT(per_stream_mib, 48);
  const ProcessResult stopped = server.Stop();
  EXPECT_EQ(stopped.exit_code, 0) << stopped.Describe();
}

TEST(ServeStreams, AMalformedStreamFlagIsAUsageError) {
  const ProcessResult r = RunMogserve(
      {"serve", "--model-dir", TestModelDir(), "--port", "0", "--stream", "no-equals-sign"});
  EXPECT_EQ(r.exit_code, 2) << r.Describe();
  EXPECT_NE(r.err.find("--stream no-equals-sign: expected ID=URL"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace mogserve::e2e
