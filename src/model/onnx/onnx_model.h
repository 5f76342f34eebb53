// A face detector from any ONNX file (`--model FILE.onnx`, `--model-family auto|NAME`): the file
// read and made static at the family's input size, its family detected from the outputs
// (family.h) or named, its network imported into the plan (onnx_network.h) and decoded by the
// family's own rules. Decoders built: scrfd (insightface SCRFD: det_10g, det_2.5g, det_500m and
// the exports of its training code; and insightface's RetinaFace files, `--model-family
// retinaface`, which its model_zoo/retinaface.py decodes as scrfd.py does) and yunet (OpenCV's YuNet 2023mar and the exports of
// libfacedetection.train). The other known families are recognised and refused with that reason.
// Torch-free.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "model/face_model.h"
#include "model/onnx/family.h"
#include "model/onnx/onnx_network.h"
#include "model/onnx/scrfd.h"
#include "model/onnx/yunet.h"
#include "mogserve/status.h"

namespace mogserve::model::onnx {

// Loads `path` as a detector of `family` ("auto": detected). Errors name the file: unreadable or
// not ONNX (kInvalidData), no known family or a family without a decoder yet, an operator or a
// node the plan does not take (kUnsupported).
StatusOr<std::unique_ptr<FaceModel>> LoadOnnxDetector(const std::string& path,
                                                      const std::string& family = "auto");

// "auto, scrfd, retinaface, yunet, ultraface, blazeface": what --model-family takes.
std::string FamilyChoices();

// insightface SCRFD as a FaceModel: a fixed square canvas (the file's own side, or insightface's
// default 640 for a dynamic input) filled as insightface does (FitRule::kInsightFace), input
// (x − 127.5) / 128 in RGB, decoded by DecodeScrfd, boxes clipped to the picture.
class ScrfdModel final : public FaceModel {
 public:
  // name: "scrfd", or "retinaface" for insightface's RetinaFace files (the same rules).
  ScrfdModel(ImportedNetwork imported, PreparedWeights weights, ScrfdConfig config,
             std::string name = "scrfd");

  std::string name() const override { return name_; }
  int fixed_side() const override { return config_.input_height; }
  image::FitRule fixed_fit() const override { return image::FitRule::kInsightFace; }
  // insightface's: score 0.5, NMS at IoU 0.4.
  DetectOptions default_detect_options() const override;

 private:
  std::vector<Detection> Decode(const OutputRows& rows,
                                const DetectOptions& options) const override;

  std::string name_;
  ScrfdConfig config_;
  std::vector<OutputSource> outputs_;  // scores per stride, boxes per stride[, landmarks per stride]
};

// OpenCV's YuNet as a FaceModel, run as FaceDetectorYN runs it: each picture at its own size,
// padded bottom-right with zeros to multiples of 32 (ShapeBuckets::Native; a fixed-size file too,
// as OpenCV sets the input shape), B, G, R values 0..255 unscaled, decoded by DecodeYunet, boxes
// clipped to the picture.
class YunetModel final : public FaceModel {
 public:
  YunetModel(ImportedNetwork imported, PreparedWeights weights, std::vector<OutputSource> heads);

  std::string name() const override { return "yunet"; }
  int multiple() const override { return 32; }
  int native_multiple() const override { return 32; }
  // FaceDetectorYN::create's: score 0.9, NMS at IoU 0.3.
  DetectOptions default_detect_options() const override;

 private:
  std::vector<Detection> Decode(const OutputRows& rows,
                                const DetectOptions& options) const override;

  YunetConfig config_;
  std::vector<OutputSource> heads_;  // cls, obj, bbox, kps, each for strides 8, 16, 32
};

}  // namespace mogserve::model::onnx
