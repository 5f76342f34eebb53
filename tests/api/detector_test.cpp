// The public Detector (include/mogserve/detector.h) on the real SSD model and the real photos of
// tests/data, checked against tests/data/ground_truth.json: sync, decoded pixels, DetectAll,
// async from many threads (batched together), bad input, shutdown with work in flight, bad
// options, and FormatJsonLine.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "image/decode.h"
#include "mogserve/mogserve.h"
#include "scheduler/scheduler_config.h"

#include "common/cpu_info.h"

namespace mogserve {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path PhotosDir() {
  return fs::path(MOGSERVE_TEST_DATA_DIR) / "photos";
}

std::vector<uint8_t> ReadBytes(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

std::vector<uint8_t> Photo(const std::string& name) {
  std::vector<uint8_t> bytes = ReadBytes(PhotosDir() / name);
  EXPECT_FALSE(bytes.empty()) << "cannot read " << name;
  return bytes;
}

// file name -> the hand-checked face boxes.
std::map<std::string, std::vector<Detection>> GroundTruth() {
  std::ifstream f(fs::path(MOGSERVE_TEST_DATA_DIR) / "ground_truth.json");
  const json gt = json::parse(f);
  std::map<std::string, std::vector<Detection>> out;
  for (const auto& [name, boxes] : gt.items()) {
    if (name.front() == '_') continue;
    std::vector<Detection>& v = out[name];
    for (const json& b : boxes) {
      v.push_back({b[0].get<float>(), b[1].get<float>(), b[2].get<float>(), b[3].get<float>(), 1});
    }
  }
  return out;
}

DetectorOptions TestOptions() {
  DetectorOptions o;
  o.model_dir = MOGSERVE_TEST_MODEL_DIR;
  o.plan_batch_sizes = {1, 4, 8};  // a shorter warm-up than the server's
  o.max_batch_size = 8;
  // Memory-only batch cap: the throughput knee is measured at Open, and on a machine where batching
  // does not pay on the CPU it caps batches at 1, which the batching test cannot tell from a bug.
  o.batch_knee = 0;
  return o;
}

// Every true face found (IoU >= 0.5) and, with equal counts, nothing else.
void ExpectFaces(const DetectResult& r, const std::vector<Detection>& truth) {
  ASSERT_EQ(r.faces.size(), truth.size());
  for (const Detection& t : truth) {
    float best = 0;
    for (const Detection& d : r.faces) best = std::max(best, IoU(t, d));
    EXPECT_GE(best, 0.5f) << "true face [" << t.x1 << "," << t.y1 << "," << t.x2 << "," << t.y2
                          << "] not found";
  }
  for (const Detection& d : r.faces) {
    EXPECT_GT(d.score, 0.5f);
    EXPECT_GE(d.x1, 0);
    EXPECT_LE(d.x2, r.width);
  }
}

class DetectorTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto opened = Detector::Open(TestOptions());
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    detector_ = std::move(opened).value().release();
  }
  static void TearDownTestSuite() {
    delete detector_;
    detector_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(detector_, nullptr) << "Detector::Open failed"; }

  static Detector* detector_;
};
Detector* DetectorTest::detector_ = nullptr;

TEST_F(DetectorTest, InfoDescribesTheSsd) {
  const DetectorInfo& info = detector_->info();
  EXPECT_EQ(info.model, "ssd-mobilenetv1");
  EXPECT_EQ(info.device, "cpu");
  EXPECT_EQ(info.precision, "fp32");
  EXPECT_EQ(info.precision_choice, "") << "named, not chosen by auto";
  EXPECT_EQ(info.cpu_isa, IsaLevelName(HostCpu().Level()));
  EXPECT_NE(info.cpu.find(HostCpu().Describe().substr(0, 10)), std::string::npos) << info.cpu;
  EXPECT_EQ(info.instances, 1);
  EXPECT_EQ(info.input_width, 512);
  EXPECT_EQ(info.input_height, 512);
  EXPECT_NE(info.scheduler.find("continuous"), std::string::npos) << info.scheduler;
  EXPECT_FALSE(info.buffer_plan.empty()) << "the warm-up ran";
  EXPECT_FLOAT_EQ(info.defaults.score_threshold, 0.5f);
}

