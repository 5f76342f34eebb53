// What happens to faces once a model has found them, the same for every model and path (the
// pipeline's post-processing, TTA): which of them an image keeps.
#pragma once

#include <vector>

#include "mogserve/result.h"

namespace mogserve {

// The faces an image keeps of those a model decoded (every face NMS kept, in original-picture
// pixels, highest score first): those whose shorter side is at least options.min_face_size, then
// the first options.max_faces (<= 0: all). The one place every answer is cut, whatever the model.
std::vector<Detection> KeepFaces(std::vector<Detection> faces, const DetectOptions& options);

}  // namespace mogserve
