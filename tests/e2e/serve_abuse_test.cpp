// `mogserve serve` against clients that attack it (issue 13's probe, each attack a test): deep
// JSON, slow headers, endless chunked bodies, bodies without a length, header floods, smuggling
// framing, unread bodies, pipelining, 10 000 idle connections. Every test checks that the bad
// request gets its status early, that the server's memory growth stays bounded (the bound is in
// the test), and that GET /healthz from another client keeps answering within 1 s throughout.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "serve_support.h"
#include "support/raw_http.h"

namespace mogserve::e2e {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

constexpr int64_t kMiB = 1 << 20;
constexpr int64_t kMaxBodyBytes = 8 * kMiB;
constexpr int64_t kBodiesInFlight = 12 * kMiB;
constexpr const char* kKey = "s3cret-key-from-a-file";
const std::string kAuth = std::string("Authorization: Bearer ") + kKey + "\r\n";

// "" when the prober saw every /healthz answered, each within 1 s.
std::string CheckProber(HealthProber& prober) {
  prober.Stop();
  if (prober.probes() == 0) return "no probe ran";
  if (prober.failures() > 0 || prober.slowest() >= seconds(1)) return prober.Describe();
  return "";
}

// The server of most tests: an API key from a file, short deadlines, an 8 MiB body limit and
// 12 MiB of bodies in flight.
class ServeAbuseTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<TempDir>();
    std::ofstream(*dir_ / "key") << kKey << "\n";
    server_ = StartSharedServer(
        {"--api-key-file", *dir_ / "key", "--header-timeout", "2", "--body-timeout", "2",
         "--idle-timeout", "60", "--max-body-bytes", std::to_string(kMaxBodyBytes),
         "--max-body-bytes-in-flight", std::to_string(kBodiesInFlight), "--plan-batch-sizes",
         "1", "--max-batch-size", "2", "--access-log", "off"});
  }
  static void TearDownTestSuite() {
    StopSharedServer(server_);
    dir_.reset();
  }
  void SetUp() override {
    ASSERT_NE(server_, nullptr) << "the server did not start";
    prober_ = std::make_unique<HealthProber>(server_->port());
  }
  void TearDown() override {
    EXPECT_EQ(CheckProber(*prober_), "") << "GET /healthz from another client";
    EXPECT_TRUE(server_->child().Running()) << server_->Log();
  }

  RawConnection Connect() const {
    RawConnection c(server_->port());
    EXPECT_TRUE(c.ok());
    return c;
  }
  // Sends `request` on a new connection and reads one response.
  std::optional<RawResponse> Exchange(const std::string& request) const {
    RawConnection c = Connect();
    if (!c.Send(request)) return std::nullopt;
    return c.ReadResponse(seconds(10));
  }
  // Peak resident-memory growth of the server since the last call (VmHWM, reset each time).
  int64_t PeakGrowth() {
    const int64_t peak = server_->child().PeakResidentBytes() - baseline_rss_;
    baseline_rss_ = server_->child().ResidentBytes();
    server_->child().ResetPeakResident();
    return peak;
  }
  void ResetPeak() { PeakGrowth(); }

  static std::unique_ptr<TempDir> dir_;
  static std::unique_ptr<ServeProcess> server_;
  std::unique_ptr<HealthProber> prober_;
  int64_t baseline_rss_ = 0;
};
std::unique_ptr<TempDir> ServeAbuseTest::dir_;
std::unique_ptr<ServeProcess> ServeAbuseTest::server_;