TEST_F(DetectorTest, SyncOnEveryPhotoFindsTheKnownFaces) {
  const auto truth = GroundTruth();
  ASSERT_EQ(truth.size(), 10u);
  int total = 0;
  for (const auto& [name, boxes] : truth) {
    SCOPED_TRACE(name);
    auto r = detector_->Detect(Photo(name));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ExpectFaces(*r, boxes);
    total += static_cast<int>(r->faces.size());
    EXPECT_GE(r->timing.batch_size, 1);
    EXPECT_GT(r->timing.inference_ms, 0);
  }
  EXPECT_EQ(total, 25);
  // Sizes known from the photos' own headers.
  auto sample1 = detector_->Detect(Photo("sample1.jpg"));
  ASSERT_TRUE(sample1.ok());
  EXPECT_EQ(sample1->width, 1920);
  EXPECT_EQ(sample1->height, 1280);
}

TEST_F(DetectorTest, DecodedPixelsAgreeWithEncodedBytes) {
  for (const std::string name : {"grace_hopper.jpg", "astronaut.png", "sample4.jpg"}) {
    SCOPED_TRACE(name);
    const std::vector<uint8_t> bytes = Photo(name);
    auto decoded = image::Decode(bytes);
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    const image::Image& img = decoded->image;
    auto encoded = detector_->Detect(bytes);
    ASSERT_TRUE(encoded.ok()) << encoded.status().ToString();

    Pixels pixels{img.data.data(), img.width, img.height, 0};
    auto from_pixels = detector_->Detect(pixels);
    ASSERT_TRUE(from_pixels.ok()) << from_pixels.status().ToString();
    EXPECT_EQ(from_pixels->width, encoded->width);
    EXPECT_EQ(from_pixels->height, encoded->height);
    EXPECT_EQ(from_pixels->timing.decode_ms, 0) << "decoded pixels skip the decoder";
    ASSERT_EQ(from_pixels->faces.size(), encoded->faces.size());
    for (size_t i = 0; i < encoded->faces.size(); ++i) {
      EXPECT_GT(IoU(from_pixels->faces[i], encoded->faces[i]), 0.95f) << "face " << i;
      EXPECT_NEAR(from_pixels->faces[i].score, encoded->faces[i].score, 0.02);
    }

    // The same rows with padding at the end of each (stride > width * 3).
    const int stride = img.width * 3 + 17;
    std::vector<uint8_t> padded(static_cast<size_t>(stride) * img.height, 0xAB);
    for (int y = 0; y < img.height; ++y) {
      std::copy_n(img.data.data() + static_cast<size_t>(y) * img.width * 3, img.width * 3,
                  padded.data() + static_cast<size_t>(y) * stride);
    }
    auto strided = detector_->Detect(Pixels{padded.data(), img.width, img.height, stride});
    ASSERT_TRUE(strided.ok()) << strided.status().ToString();
    ASSERT_EQ(strided->faces.size(), from_pixels->faces.size());
    for (size_t i = 0; i < strided->faces.size(); ++i) {
      EXPECT_FLOAT_EQ(strided->faces[i].x1, from_pixels->faces[i].x1);
      EXPECT_FLOAT_EQ(strided->faces[i].score, from_pixels->faces[i].score);
    }
  }
}

