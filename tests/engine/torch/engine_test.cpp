// Tests of engine::Engine: creation errors, options, MAC count, the NCHW path, and the caching
// allocator's steady state (no system allocation per request once warm).
#include "engine/engine.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ATen/Parallel.h>

#include <unistd.h>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/cpu_info.h"
#include "engine/caching_cpu_allocator.h"
#include "model_test_util.h"
#include "pipeline/prepared_image.h"

namespace mogserve::engine {
namespace {

using ::testing::HasSubstr;

api::EngineSetup ModelOptions() {
  return testing_util::TestEngineOptions();
}

// A deterministic 512x512 RGB noise pattern.
std::vector<uint8_t> PatternCanvas(int seed) {
  std::vector<uint8_t> canvas(512 * 512 * 3);
  for (size_t i = 0; i < canvas.size(); ++i) {
    canvas[i] = static_cast<uint8_t>((i * 2654435761u + static_cast<size_t>(seed) * 97) >> 13);
  }
  return canvas;
}

double MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    m = std::max(m, static_cast<double>(std::abs(a[i] - b[i])));
  }
  return m;
}

// MACs of the pruned SSD-MobileNetV1 at 512x512, from the layer table of the spec (§2.3) and the
// fused heads (A*4 box + A face outputs per level).
int64_t SpecMacs() {
  int64_t macs = 0;
  int side = 256;  // conv_0: 3x3 s2, 3→32
  macs += int64_t{32} * 3 * 9 * side * side;
  struct Block {
    int in, out, stride;
  };
  const Block blocks[13] = {{32, 64, 1},    {64, 128, 2},  {128, 128, 1}, {128, 256, 2},
                            {256, 256, 1},  {256, 512, 2}, {512, 512, 1}, {512, 512, 1},
                            {512, 512, 1},  {512, 512, 1}, {512, 512, 1}, {512, 1024, 2},
                            {1024, 1024, 1}};
  for (const Block& b : blocks) {
    side /= b.stride;
    macs += int64_t{9} * b.in * side * side;      // depthwise 3x3
    macs += int64_t{b.in} * b.out * side * side;  // pointwise
  }
  EXPECT_EQ(side, 16);
  // Extra layers: (1x1 in→mid at side) then (3x3 s2 mid→out at side/2), four times.
  const int extras[4][3] = {{1024, 256, 512}, {512, 128, 256}, {256, 128, 256}, {256, 64, 128}};
  for (const auto& e : extras) {
    macs += int64_t{e[0]} * e[1] * side * side;
    side /= 2;
    macs += int64_t{e[1]} * e[2] * 9 * side * side;
  }
  EXPECT_EQ(side, 1);
  const int head_in[6] = {512, 1024, 512, 256, 256, 128};
  const int head_side[6] = {32, 16, 8, 4, 2, 1};
  const int anchors[6] = {3, 6, 6, 6, 6, 6};
  for (int l = 0; l < 6; ++l) {
    macs += int64_t{head_in[l]} * anchors[l] * 5 * head_side[l] * head_side[l];
  }
  return macs;
}