TEST_F(ServeAbuseTest, JsonNested100000DeepIsRefusedWhileParsing) {
  const std::string image = Base64(PhotoBytes("grace_hopper.jpg"));
  const std::string body = "{\"image\":\"" + image +
                           "\",\"max_faces\":" + std::string(100'000, '[') +
                           std::string(100'000, ']') + "}";
  const auto r = Exchange(PostRequest("/v1/detect", "application/json", body, kAuth));
  ASSERT_TRUE(r) << server_->Log();
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(CheckError(r->body, "json_too_deep", {"deeper than 8 levels", "max_json_depth"}), "");
  // The same image in a flat body is detected: the refusal was about the nesting.
  const auto ok = Exchange(
      PostRequest("/v1/detect", "application/json", "{\"image\":\"" + image + "\"}", kAuth));
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
}

TEST_F(ServeAbuseTest, EndlessChunkedBodyIsRefusedOnceItPassesTheLimit) {
  ResetPeak();
  RawConnection c = Connect();
  ASSERT_TRUE(c.Send("POST /v1/detect HTTP/1.1\r\nHost: x\r\nContent-Type: image/jpeg\r\n" + kAuth +
                     "Transfer-Encoding: chunked\r\n\r\n"));
  const std::string chunk = "10000\r\n" + std::string(0x10000, 'x') + "\r\n";  // 64 KiB
  int64_t sent = 0;
  const int64_t kAttempt = int64_t{1} << 30;  // 1 GiB
  std::string pending;
  while (sent < kAttempt && !c.Readable(milliseconds(0))) {
    if (pending.empty()) pending = chunk;
    const long n = c.SendSome(pending, milliseconds(100));
    if (n < 0) break;
    pending.erase(0, static_cast<size_t>(n));
    sent += n;
  }
  const auto r = c.ReadResponse(seconds(5));
  ASSERT_TRUE(r) << "no answer after " << sent << " bytes";
  EXPECT_EQ(r->status, 413);
  EXPECT_EQ(CheckError(r->body, "payload_too_large", {"chunked", "8388608"}), "");
  EXPECT_EQ(r->Header("connection"), "close");
  // Refused soon after the limit: what was sent beyond it is what the sockets buffered.
  EXPECT_LT(sent, kMaxBodyBytes + 32 * kMiB);
  const int64_t growth = PeakGrowth();
  EXPECT_LT(growth, kMaxBodyBytes + 24 * kMiB) << "peak RSS growth " << growth;
}

TEST_F(ServeAbuseTest, PostWithoutALengthGets411AtOnce) {
  RawConnection c = Connect();
  // A body follows, but nothing says how long it is: never read to EOF, answered now.
  ASSERT_TRUE(c.Send("POST /v1/detect HTTP/1.1\r\nHost: x\r\nContent-Type: image/jpeg\r\n" + kAuth +
                     "\r\n" + PhotoBytes("grace_hopper.jpg")));
  const auto start = Clock::now();
  const auto r = c.ReadResponse(seconds(5));
  ASSERT_TRUE(r);
  EXPECT_LT(Clock::now() - start, seconds(1));
  EXPECT_EQ(r->status, 411);
  EXPECT_EQ(CheckError(r->body, "length_required", {"Content-Length", "chunked"}), "");
  EXPECT_TRUE(c.ClosedWithoutMore(seconds(5)));
}

TEST_F(ServeAbuseTest, HeaderFloodsGet431BeforeTheyAreBuffered) {
  ResetPeak();
  {
    SCOPED_TRACE("more than 100 header fields");
    std::string fields;
    for (int i = 0; i < 150; ++i) fields += "X-F" + std::to_string(i) + ": 1\r\n";
    const auto r = Exchange(GetRequest("/healthz", fields));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 431);
    EXPECT_EQ(CheckError(r->body, "header_fields_too_many", {"100", "max_header_fields"}), "");
  }
  {
    SCOPED_TRACE("100 000 header fields, and four unfinished 40 MB headers at once");
    std::vector<RawConnection> floods;
    for (int i = 0; i < 5; ++i) {
      floods.push_back(Connect());
      ASSERT_TRUE(floods.back().Send("GET /healthz HTTP/1.1\r\nHost: x\r\n"));
    }
    const std::string line = "X-Flood: " + std::string(400, 'a') + "\r\n";
    std::vector<int64_t> sent(floods.size(), 0);
    std::vector<bool> answered(floods.size(), false);
    for (int round = 0; round < 100'000; ++round) {
      bool all = true;
      for (size_t i = 0; i < floods.size(); ++i) {
        if (answered[i] || sent[i] > 40 * kMiB) continue;
        all = false;
        if (floods[i].Readable(milliseconds(0))) {
          answered[i] = true;
          continue;
        }
        const long n = floods[i].SendSome(line, milliseconds(10));
        if (n > 0) sent[i] += n;
      }
      if (all) break;
    }
    for (size_t i = 0; i < floods.size(); ++i) {
      const auto r = floods[i].ReadResponse(seconds(5));
      ASSERT_TRUE(r) << "flood " << i << " after " << sent[i] << " bytes";
      EXPECT_EQ(r->status, 431);
      EXPECT_EQ(CheckError(r->body, "header_too_large", {"16384", "max_header_bytes"}), "");
      EXPECT_LT(sent[i], 8 * kMiB) << "refused late";
    }
  }
  const int64_t growth = PeakGrowth();
  EXPECT_LT(growth, 16 * kMiB) << "peak RSS growth " << growth;
}

TEST_F(ServeAbuseTest, LongRequestTargetsGet414) {
  for (const size_t length : {9'000u, 40'000u}) {
    SCOPED_TRACE(length);
    std::string target(length, 'a');  // built in place: "/" + string trips GCC 12's -Wrestrict
    target[0] = '/';
    const auto r = Exchange(GetRequest(target));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 414);
    EXPECT_EQ(CheckError(r->body, "uri_too_long", {"max_target_bytes"}), "");
  }
}