TEST_F(DetectorTest, DetectAllAnswersInInputOrder) {
  const auto truth = GroundTruth();
  std::vector<std::string> names;
  std::vector<std::vector<uint8_t>> files;
  for (const auto& [name, boxes] : truth) {
    names.push_back(name);
    files.push_back(Photo(name));
  }
  // A broken image in the middle gets its error in its own slot.
  const std::vector<uint8_t> garbage = {'n', 'o', 't', ' ', 'a', 'n', ' ', 'i', 'm', 'a', 'g', 'e'};
  names.insert(names.begin() + 5, "garbage");
  files.insert(files.begin() + 5, garbage);
  std::vector<std::span<const uint8_t>> spans(files.begin(), files.end());
  const std::vector<StatusOr<DetectResult>> results = detector_->DetectAll(spans);
  ASSERT_EQ(results.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    SCOPED_TRACE(names[i]);
    if (names[i] == "garbage") {
      ASSERT_FALSE(results[i].ok());
      EXPECT_EQ(results[i].status().code(), StatusCode::kUnsupported)
          << results[i].status().ToString();
      continue;
    }
    ASSERT_TRUE(results[i].ok()) << results[i].status().ToString();
    ExpectFaces(*results[i], truth.at(names[i]));
  }
}

TEST_F(DetectorTest, AsyncFromManyThreadsBatchesTogether) {
  constexpr int kThreads = 32;
  constexpr int kPerThread = 3;
  const std::vector<uint8_t> photo = Photo("grace_hopper.jpg");
  std::mutex mu;
  std::condition_variable cv;
  int answered = 0;
  int ok = 0;
  int64_t batch_size_sum = 0;
  std::vector<int> calls(kThreads * kPerThread, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const int index = t * kPerThread + i;
        detector_->DetectAsync(photo, [&, index](StatusOr<DetectResult> r) {
          std::lock_guard<std::mutex> lock(mu);
          ++calls[index];
          ++answered;
          if (r.ok()) {
            ++ok;
            batch_size_sum += r->timing.batch_size;
            EXPECT_EQ(r->faces.size(), 1u);
          } else {
            ADD_FAILURE() << r.status().ToString();
          }
          cv.notify_all();
        });
      }
    });
  }
  for (std::thread& t : threads) t.join();
  std::unique_lock<std::mutex> lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::minutes(5),
                          [&] { return answered == kThreads * kPerThread; }));
  for (int c : calls) EXPECT_EQ(c, 1) << "every callback runs exactly once";
  EXPECT_EQ(ok, kThreads * kPerThread);
  const double mean_batch = static_cast<double>(batch_size_sum) / ok;
  EXPECT_GT(mean_batch, 1.0) << "concurrent callers share forward passes";
  EXPECT_GT(detector_->stats().mean_batch_size, 1.0);
}

TEST_F(DetectorTest, BlockingCallsFromACallbackEndAtOnceInsteadOfDeadlocking) {
  const std::vector<uint8_t> photo = Photo("grace_hopper.jpg");
  std::promise<std::pair<Status, Status>> inner;
  detector_->DetectAsync(photo, [&](StatusOr<DetectResult> r) {
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    // On the post-processing thread: a blocking Detect here would wait for this very thread.
    StatusOr<DetectResult> nested = detector_->Detect(photo);
    const std::span<const uint8_t> one[] = {photo};
    std::vector<StatusOr<DetectResult>> all = detector_->DetectAll(one);
    inner.set_value({nested.status(), all.at(0).status()});
  });
  auto answered = inner.get_future();
  ASSERT_EQ(answered.wait_for(std::chrono::minutes(2)), std::future_status::ready)
      << "a blocking call inside a callback deadlocked";
  const auto [nested, all] = answered.get();
  for (const Status& s : {nested, all}) {
    EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
    EXPECT_NE(s.message().find("DetectAsync"), std::string::npos) << s.ToString();
  }
  // Outside a callback the same calls work.
  EXPECT_TRUE(detector_->Detect(photo).ok());
}

