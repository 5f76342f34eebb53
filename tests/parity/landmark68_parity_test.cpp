// The CPU engine (LibTorch/oneDNN, FP32) running face-api's landmark net against the independent
// Python reference (tests/reference/landmark68_ref.py) on Grace Hopper's face: the plan's
// standalone activations and its dense layer as the backend runs them, one crop alone and in a
// padded batch of three.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/engine.h"
#include "golden.h"
#include "model/face_landmark_68.h"

namespace mogserve::model {
namespace {

TEST(Landmark68Parity, CpuEngineMatchesThePythonReference) {
  auto net = FaceLandmark68Model::Load(std::string(MOGSERVE_MODELS_DIR) + "/" + kLandmark68Folder);
  ASSERT_TRUE(net.ok()) << net.status().ToString();
  LoadedModel loaded;
  loaded.model = std::move(*net);
  auto engine = engine::CreateEngine(loaded, engine::EngineOptions{});
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  auto rgb = ReadFileBytes(golden::GoldenPath("landmark68_grace_hopper.rgb"));
  auto bin = ReadFileBytes(golden::GoldenPath("landmark68_grace_hopper.bin"));
  ASSERT_TRUE(rgb.ok() && bin.ok());
  std::vector<double> want(2 * kLandmark68Points);
  ASSERT_EQ(bin->size(), want.size() * 8);
  std::memcpy(want.data(), bin->data(), bin->size());
  // A black crop between two copies of the face: rows may not leak into each other.
  const std::vector<uint8_t> black(rgb->size(), 0);
  for (const int rows : {1, 3}) {
    SCOPED_TRACE(rows);
    engine::CanvasBatch batch;
    batch.width = batch.height = kLandmark68InputSide;
    batch.canvases = {rgb->data()};
    if (rows == 3) batch.canvases = {rgb->data(), black.data(), rgb->data()};
    batch.padded_batch_size = rows == 3 ? 4 : 1;
    auto out = (*engine)->Forward(batch);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    for (int row = 0; row < rows; row += 2) {
      const std::vector<Point> points = Points68(out->raw_of(row));
      ASSERT_EQ(points.size(), size_t{kLandmark68Points});
      double worst = 0;
      for (int i = 0; i < kLandmark68Points; ++i) {
        worst = std::max(
            {worst, std::abs(points[i].x - want[2 * i]), std::abs(points[i].y - want[2 * i + 1])});
      }
      std::printf("landmark net, CPU FP32, %d rows, row %d: max|dpoint| %.2e of the crop\n", rows,
                  row, worst);
      // FP32 through 32 convolutions: 4.3e-8 of the crop measured (AVX2, Zen 3); 1e-5 leaves
      // room for other summation orders (AVX-512) and is still 0.001 px of the 112 px crop.
      EXPECT_LE(worst, 1e-5);
    }
    if (rows == 3) {
      const std::vector<Point> dark = Points68(out->raw_of(1));
      double moved = 0;
      for (int i = 0; i < kLandmark68Points; ++i) moved += std::abs(dark[i].x - want[2 * i]);
      EXPECT_GT(moved, 0.05) << "the black crop gave the face's points";
    }
  }
}

}  // namespace
}  // namespace mogserve::model
