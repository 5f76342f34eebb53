// face-api.js's 68-point landmark net (FaceLandmark68Net, MIT; the files
// face_landmark_68_model-weights_manifest.json + .bin of @vladmandic/face-api, fetched by
// scripts/setup.sh into models/face_landmark_68): the second stage that gives five landmarks to
// the faces of models without their own (the SSD, MogFace). Followed: face-api.js
// src/faceFeatureExtractor/FaceFeatureExtractor.ts, denseBlock.ts, src/faceProcessor/
// FaceProcessor.ts, src/faceLandmarkNet/FaceLandmark68NetBase.ts.
//
// Input: the face's box cut from the picture, padded to a square with black centred on the short
// side, resized to 112x112, (v − mean RGB (122.782, 117.001, 104.298)) / 255. Four dense blocks
// (112 → 56 → 28 → 14 → 7; 32, 64, 128, 256 channels), a 7x7 average pool and a fully connected
// layer 256 → 136: x, y of the 68 points (iBUG 300-W order) relative to the padded square.
// The pool and the layer are both linear, so the network applies the layer to each of the 49
// cells (a 1x1 convolution, the raw output [7, 7, 136]) and Points68 averages them: the same
// numbers as pooling first, for 49 × 256 × 136 more multiply-adds (3 % of the net's 53 M).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "model/face_model.h"
#include "model/tfjs_weights.h"
#include "mogserve/result.h"
#include "mogserve/status.h"

namespace mogserve::model {

inline constexpr const char* kLandmark68WeightsName = "face_landmark_68_model";
inline constexpr const char* kLandmark68Folder = "face_landmark_68";
inline constexpr int kLandmark68InputSide = 112;
inline constexpr int kLandmark68Points = 68;

std::shared_ptr<const Network> BuildFaceLandmark68Network();

// The net as a model an engine runs (engine::CreateEngine takes FaceModels). It detects nothing:
// its rows are read by Points68, not decoded into faces, so Decode gives none.
class FaceLandmark68Model final : public FaceModel {
 public:
  static StatusOr<std::unique_ptr<FaceLandmark68Model>> Create(const TfjsWeights& weights);
  // Reads `<dir>/face_landmark_68_model-weights_manifest.json` and its shard, then Create().
  static StatusOr<std::unique_ptr<FaceLandmark68Model>> Load(const std::string& dir);

  std::string name() const override { return "face-landmark-68"; }
  int fixed_side() const override { return kLandmark68InputSide; }
  DetectOptions default_detect_options() const override { return DetectOptions{}; }

 private:
  using FaceModel::FaceModel;
  std::vector<Detection> Decode(const OutputRows&, const DetectOptions&) const override {
    return {};
  }
};

// The 68 points of one crop's raw output (49 cells × 136), relative to the padded square: (0, 0)
// its top-left corner, (1, 1) its bottom-right.
std::vector<Point> Points68(std::span<const float> raw);

// Five points (Landmark order: the picture's left eye first) from 68: the eye centres (means of
// points 36-41 and 42-47), the nose tip (30) and the mouth corners (48, 54).
std::vector<Point> FivePointsOf68(std::span<const Point> points);

}  // namespace mogserve::model
