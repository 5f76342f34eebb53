// Shared by the host tests of the CUDA lowering (program_test.cpp) and the GPU tests of the CUDA
// engine (gpu/cuda_engine_gpu_test.cpp): random pictures of two sizes on equal canvases, the FP64
// reference's outputs for them, and the errors of a backend's outputs against those.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "image/image.h"
#include "model/face_model.h"
#include "model/layer_plan.h"
#include "model/reference/reference_executor.h"

namespace mogserve::engine::cuda {

// Two pictures on h x w canvases: one filling it, one of about 2/3 x 1/2 of it at the top-left;
// the canvas padding holds random bytes the model must ignore.
struct ParityInputs {
  std::vector<std::vector<uint8_t>> canvases;
  std::vector<int> picture_size;  // per canvas: the picture's width, height
  std::vector<image::Image> pictures;
};
ParityInputs MakeParityInputs(int h, int w, uint32_t seed);

// The FP64 reference executor's outputs of each picture (model's network, weights and input
// normalisation; `plan` of the canvas size).
std::vector<model::ReferenceOutputs> ReferenceOutputsOf(const model::FaceModel& model,
                                                         const model::LayerPlan& plan,
                                                         const ParityInputs& inputs);

struct ParityErrors {
  double conf = 0;     // max |Δ| of the sigmoid scores
  double loc_rel = 0;  // ‖Δloc‖ / ‖loc‖
  bool finite = true;  // no NaN / Inf in the outputs under test (else conf = loc_rel = inf)
};
// conf: [images, anchors], loc: [images, anchors, 4] against want (one per image).
ParityErrors CompareOutputs(std::span<const float> conf, std::span<const float> loc,
                            const std::vector<model::ReferenceOutputs>& want);

}  // namespace mogserve::engine::cuda