TEST_F(ServeAbuseTest, AmbiguousFramingIsRefusedAndTheConnectionClosed) {
  const std::string post =
      "POST /v1/detect HTTP/1.1\r\nHost: x\r\nContent-Type: image/jpeg\r\n" + kAuth;
  const std::vector<std::tuple<std::string, int, std::string>> cases = {
      {post + "Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", 400, "different values"},
      {post + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400,
       "Transfer-Encoding"},
      {post + "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n", 400,
       "Content-Length together with Transfer-Encoding"},
      {post + "Transfer-Encoding: gzip\r\n\r\nabc", 400, "does not end in chunked"},
      {post + "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501, "only 'chunked'"},
      {post + "Content-Length: 5\r\nHost: y\r\n\r\nhello", 400, "more than one Host"},
      {"GET /healthz HTTP/1.1\r\n\r\n", 400, "needs a Host header"},
      {"GET /healthz HTTP/2.0\r\nHost: x\r\n\r\n", 505, "HTTP/1.0 and HTTP/1.1"},
  };
  for (const auto& [request, status, message] : cases) {
    SCOPED_TRACE(request);
    RawConnection c = Connect();
    ASSERT_TRUE(c.Send(request + GetRequest("/healthz")));  // a request after it: never answered
    const auto r = c.ReadResponse(seconds(5));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, status) << r->body;
    EXPECT_NE(r->body.find(message), std::string::npos) << r->body;
    EXPECT_EQ(r->Header("connection"), "close");
    EXPECT_TRUE(c.ClosedWithoutMore(seconds(5)));
  }
}

TEST_F(ServeAbuseTest, AnUnreadBodyAfterAnEarlyRefusalIsNeverParsedAsARequest) {
  // The body of a refused request holds a request of its own: it must not be answered.
  const std::string smuggled = GetRequest("/healthz");
  RawConnection c = Connect();
  ASSERT_TRUE(c.Send(PostRequest("/v1/detect", "image/jpeg", smuggled)));  // no API key
  const auto r = c.ReadResponse(seconds(5));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(r->Header("www-authenticate"), "Bearer");
  EXPECT_TRUE(c.ClosedWithoutMore(seconds(5))) << "the body was answered as a request";
}

TEST_F(ServeAbuseTest, PipelinedRequestsAreAnsweredInOrder) {
  RawConnection c = Connect();
  ASSERT_TRUE(
      c.Send(GetRequest("/healthz") +
             PostRequest("/v1/detect", "image/jpeg", PhotoBytes("grace_hopper.jpg"), kAuth) +
             GetRequest("/v1/models", kAuth) + GetRequest("/nope") + GetRequest("/readyz")));
  std::vector<RawResponse> answers;
  for (int i = 0; i < 5; ++i) {
    auto r = c.ReadResponse(seconds(30));
    ASSERT_TRUE(r) << "answer " << i;
    answers.push_back(std::move(*r));
  }
  EXPECT_EQ(answers[0].body, "{\"status\":\"ok\"}");
  EXPECT_EQ(CheckFaces(json::parse(answers[1].body), "grace_hopper.jpg"), "") << answers[1].body;
  EXPECT_NE(answers[2].body.find("\"models\""), std::string::npos);
  EXPECT_EQ(answers[3].status, 404);
  EXPECT_EQ(answers[4].body, "{\"ready\":true}");
  EXPECT_FALSE(c.Readable(milliseconds(200))) << "more answers than requests";
}

