// The acceptance test (DESIGN.md §7): every hand-checked face in tests/data is found with
// IoU >= 0.5 and nothing else is found, at the default options, through the whole offline
// pipeline (decode, letterbox, batched forward pass, decoding, NMS, mapping back to pixels).
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "image/decode.h"
#include "model_test_util.h"
#include "pipeline/offline_detector.h"

namespace mogserve::pipeline {
namespace {

using testing_util::BoxString;
using testing_util::GreedyMatch;
using testing_util::GroundTruthPhoto;
using testing_util::LoadGroundTruth;
using testing_util::PhotoPath;
using testing_util::ReadBytes;

// Sanity of the data itself: enough faces, and at least one photo without any.
void ExpectGroundTruthIsUsable() {
  const std::vector<GroundTruthPhoto> photos = LoadGroundTruth();
  ASSERT_GE(photos.size(), 6u);
  size_t faces = 0, photos_without_faces = 0;
  for (const GroundTruthPhoto& p : photos) {
    SCOPED_TRACE(p.name);
    EXPECT_FALSE(ReadBytes(PhotoPath(p.name)).empty()) << "missing " << PhotoPath(p.name);
    faces += p.faces.size();
    if (p.faces.empty()) ++photos_without_faces;
    for (const Detection& f : p.faces) {
      EXPECT_GT(f.width(), 10.0f);
      EXPECT_GT(f.height(), 10.0f);
    }
  }
  EXPECT_GE(faces, 15u);
  EXPECT_GE(photos_without_faces, 1u);
}

class RealPhotosTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto created = engine::CreateEngine(testing_util::TestEngineOptions());
    if (!created.ok()) {
      load_error_ = new std::string(created.status().ToString());
      return;
    }
    engine_ = std::move(created).value().release();
  }
  static void TearDownTestSuite() {
    delete engine_;
    engine_ = nullptr;
    delete load_error_;
    load_error_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(engine_, nullptr) << *load_error_; }

  static engine::Engine* engine_;
  static std::string* load_error_;
};

engine::Engine* RealPhotosTest::engine_ = nullptr;
std::string* RealPhotosTest::load_error_ = nullptr;

TEST_F(RealPhotosTest, EveryFaceIsFoundAndNothingElse) {
  {
    SCOPED_TRACE("ground truth sanity");
    ExpectGroundTruthIsUsable();
  }
  const std::vector<GroundTruthPhoto> photos = LoadGroundTruth();
  ASSERT_FALSE(photos.empty());
  std::vector<ImageSource> sources;
  for (const GroundTruthPhoto& p : photos) sources.push_back({p.name, PhotoPath(p.name), {}});

  OfflineOptions options;
  options.batch_size = 4;
  ASSERT_EQ(options.detect.score_threshold, 0.5f);  // the defaults are what is being accepted
  std::map<std::string, SourceResult> results;
  std::vector<std::string> order;
  OfflineDetector(*engine_, options).Run(sources, [&](const SourceResult& r) {
    order.push_back(r.id);
    results[r.id] = r;
  });
  ASSERT_EQ(order.size(), photos.size());

  int total_faces = 0, found = 0, false_positives = 0;
  for (size_t i = 0; i < photos.size(); ++i) {
    const GroundTruthPhoto& photo = photos[i];
    SCOPED_TRACE(photo.name);
    EXPECT_EQ(order[i], photo.name) << "results must come in input order";
    const SourceResult& r = results[photo.name];
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    const std::vector<Detection>& faces = r.result.faces;

    // Size of the upright picture, from an independent full-size decode.
    auto decoded = image::Decode(ReadBytes(PhotoPath(photo.name)));
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    EXPECT_EQ(r.result.width, decoded->width);
    EXPECT_EQ(r.result.height, decoded->height);
    EXPECT_GE(r.result.timing.batch_size, 1);
    EXPECT_LE(r.result.timing.batch_size, 4);

    for (size_t k = 0; k < faces.size(); ++k) {
      const Detection& d = faces[k];
      EXPECT_GE(d.x1, 0.0f);
      EXPECT_GE(d.y1, 0.0f);
      EXPECT_LE(d.x2, static_cast<float>(r.result.width));
      EXPECT_LE(d.y2, static_cast<float>(r.result.height));
      EXPECT_LT(d.x1, d.x2);
      EXPECT_LT(d.y1, d.y2);
      EXPECT_GT(d.score, 0.5f);
      EXPECT_LE(d.score, 1.0f);
      if (k > 0) {
        EXPECT_GE(faces[k - 1].score, d.score) << "faces must be sorted by score";
      }
    }

    const std::vector<int> gt_to_det = GreedyMatch(photo.faces, faces, 0.5f);
    std::vector<bool> det_matched(faces.size(), false);
    std::ostringstream details;
    details << photo.name << " (" << r.result.width << "x" << r.result.height
            << "): " << photo.faces.size() << " true faces, " << faces.size() << " detections\n";
    for (size_t g = 0; g < photo.faces.size(); ++g) {
      details << "  truth " << BoxString(photo.faces[g]) << " → ";
      if (gt_to_det[g] < 0) {
        details << "MISSED\n";
        continue;
      }
      det_matched[gt_to_det[g]] = true;
      const Detection& d = faces[gt_to_det[g]];
      details << BoxString(d) << " IoU " << IoU(photo.faces[g], d) << "\n";
    }
    int photo_found = 0, photo_fp = 0;
    for (int m : gt_to_det) photo_found += m >= 0;
    for (size_t k = 0; k < faces.size(); ++k) {
      if (det_matched[k]) continue;
      ++photo_fp;
      details << "  FALSE POSITIVE " << BoxString(faces[k]) << "\n";
    }
    EXPECT_EQ(photo_found, static_cast<int>(photo.faces.size())) << details.str();
    EXPECT_EQ(photo_fp, 0) << details.str();
    total_faces += static_cast<int>(photo.faces.size());
    found += photo_found;
    false_positives += photo_fp;
  }
  EXPECT_GE(total_faces, 15);
  std::printf("real photos: %d/%d faces found, %d false positives on %zu photos\n", found,
              total_faces, false_positives, photos.size());
}

}  // namespace
}  // namespace mogserve::pipeline