TEST_F(DetectorTest, BadInputGetsAClearStatus) {
  auto empty = detector_->Detect(std::span<const uint8_t>());
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(empty.status().message().find("0 bytes"), std::string::npos)
      << empty.status().ToString();

  const std::string text = "hello, this is not a picture";
  auto not_image = detector_->Detect(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
  ASSERT_FALSE(not_image.ok());
  EXPECT_EQ(not_image.status().code(), StatusCode::kUnsupported) << not_image.status().ToString();
  EXPECT_FALSE(not_image.status().message().empty());

  std::vector<uint8_t> truncated = Photo("grace_hopper.jpg");
  truncated.resize(truncated.size() / 3);
  auto cut = detector_->Detect(truncated);
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.status().code(), StatusCode::kInvalidData) << cut.status().ToString();

  auto null_pixels = detector_->Detect(Pixels{nullptr, 10, 10, 0});
  ASSERT_FALSE(null_pixels.ok());
  EXPECT_EQ(null_pixels.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(null_pixels.status().message().find("pixels.data"), std::string::npos)
      << null_pixels.status().ToString();

  const std::vector<uint8_t> small(300, 0);
  auto zero = detector_->Detect(Pixels{small.data(), 0, 10, 0});
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(zero.status().message().find("0x10"), std::string::npos) << zero.status().ToString();

  auto bad_stride = detector_->Detect(Pixels{small.data(), 10, 10, 20});
  ASSERT_FALSE(bad_stride.ok());
  EXPECT_EQ(bad_stride.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad_stride.status().message().find("pixels.stride"), std::string::npos)
      << bad_stride.status().ToString();

  // Checked before a byte is read: the pointer is never followed.
  auto huge = detector_->Detect(Pixels{small.data(), 100000, 100000, 0});
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(huge.status().message().find("max_pixels"), std::string::npos)
      << huge.status().ToString();

  // Async: the error comes back inline, exactly once.
  int calls = 0;
  Status status;
  detector_->DetectAsync(std::vector<uint8_t>(), [&](StatusOr<DetectResult> r) {
    ++calls;
    status = r.status();
  });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  calls = 0;
  detector_->DetectAsync(Pixels{nullptr, 1, 1, 0}, [&](StatusOr<DetectResult> r) {
    ++calls;
    status = r.status();
  });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
}

TEST_F(DetectorTest, FormatJsonLineWritesDetectsLine) {
  auto r = detector_->Detect(Photo("grace_hopper.jpg"));
  ASSERT_TRUE(r.ok());
  const std::string line = FormatJsonLine("photos/grace_hopper.jpg", r);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  const json j = json::parse(line);
  EXPECT_EQ(j["path"], "photos/grace_hopper.jpg");
  EXPECT_EQ(j["width"], r->width);
  EXPECT_EQ(j["height"], r->height);
  ASSERT_EQ(j["faces"].size(), 1u);
  EXPECT_NEAR(j["faces"][0]["box"][0].get<double>(), r->faces[0].x1, 0.006);
  EXPECT_NEAR(j["faces"][0]["score"].get<double>(), r->faces[0].score, 6e-5);
  EXPECT_FALSE(j.contains("timing"));
  EXPECT_TRUE(json::parse(FormatJsonLine("x", r, /*include_timing=*/true)).contains("timing"));
  // Keys in sorted order, numbers rounded: the exact bytes `mogserve detect` prints.
  EXPECT_EQ(line.rfind("{\"faces\":[{\"box\":[", 0), 0u) << line;

  const std::string error =
      FormatJsonLine("bad.jpg", StatusOr<DetectResult>(InvalidData("JPEG is truncated")));
  EXPECT_EQ(error,
            "{\"error\":{\"code\":\"invalid_data\",\"message\":\"JPEG is truncated\"},\"path\":"
            "\"bad.jpg\"}");
}

// Shut down with requests in flight: every callback runs exactly once, with faces (accepted
// before the shutdown, so drained) or kUnavailable (refused after it); nothing is lost.
// DetectorOptions::min_face_size (the option table's): faces whose shorter side is below it go,
// before max_faces picks the best.
TEST_F(DetectorTest, MinFaceSizeDropsSmallFacesBeforeMaxFaces) {
  auto all = detector_->Detect(Photo("sample1.jpg"));
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_GE(all->faces.size(), 2u);
  const auto shorter = [](const Detection& d) { return std::min(d.width(), d.height()); };
  const int min_size = static_cast<int>(std::floor(shorter(all->faces[0]))) + 1;
  std::vector<Detection> bigger;
  for (const Detection& d : all->faces) {
    if (shorter(d) >= min_size) bigger.push_back(d);
  }
  ASSERT_FALSE(bigger.empty());
  ASSERT_LT(bigger.size(), all->faces.size());

  DetectorOptions options = TestOptions();
  options.plan_batch_sizes.clear();
  options.min_face_size = min_size;
  options.max_faces = 1;
  auto opened = Detector::Open(options);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  EXPECT_EQ((*opened)->info().defaults.min_face_size, min_size);
  auto sized = (*opened)->Detect(Photo("sample1.jpg"));
  ASSERT_TRUE(sized.ok()) << sized.status().ToString();
  ASSERT_EQ(sized->faces.size(), 1u);
  EXPECT_FLOAT_EQ(sized->faces[0].score, bigger[0].score);
  EXPECT_FLOAT_EQ(sized->faces[0].x1, bigger[0].x1);

  options.min_face_size = -1;
  auto refused = Detector::Open(options);
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.status().message(), "min_face_size: -1 is out of range; allowed: 0 to 100000");
}