TEST_F(ServeAbuseTest, AuthSchemeInAnyCaseAndTheKeyStaysOutOfTheProcessList) {
  const std::string photo = PhotoBytes("grace_hopper.jpg");
  for (const std::string scheme : {"Bearer", "bearer", "BEARER"}) {
    SCOPED_TRACE(scheme);
    const auto r = Exchange(PostRequest("/v1/detect", "image/jpeg", photo,
                                        "authorization: " + scheme + " " + kKey + "\r\n"));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << r->body;
  }
  const auto wrong =
      Exchange(PostRequest("/v1/detect", "image/jpeg", photo, "Authorization: Bearer nope\r\n"));
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  EXPECT_EQ(CheckError(wrong->body, "unauthorized", {"not valid"}), "");
  std::ifstream cmdline("/proc/" + std::to_string(server_->child().pid()) + "/cmdline");
  const std::string args((std::istreambuf_iterator<char>(cmdline)), {});
  EXPECT_NE(args.find("--api-key-file"), std::string::npos);
  EXPECT_EQ(args.find(kKey), std::string::npos);
}

TEST_F(ServeAbuseTest, CurlFormUploadGets415SayingWhichHeaderToAdd) {
  // What `curl --data-binary @photo.jpg URL` sends without -H.
  const auto r = Exchange(PostRequest("/v1/detect", "application/x-www-form-urlencoded",
                                      PhotoBytes("grace_hopper.jpg"), kAuth));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 415);
  EXPECT_EQ(CheckError(r->body, "unsupported_media_type",
                       {"-H 'Content-Type: image/jpeg'", "form-urlencoded"}),
            "");
}

TEST_F(ServeAbuseTest, ExpectContinueIsAnsweredBeforeTheBodyOrRefusedWithoutIt) {
  const std::string photo = PhotoBytes("grace_hopper.jpg");
  {
    RawConnection c = Connect();
    ASSERT_TRUE(c.Send(
        "POST /v1/detect HTTP/1.1\r\nHost: x\r\nContent-Type: image/jpeg\r\n" + kAuth +
        "Expect: 100-continue\r\nContent-Length: " + std::to_string(photo.size()) + "\r\n\r\n"));
    const auto go = c.ReadResponse(seconds(5));
    ASSERT_TRUE(go);
    EXPECT_EQ(go->status, 100);
    ASSERT_TRUE(c.Send(photo));
    const auto r = c.ReadResponse(seconds(30));
    ASSERT_TRUE(r);
    EXPECT_EQ(CheckFaces(json::parse(r->body), "grace_hopper.jpg"), "") << r->body;
  }
  {
    RawConnection c = Connect();
    ASSERT_TRUE(c.Send("POST /v1/detect HTTP/1.1\r\nHost: x\r\nContent-Type: image/jpeg\r\n" +
                       kAuth + "Expect: 100-continue\r\nContent-Length: 1000000000\r\n\r\n"));
    const auto r = c.ReadResponse(seconds(5));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 413);
    EXPECT_EQ(CheckError(r->body, "payload_too_large", {"1000000000", "8388608"}), "");
  }
}

