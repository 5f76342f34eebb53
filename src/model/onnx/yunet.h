// OpenCV's YuNet post-processing, as FaceDetectorYN does it (opencv modules/objdetect/src/
// face_detect.cpp, FaceDetectorYNImpl::postProcess, OpenCV 4.8 and later: the 2023mar outputs
// cls_S, obj_S, bbox_S, kps_S): per stride 8, 16, 32 and cell (r, c) of the padded input's grid,
// score sqrt(clamp(cls) · clamp(obj)), kept when >= the threshold; box centre (c + dx, r + dy) ·
// stride, size exp(dw, dh) · stride; landmarks (c + lx, r + ly) · stride. Then, when more than
// one face, cv::dnn::NMSBoxes on the boxes truncated to integers (Rect2i; scores > the
// threshold, stably by score, top_k, IoU with plain areas, a face kept while its IoU with every
// kept one is <= nms_iou). Torch-free.
#pragma once

#include <array>
#include <span>
#include <vector>

namespace mogserve::model::onnx {

struct YunetConfig {
  std::vector<int> strides = {8, 16, 32};
  float score_threshold = 0.9f;  // FaceDetectorYN::create's defaults
  float nms_iou = 0.3f;
  int top_k = 5000;
};

struct YunetDetection {
  float x = 0, y = 0, w = 0, h = 0;  // input pixels: top-left, size (not clipped)
  float score = 0;
  // OpenCV's right eye, left eye, nose tip, right and left mouth corner: the face's own right
  // first, i.e. the image's left eye first, as insightface orders them.
  std::array<std::array<float, 2>, 5> landmarks{};
};

// One stride's outputs of one image, rows in cell order (r · cols + c): cls [R], obj [R] (after
// the graph's sigmoid), bbox [R, 4], kps [R, 10].
struct YunetLevel {
  std::span<const float> cls, obj, bbox, kps;
};

// The faces of one image whose padded input is pad_width x pad_height (the grid of stride S has
// pad_width / S columns); levels in the config's stride order. A level whose rows do not fill
// its grid gives no faces. Highest score first.
std::vector<YunetDetection> DecodeYunet(const YunetConfig& config,
                                        std::span<const YunetLevel> levels, int pad_width,
                                        int pad_height, float score_threshold, float nms_iou);

}  // namespace mogserve::model::onnx
