#include "pipeline/offline_detector.h"

#include <gtest/gtest.h>

#include "fake_engine.h"
#include "image/encode.h"

namespace mogserve::pipeline::testing {
namespace {

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr int kLargeFolder = 10'000;  // sanitizers are ~10x slower; the bound is the same
#else
constexpr int kLargeFolder = 100'000;
#endif

std::vector<uint8_t> Png(int tag, int width = 8, int height = 8) {
  auto png = image::EncodePng(TaggedImage(tag, width, height));
  EXPECT_TRUE(png.ok());
  return std::move(png).value();
}

OfflineOptions SmallOptions() {
  OfflineOptions o;
  o.batch_size = 4;
  o.decode_threads = 2;
  o.prefetch_batches = 1;
  o.buckets = ShapeBuckets::FixedSquare(16);
  o.detect.score_threshold = 0;
  return o;
}

TEST(OfflineDetectorTest, DeliversEveryResultInInputOrder) {
  FakeEngine engine(/*open=*/true);
  engine.FailCall(2);  // one batch fails: only its images
  OfflineDetector detector({&engine}, engine, SmallOptions());
  std::vector<ImageSource> sources;
  for (int i = 0; i < 50; ++i) {
    ImageSource s;
    s.id = "img" + std::to_string(i);
    s.bytes = i == 7 ? std::vector<uint8_t>{1, 2, 3} : Png(i + 1, 8 + i, 8);
    sources.push_back(std::move(s));
  }
  std::vector<SourceResult> results;
  detector.Run(std::move(sources), [&](const SourceResult& r) { results.push_back(r); });
  ASSERT_EQ(results.size(), 50u);
  int failed_by_engine = 0;
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(results[i].id, "img" + std::to_string(i));
    if (i == 7) {
      EXPECT_EQ(results[i].status.code(), StatusCode::kUnsupported);
      continue;
    }
    if (!results[i].status.ok()) {
      EXPECT_NE(results[i].status.message().find("fake engine failure"), std::string::npos);
      ++failed_by_engine;
      continue;
    }
    ASSERT_EQ(results[i].result.faces.size(), 1u);
    EXPECT_FLOAT_EQ(results[i].result.faces[0].score, (i + 1) / 255.f);  // its own canvas
    EXPECT_EQ(results[i].result.width, 8 + i);
    EXPECT_GE(results[i].result.timing.batch_size, 1);
  }
  EXPECT_GE(failed_by_engine, 1);
  EXPECT_LE(failed_by_engine, 4);
  EXPECT_EQ(detector.stats().images, 50);
  EXPECT_EQ(detector.stats().failed, 1 + failed_by_engine);
}

TEST(OfflineDetectorTest, UnreadableFileIsReportedAndTheJobGoesOn) {
  FakeEngine engine(/*open=*/true);
  OfflineDetector detector({&engine}, engine, SmallOptions());
  std::vector<ImageSource> sources(2);
  sources[0].id = sources[0].path = "/nonexistent/picture.jpg";
  sources[1].id = "ok";
  sources[1].bytes = Png(9);
  std::vector<SourceResult> results;
  detector.Run(std::move(sources), [&](const SourceResult& r) { results.push_back(r); });
  ASSERT_EQ(results.size(), 2u);
  EXPECT_FALSE(results[0].status.ok());
  EXPECT_TRUE(results[1].status.ok()) << results[1].status.ToString();
}

// A folder of 100 000 images: memory stays bounded by the reorder window, not by the folder.
TEST(OfflineDetectorTest, LargeFolderRunsInBoundedMemory) {
  FakeEngine engine(/*open=*/true);
  const OfflineOptions options = SmallOptions();
  OfflineDetector detector({&engine}, engine, options);
  const std::vector<uint8_t> png = Png(42);
  int64_t produced = 0;
  int64_t delivered = 0;
  int64_t max_ahead = 0;  // sources handed out but not yet delivered
  detector.Run(
      [&]() -> std::optional<ImageSource> {
        if (produced == kLargeFolder) return std::nullopt;
        ImageSource s;
        s.id = std::to_string(produced++);
        s.bytes = png;
        max_ahead = std::max(max_ahead, produced - delivered);
        return s;
      },
      [&](const SourceResult& r) {
        ASSERT_EQ(r.id, std::to_string(delivered));
        ASSERT_TRUE(r.status.ok()) << r.status.ToString();
        ++delivered;
      });
  EXPECT_EQ(delivered, kLargeFolder);
  const int window = detector.window();
  EXPECT_EQ(window, 8);  // 4 per batch x 1 instance x (1 + 1)
  const OfflineStats& s = detector.stats();
  EXPECT_LE(max_ahead, window);
  EXPECT_LE(s.peak_in_flight, window);
  EXPECT_LE(s.peak_queued_requests, window);
  EXPECT_LE(s.peak_queued_bytes, window * 16 * 16 * 3);
  EXPECT_LE(s.canvas_allocations, window + 2);  // + the decoders' buffers in hand
  EXPECT_GT(s.mean_batch_size, 1.0);            // batched, not one by one
}

}  // namespace
}  // namespace mogserve::pipeline::testing