TEST(DetectorShutdown, AnswersEverythingInFlightExactlyOnce) {
  DetectorOptions options = TestOptions();
  options.plan_batch_sizes.clear();  // no warm-up: this test is about the shutdown
  auto opened = Detector::Open(options);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  std::unique_ptr<Detector> detector = std::move(opened).value();
  EXPECT_TRUE(detector->info().buffer_plan.empty());

  constexpr int kRequests = 48;
  const std::vector<uint8_t> photo = Photo("grace_hopper.jpg");
  std::mutex mu;
  std::vector<int> calls(kRequests, 0);
  int done = 0, unavailable = 0;
  std::atomic<bool> stop_submitting{false};
  std::thread submitter([&] {
    for (int i = 0; i < kRequests; ++i) {
      if (i == kRequests / 2) stop_submitting = true;  // the main thread shuts down now
      detector->DetectAsync(photo, [&, i](StatusOr<DetectResult> r) {
        std::lock_guard<std::mutex> lock(mu);
        ++calls[i];
        if (r.ok()) {
          ++done;
          EXPECT_EQ(r->faces.size(), 1u);
        } else {
          EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().ToString();
          EXPECT_NE(r.status().message().find("shut down"), std::string::npos);
          ++unavailable;
        }
      });
    }
  });
  while (!stop_submitting) std::this_thread::yield();
  detector->Shutdown();
  submitter.join();
  {
    std::lock_guard<std::mutex> lock(mu);
    for (int i = 0; i < kRequests; ++i) EXPECT_EQ(calls[i], 1) << "request " << i;
    EXPECT_EQ(done + unavailable, kRequests);
    EXPECT_GE(done, kRequests / 2) << "everything accepted before the shutdown is answered";
  }
  // Later calls fail at once, naming the shutdown.
  auto after = detector->Detect(photo);
  ASSERT_FALSE(after.ok());
  EXPECT_EQ(after.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(after.status().message().find("shut down"), std::string::npos);
  detector->Shutdown();  // idempotent
  const DetectorStats stats = detector->stats();
  EXPECT_EQ(stats.submitted, kRequests + 1);
  EXPECT_EQ(stats.completed + stats.failed, kRequests + 1);
  detector.reset();
}

TEST(DetectorOpen, BadOptionsNameTheOptionAndTheAllowedValues) {
  struct Case {
    std::function<void(DetectorOptions&)> change;
    StatusCode code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {[](DetectorOptions& o) { o.model = "yolo"; }, StatusCode::kInvalidArgument,
       "model: model 'yolo' is not known; allowed: ssd, blazeface, mogface"},
      {[](DetectorOptions& o) { o.precision = "int4"; }, StatusCode::kInvalidArgument,
       "precision: precision 'int4' is not known; allowed: fp32, bf16, fp16, tf32, int8, auto"},
      {[](DetectorOptions& o) { o.device = "tpu"; }, StatusCode::kInvalidArgument,
       "device: device 'tpu'"},
      {[](DetectorOptions& o) { o.scheduler = "fifo"; }, StatusCode::kInvalidArgument,
       "scheduler: "},
      {[](DetectorOptions& o) { o.int8_float_layers = "all"; }, StatusCode::kInvalidArgument,
       "int8_float_layers: 'all' is not known; allowed: first,heads, first, heads, none"},
      {[](DetectorOptions& o) { o.max_batch_size = 0; }, StatusCode::kInvalidArgument,
       "max_batch_size: 0 is out of range; allowed: 1 to 1024"},
      {[](DetectorOptions& o) { o.score_threshold = 5; }, StatusCode::kInvalidArgument,
       "score_threshold: 5 is out of range; allowed: 0 to 1"},
      {[](DetectorOptions& o) { o.max_faces = -1; }, StatusCode::kInvalidArgument,
       "max_faces: -1 is out of range; allowed: 1 to 10000"},
      {[](DetectorOptions& o) { o.queue_capacity = 0; }, StatusCode::kInvalidArgument,
       "queue_capacity: 0 is out of range"},
      {[](DetectorOptions& o) { o.memory_fraction = 0; }, StatusCode::kInvalidArgument,
       "memory_fraction: 0 is out of range; allowed: 0.01 to 1"},
      {[](DetectorOptions& o) { o.cudnn_workspace_mb = int64_t{1} << 50; },
       StatusCode::kInvalidArgument, "cudnn_workspace_mb: 1125899906842624 is out of range"},
      {[](DetectorOptions& o) {
         o.plan_batch_sizes = {4, 2};
       },
       StatusCode::kInvalidArgument,
       "plan_batch_sizes: 2 after 4; list the sizes in increasing order"},
      {[](DetectorOptions& o) { o.postprocess_threads = 0; }, StatusCode::kInvalidArgument,
       "postprocess_threads: 0 is out of range; allowed: 1 to 64"},
      {[](DetectorOptions& o) { o.weights = "x.pt"; }, StatusCode::kInvalidArgument,
       "weights and synthetic_weights are for model mogface"},
      {[](DetectorOptions& o) { o.input_policy = "crop"; }, StatusCode::kInvalidArgument,
       "input_policy: input policy 'crop' is not known; allowed: bucket, modelscope"},
      {[](DetectorOptions& o) { o.model_dir = "/nonexistent/ssd"; }, StatusCode::kNotFound,
       "/nonexistent/ssd"},
  };
  std::vector<Case> all = cases;
  if (!HostCpu().RunsBf16()) {  // a CPU without AVX-512 (or MOGSERVE_CPU_ISA=avx2)
    all.push_back({[](DetectorOptions& o) { o.precision = "bf16"; }, StatusCode::kUnsupported,
                   "precision bf16 needs a CPU with AVX-512"});
  }
  for (const Case& c : all) {
    DetectorOptions options = TestOptions();
    c.change(options);
    auto opened = Detector::Open(options);
    ASSERT_FALSE(opened.ok()) << c.message;
    SCOPED_TRACE(opened.status().ToString());
    EXPECT_EQ(opened.status().code(), c.code);
    EXPECT_NE(opened.status().message().find(c.message), std::string::npos);
  }
}

// The defaults are defined once: the library's options are the scheduler's own.
double Ms(scheduler::Duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

TEST(DetectorOptionsDefaults, AgreeWithTheScheduler) {
  const DetectorOptions o;
  const scheduler::SchedulerConfig s;
  EXPECT_EQ(o.scheduler, scheduler::PolicyName(s.policy));
  EXPECT_EQ(o.max_batch_size, s.max_batch_size);
  EXPECT_DOUBLE_EQ(o.max_delay_ms, Ms(s.max_delay));
  EXPECT_EQ(o.max_batch_pixels, s.max_batch_pixels);
  EXPECT_EQ(o.queue_capacity, s.queue_capacity_requests);
  EXPECT_EQ(o.queue_capacity_bytes, s.queue_capacity_bytes);
  EXPECT_DOUBLE_EQ(o.request_timeout_ms, Ms(s.default_timeout));
  EXPECT_DOUBLE_EQ(o.latency_target_ms, Ms(s.latency_target));
}

}  // namespace
}  // namespace mogserve