TEST_F(ServeAbuseTest, SlowHeadersAndBodiesGet408) {
  RawConnection header = Connect();
  ASSERT_TRUE(header.Send("GET /healthz HTTP/1.1\r\nHo"));
  RawConnection body = Connect();
  ASSERT_TRUE(body.Send("POST /v1/detect HTTP/1.1\r\nHost: x\r\nContent-Type: image/jpeg\r\n" +
                        kAuth + "Content-Length: 1000\r\n\r\n0123456789"));
  const auto start = Clock::now();
  const auto h = header.ReadResponse(seconds(6));
  const auto b = body.ReadResponse(seconds(6));
  ASSERT_TRUE(h);
  ASSERT_TRUE(b);
  EXPECT_LT(Clock::now() - start, seconds(4));  // the deadlines are 2 s
  EXPECT_EQ(h->status, 408);
  EXPECT_EQ(CheckError(h->body, "request_timeout", {"header", "2 s", "header_timeout"}), "");
  EXPECT_EQ(b->status, 408);
  EXPECT_EQ(CheckError(b->body, "request_timeout", {"body", "body_timeout"}), "");
  EXPECT_TRUE(header.ClosedWithoutMore(seconds(5)));
  EXPECT_TRUE(body.ClosedWithoutMore(seconds(5)));
}

TEST_F(ServeAbuseTest, BodiesHeldAtOnceAreBounded) {
  // An 8 MiB upload in progress holds 8 of the 12 MiB: another 8 MiB one must wait (503).
  RawConnection first = Connect();
  const std::string announce =
      "POST /v1/detect HTTP/1.1\r\nHost: x\r\nContent-Type: image/jpeg\r\n" + kAuth +
      "Content-Length: " + std::to_string(kMaxBodyBytes) + "\r\n\r\n";
  ASSERT_TRUE(first.Send(announce + std::string(1024, 'x')));
  std::this_thread::sleep_for(milliseconds(300));  // lets the server read the first header
  RawConnection second = Connect();
  ASSERT_TRUE(second.Send(announce));
  const auto busy = second.ReadResponse(seconds(5));
  ASSERT_TRUE(busy);
  EXPECT_EQ(busy->status, 503);
  EXPECT_EQ(busy->Header("retry-after"), "1");
  EXPECT_EQ(CheckError(busy->body, "server_busy", {"max_body_bytes_in_flight", "12582912"}), "");
  // The stalled upload ends in 408 and gives its share back: a whole body fits again.
  const auto stalled = first.ReadResponse(seconds(6));
  ASSERT_TRUE(stalled);
  EXPECT_EQ(stalled->status, 408);
  const auto third = Exchange(announce + std::string(kMaxBodyBytes, 'x'));
  ASSERT_TRUE(third);
  // Read whole, then found not to be an image.
  EXPECT_EQ(third->status, 415) << third->body;
  EXPECT_EQ(CheckError(third->body, "unsupported_image_format", {}), "");
}

// More slow-header clients than connection slots: each new client displaces the longest
// waiting one, so health checks get in; those left get 408 at the header deadline.
TEST(ServeSlowlorisE2E, SlowHeadersCannotTakeEveryConnectionSlot) {
  constexpr int kSlots = 64;
  constexpr int kAttackers = 100;
  ServeProcess server;
  ASSERT_TRUE(server.Start({"--max-connections", std::to_string(kSlots), "--header-timeout", "3",
                            "--plan-batch-sizes", "1", "--access-log", "off"}));
  ASSERT_TRUE(server.WaitReady());
  std::vector<RawConnection> attackers;
  for (int i = 0; i < kAttackers; ++i) attackers.emplace_back(server.port());
  HealthProber prober(server.port());
  const std::string header = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + std::string(200, 'z');
  std::vector<int> states(kAttackers, 0);  // 0 sending, 1 answered 408, 2 closed
  const auto start = Clock::now();
  for (size_t byte = 0; byte < header.size() && Clock::now() - start < seconds(5); ++byte) {
    for (int i = 0; i < kAttackers; ++i) {
      if (states[i] != 0) continue;
      if (attackers[i].Readable(milliseconds(0))) {
        const auto r = attackers[i].ReadResponse(seconds(1));
        states[i] = r ? (r->status == 408 ? 1 : 3) : 2;
        continue;
      }
      if (!attackers[i].Send(header.substr(byte, 1))) states[i] = 2;
    }
    std::this_thread::sleep_for(milliseconds(50));  // the attack's pace: 20 bytes per second
  }
  EXPECT_EQ(CheckProber(prober), "") << "GET /healthz while slow clients hold the slots";
  int answered_408 = 0, closed = 0;
  for (int i = 0; i < kAttackers; ++i) {
    if (states[i] == 0) {
      const auto r = attackers[i].ReadResponse(seconds(2));
      states[i] = r ? (r->status == 408 ? 1 : 3) : 2;
    }
    answered_408 += states[i] == 1;
    closed += states[i] == 2;
  }
  EXPECT_EQ(answered_408 + closed, kAttackers) << "every slow client ended (408 or displaced)";
  EXPECT_GT(answered_408, 0);
  EXPECT_GE(closed, kAttackers - kSlots) << "displaced to make room";
  auto client = server.NewClient();
  auto metrics = client->Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_GE(MetricValue(ParseMetrics(metrics->body),
                        "mogserve_http_connections_total{event=\"displaced\"}"),
            kAttackers - kSlots);
  EXPECT_TRUE(server.child().Running());
}