void CreateReportsBadOptionsAndMissingFiles() {
  api::EngineSetup missing;
  missing.model.source.model_dir = "/nonexistent/mogserve-models";
  auto r = testing_util::LoadEngine(missing);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound) << r.status().ToString();
  EXPECT_THAT(
      r.status().message(),
      HasSubstr("/nonexistent/mogserve-models/ssd_mobilenetv1_model-weights_manifest.json"));
  EXPECT_THAT(r.status().message(), HasSubstr("scripts/setup.sh"));

  api::EngineSetup gpu = ModelOptions();
  gpu.engine.device = "gpu";
  r = testing_util::LoadEngine(gpu);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().ToString();
  EXPECT_THAT(r.status().message(), HasSubstr("'gpu'"));
  EXPECT_THAT(r.status().message(), HasSubstr("allowed: cpu, cuda, cuda:N"));
  ASSERT_EQ(Backends().size(), 2u);
  EXPECT_STREQ(Backends()[0].device, "cpu");
  EXPECT_TRUE(Backends()[0].built);
  EXPECT_STREQ(Backends()[1].device, "cuda");

  // tf32 is a CUDA precision: the CPU backend refuses it before loading anything.
  api::EngineSetup tf32 = ModelOptions();
  tf32.engine.precision = Precision::kTf32;
  r = testing_util::LoadEngine(tf32);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("'tf32'"));

  api::EngineSetup negative = ModelOptions();
  negative.engine.cpu.threads = -1;
  r = testing_util::LoadEngine(negative);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);

  // A manifest without the network's tensors: the error names the first tensor that is missing.
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) /
                                    ("engine_empty_model_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "ssd_mobilenetv1_model-weights_manifest.json") << "[]";
  api::EngineSetup empty = ModelOptions();
  empty.model.source.model_dir = dir.string();
  r = testing_util::LoadEngine(empty);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidData) << r.status().ToString();
  EXPECT_THAT(r.status().message(), HasSubstr("missing: MobilenetV1/Conv2d_0_pointwise"));
  std::filesystem::remove_all(dir);
}

