// Aligned face crops for face-recognition models: a face's five landmarks (Detection::landmarks)
// mapped onto insightface's ArcFace template (arcface_dst) by the least-squares similarity
// (rotation, uniform scale, translation; Umeyama, as insightface's estimate_norm), the picture
// warped through it with bilinear sampling and a black border (as its norm_crop does with
// cv2.warpAffine). The 112x112 crop insightface's ArcFace and deepface take.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "mogserve/detector.h"
#include "mogserve/result.h"
#include "mogserve/status.h"

namespace mogserve {

struct AlignedFace {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> rgb;  // width x height x 3, row by row
};

// `picture` (the one the landmarks were found in, upright) cut to `size` x `size` around the face.
// size: a multiple of 112 or of 128 (insightface's templates; 128 shifts the face 8/128 right).
// InvalidArgument naming what is wrong: not five points, a bad size, points all in one place,
// pixels without data or with a stride shorter than a row.
StatusOr<AlignedFace> AlignFace(const Pixels& picture, std::span<const Point> landmarks,
                                int size = 112);

}  // namespace mogserve
