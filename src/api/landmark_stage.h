// The 68-point landmark stage (`landmarks: auto|68`): face-api's landmark net
// (model/face_landmark_68.h) run on each image's faces after decoding, batched per image, on the
// post-processing threads (pipeline::FaceStage). It reads the faces from the image's canvas, the
// picture as the detector saw it (a 4000 px photo is a 512 px canvas for the SSD): faces larger
// than 112 canvas pixels are scaled down for the net anyway, smaller ones are scaled up from
// the canvas rather than from the full picture.
//
// Crop as face-api's extractFaceTensors + NetInput.toBatchTensor(112, centred): the box (in
// canvas pixels, corners rounded outwards, clipped to the picture), padded to a square with black
// centred on the short side (the odd pixel after), resized bilinearly (half-pixel centres) to
// 112x112. Points from the square back through the crop and the letterbox to picture pixels.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "model/face_landmark_68.h"
#include "pipeline/face_stage.h"

namespace mogserve::api {

// What the stage writes into each face.
enum class LandmarkOutput {
  kFive,       // Detection::landmarks (five points), replacing the model's own
  kFiveAnd68,  // and Detection::landmarks68
};

class LandmarkStage final : public pipeline::FaceStage {
 public:
  // The net from `model_dir` (its files as scripts/setup.sh fetches them) on `engine_options`'
  // device, in FP32 whatever the detector's precision (the net is 53 M multiply-adds a face).
  static StatusOr<std::unique_ptr<LandmarkStage>> Create(const std::string& model_dir,
                                                         engine::EngineOptions engine_options,
                                                         LandmarkOutput output);

  Status Apply(std::span<const uint8_t> canvas, const image::Letterbox& letterbox,
               std::vector<Detection>& faces) const override;

  // The faces a forward pass takes at most; more are run in several passes.
  static constexpr int kMaxBatch = 16;

 private:
  LandmarkStage(std::unique_ptr<engine::Engine> prototype, std::unique_ptr<engine::Engine> warm,
                LandmarkOutput output);
  // An idle instance (a new one when every instance is busy) and its return.
  StatusOr<std::unique_ptr<engine::Engine>> Take() const;
  void Give(std::unique_ptr<engine::Engine> engine) const;

  LandmarkOutput output_;
  // Runs nothing: NewInstance's source, so that no instance is asked for another while it runs.
  std::unique_ptr<engine::Engine> prototype_;
  mutable std::mutex mu_;
  // Instances not running now (one per post-processing thread at most); guarded by mu_.
  mutable std::vector<std::unique_ptr<engine::Engine>> idle_;
};

// `landmarks: off` with a model that has its own: takes them away.
class NoLandmarks final : public pipeline::FaceStage {
 public:
  Status Apply(std::span<const uint8_t>, const image::Letterbox&,
               std::vector<Detection>& faces) const override {
    for (Detection& face : faces) face.landmarks.clear();
    return Status::Ok();
  }
};

// The crop of one face for the net: 112x112x3 RGB from `canvas`, and the map from the net's
// relative points (0..1 of the square) to picture pixels. Exposed for tests.
struct LandmarkCrop {
  std::vector<uint8_t> pixels;
  // picture = (origin + relative · side) · to_source, per axis
  double origin_x = 0, origin_y = 0, side = 0;
  double to_source_x = 1, to_source_y = 1;
};
LandmarkCrop CutLandmarkCrop(std::span<const uint8_t> canvas, const image::Letterbox& letterbox,
                             const Detection& face);

}  // namespace mogserve::api