// The CPU backend's thread count is process-wide, set by the first engine (ctest runs each test
// in its own process, so this one's engine is the first).
void ThreadsMacsAndEmptyBatch() {
  api::EngineSetup options = ModelOptions();
  options.engine.cpu.threads = 3;  // neither the default (0) nor the number of cores here
  auto created = testing_util::LoadEngine(options);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  Engine& engine = **created;
  EXPECT_EQ(engine.info().threads, 3);
  EXPECT_EQ(at::get_num_threads(), 3);
  EXPECT_THAT(engine.info().Describe(), HasSubstr("3 threads"));
  EXPECT_THAT(engine.info().Describe(), HasSubstr("channels-last"));
  EXPECT_EQ(engine.info().fixed_side, 512);
  EXPECT_EQ(engine.info().model, "ssd-mobilenetv1");

  // Spec: 3.14 GMAC for the full model; ours computes 1 of the 3 class outputs per anchor.
  EXPECT_GT(engine.MacsPerImage(512, 512), int64_t{2'900'000'000});
  EXPECT_LT(engine.MacsPerImage(512, 512), int64_t{3'200'000'000});
  EXPECT_EQ(engine.MacsPerImage(512, 512), SpecMacs());

  auto empty = engine.Forward(CanvasBatch{});
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(empty.status().message(), HasSubstr("empty"));

  // A second engine with the same count shares the setting; another count is refused (0 means
  // one per core) instead of silently changing the first engine's threads.
  auto same = testing_util::LoadEngine(options);
  ASSERT_TRUE(same.ok()) << same.status().ToString();
  EXPECT_EQ((*same)->info().threads, 3);
  options.engine.cpu.threads = 0;
  auto all_cores = testing_util::LoadEngine(options);
  if (AvailableCores() != 3) {
    ASSERT_FALSE(all_cores.ok());
    EXPECT_EQ(all_cores.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_THAT(all_cores.status().message(), HasSubstr("runs 3 intra-op threads"));
  }
  EXPECT_EQ(at::get_num_threads(), 3);
}

TEST(EngineTest, CreateErrorsThreadsMacsAndEmptyBatch) {
  {
    SCOPED_TRACE("CreateReportsBadOptionsAndMissingFiles");
    CreateReportsBadOptionsAndMissingFiles();
  }
  {
    SCOPED_TRACE("ThreadsMacsAndEmptyBatch");
    ThreadsMacsAndEmptyBatch();
  }
}

TEST(EngineTest, SteadyStateForwardsAllocateNothingFromTheSystem) {
  auto created = testing_util::LoadEngine(ModelOptions());
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  Engine& engine = **created;
  ASSERT_TRUE(CachingCpuAllocatorInstalled());

  const std::vector<uint8_t> a = PatternCanvas(1), b(512 * 512 * 3, 128);
  CanvasBatch batch;
  batch.width = batch.height = 512;
  batch.canvases = {a.data(), b.data()};
  for (int warm_up = 0; warm_up < 2; ++warm_up) {
    auto out = engine.Forward(batch);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
  }
  const AllocatorStats before = GetAllocatorStats();
  std::vector<BatchOutputs> outs;
  for (int i = 0; i < 2; ++i) {
    auto out = engine.Forward(batch);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    outs.push_back(std::move(out).value());
  }
  const AllocatorStats after = GetAllocatorStats();
  EXPECT_EQ(after.system_allocations, before.system_allocations)
      << "steady-state forward passes allocated from the system";
  EXPECT_GT(after.cache_hits, before.cache_hits + 2 * 30) << "every layer's output is a cache hit";
  EXPECT_EQ(after.in_use_bytes, before.in_use_bytes) << "a forward pass leaked tensor memory";
  EXPECT_GT(after.cached_bytes, 0);

  // The outputs: [2, 5118, 4] encodings and [2, 5118] probabilities, repeatable.
  const BatchOutputs& o = outs[0];
  EXPECT_EQ(o.batch, 2);
  EXPECT_EQ(o.anchors, 5118);
  EXPECT_EQ(o.box_encodings.size(), 2u * 5118 * 4);
  EXPECT_EQ(o.scores.size(), 2u * 5118);
  for (float s : o.scores) {
    ASSERT_TRUE(s >= 0.0f && s <= 1.0f) << s;
  }
  EXPECT_EQ(MaxAbsDiff(outs[0].scores, outs[1].scores), 0.0);
  EXPECT_EQ(MaxAbsDiff(outs[0].box_encodings, outs[1].box_encodings), 0.0);
  // Different images give different outputs (the two slots are not mixed up or shared).
  const size_t half = o.box_encodings.size() / 2;
  EXPECT_GT(MaxAbsDiff({o.box_encodings.begin(), o.box_encodings.begin() + half},
                       {o.box_encodings.begin() + half, o.box_encodings.end()}),
            0.1);
}

TEST(EngineTest, NchwAndChannelsLastAgree) {
  const std::vector<uint8_t> bytes =
      testing_util::ReadBytes(testing_util::PhotoPath("sample1.jpg"));
  auto prepared = pipeline::PrepareImage(bytes, pipeline::ShapeBuckets::FixedSquare(512), {});
  ASSERT_TRUE(prepared.ok()) << prepared.status().ToString();
  CanvasBatch batch;
  batch.width = batch.height = 512;
  batch.canvases = {prepared->canvas.data.data()};

  BatchOutputs outputs[2];
  for (bool channels_last : {true, false}) {
    api::EngineSetup options = ModelOptions();
    options.engine.cpu.channels_last = channels_last;
    auto created = testing_util::LoadEngine(options);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    EXPECT_THAT((*created)->info().Describe(), HasSubstr(channels_last ? "channels-last" : "NCHW"));
    auto out = (*created)->Forward(batch);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    outputs[channels_last ? 0 : 1] = std::move(out).value();
  }
  const double score_diff = MaxAbsDiff(outputs[0].scores, outputs[1].scores);
  const double box_diff = MaxAbsDiff(outputs[0].box_encodings, outputs[1].box_encodings);
  std::printf("channels-last vs NCHW: max |score diff| %.3g, max |encoding diff| %.3g\n",
              score_diff, box_diff);
  // Measured on the 2-core development machine: 8.3e-7 and 4.8e-5 (different oneDNN kernels).
  EXPECT_LE(score_diff, 1e-5);
  EXPECT_LE(box_diff, 5e-4);
}

}  // namespace
}  // namespace mogserve::engine