// 10 000 keep-alive connections left idle: held with bounded memory, and the server still
// answers at once.
TEST(ServeIdleConnectionsE2E, TenThousandIdleKeepAliveConnections) {
  constexpr int kConnections = 10'000;
  constexpr int64_t kBytesPerConnection = 16 << 10;  // the bound: 16 KiB of RSS each
  rlimit limit{};
  getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = limit.rlim_max;
  setrlimit(RLIMIT_NOFILE, &limit);
  ASSERT_GE(limit.rlim_cur, static_cast<rlim_t>(kConnections + 200))
      << "this test needs more file descriptors (ulimit -n)";
  ServeProcess server;
  // Slots for the idle connections and the probes (at the cap, idle ones would be displaced).
  ASSERT_TRUE(server.Start({"--idle-timeout", "600", "--max-connections",
                            std::to_string(kConnections + 100), "--plan-batch-sizes", "1",
                            "--access-log", "off"}));
  ASSERT_TRUE(server.WaitReady());
  // Warm the event loop and allocator with a few connections before the baseline.
  {
    std::vector<RawConnection> warm;
    for (int i = 0; i < 100; ++i) {
      warm.emplace_back(server.port());
      ASSERT_TRUE(warm.back().Send(GetRequest("/healthz")));
      ASSERT_TRUE(warm.back().ReadResponse(seconds(10)));
    }
  }
  const int64_t before = server.child().ResidentBytes();
  std::vector<RawConnection> idle;
  idle.reserve(kConnections);
  for (int i = 0; i < kConnections; ++i) {
    idle.emplace_back(server.port());
    ASSERT_TRUE(idle.back().ok()) << "connection " << i;
    ASSERT_TRUE(idle.back().Send(GetRequest("/healthz"))) << "connection " << i;
    const auto r = idle.back().ReadResponse(seconds(10));
    ASSERT_TRUE(r && r->status == 200) << "connection " << i;
  }
  const int64_t after = server.child().ResidentBytes();
  const int64_t per_connection = (after - before) / kConnections;
  std::cout << "server RSS " << before / kMiB << " MiB -> " << after / kMiB << " MiB with "
            << kConnections << " idle connections: " << per_connection << " bytes each\n";
  EXPECT_LT(per_connection, kBytesPerConnection);
  HealthProber prober(server.port());
  std::this_thread::sleep_for(seconds(1));  // a few probes while every connection is held
  EXPECT_EQ(CheckProber(prober), "");
  auto client = server.NewClient();
  auto stats = client->Get("/v1/stats");
  ASSERT_TRUE(stats);
  EXPECT_GE(json::parse(stats->body)["http"]["connections_open"].get<int>(), kConnections);
  // Every idle connection is still usable.
  for (int i = 0; i < kConnections; i += 997) {
    ASSERT_TRUE(idle[i].Send(GetRequest("/readyz")));
    const auto r = idle[i].ReadResponse(seconds(10));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
  }
  // The server closes them as it stops (so their TIME_WAIT stays on its side, and the tests
  // after this one keep their ephemeral ports).
  const ProcessResult stopped = server.Stop();
  EXPECT_EQ(stopped.exit_code, 0) << stopped.Describe();
}

}  // namespace
}  // namespace mogserve::e2e
