// Which detector family an ONNX graph belongs to, from its outputs' names and shapes (the
// `--model-family auto` rule); each family has its own decoder. Torch-free.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/onnx/static_graph.h"

namespace mogserve::model::onnx {

enum class Family { kScrfd, kRetinaFace, kYuNet, kUltraFace, kBlazeFace };

const std::vector<Family>& AllFamilies();
std::string FamilyName(Family family);  // "scrfd", "retinaface", "yunet", "ultraface", "blazeface"
std::optional<Family> ParseFamily(const std::string& name);

struct FamilyMatch {
  std::optional<Family> family;  // nullopt: no known family
  std::string reason;            // why (or, without a family, what the outputs look like)
};

// Matches the outputs of `graph` (inferred at a batch of 1) against each family's layout:
//   scrfd:      6, 9, 10 or 15 outputs: per stride (3 or 5 of them: 8, 16, 32[, 64, 128]) a score
//               [.., A, 1], a box [.., A, 4] and with landmarks a [.., A, 10] output, A = the
//               stride's cells × anchors (1 or 2), scores first (insightface's scrfd.py)
//   retinaface: 3 outputs [1, A, 4] boxes, [1, A, 2] two-class scores and [1, A, 10] landmarks
//               over the 8/16/32 prior boxes (the biubug6 / Pytorch_Retinaface export)
//   yunet:      12 outputs cls_S, obj_S, bbox_S, kps_S for S = 8, 16, 32 (OpenCV's 2023mar)
//   ultraface:  2 outputs [1, A, 2] scores and [1, A, 4] boxes (Linzaer's version-RFB/slim)
//   blazeface:  2 outputs [1, A, 16] regressors and [1, A, 1] scores (MediaPipe BlazeFace)
FamilyMatch DetectFamily(const StaticGraph& graph);

}  // namespace mogserve::model::onnx
