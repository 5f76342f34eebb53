// face-api's SSD-MobileNetV1 face detector (spec: shipped_face_models.md §2) written once as a
// torch-free Network: TF SAME padding, depthwise BatchNorms folded at load, ReLU6, and per level
// one fused 1x1 head whose outputs are [A·4 box encodings | A face logits] (the class head's
// background and unused logits are never computed). The output stage gives scores = sigmoid(face
// logit) and the raw (ty, tx, th, tw) encodings; model/ssd_box_coder.h decodes them.
#pragma once

#include <memory>

#include "model/network.h"

namespace mogserve::model {

inline constexpr int kSsdInputSize = 512;
inline constexpr const char* kSsdWeightsName = "ssd_mobilenetv1_model";
// The weights file's anchor table, read by the post-processing.
inline constexpr const char* kSsdAnchorsKey = "Output/extra_dim";

std::shared_ptr<const Network> BuildSsdMobilenetV1Network();

}  // namespace mogserve::model
