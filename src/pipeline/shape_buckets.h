// Shape buckets (DESIGN.md §4): how a picture becomes a canvas the engine can batch — the resize
// rule of the input policy, and the set of canvas shapes equal-shaped batches are formed from.
// Torch-free; the scheduler only sees the bucket index.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "image/resize.h"
#include "mogserve/status.h"

namespace mogserve::pipeline {

enum class InputPolicy {
  kFixed,       // SSD: letterbox into one fixed square
  kBucket,      // long side scaled to a target (up or down); the smallest bucket that holds it
  kModelScope,  // MogFace as ModelScope runs it: original size, long side > 1500 → 1000
};
// "fixed", "bucket", "modelscope".
const char* InputPolicyName(InputPolicy policy);
// "bucket", "modelscope" (the user-selectable ones); InvalidArgument naming them otherwise.
StatusOr<InputPolicy> ParseInputPolicy(std::string_view name);

struct CanvasShape {
  int width = 0;
  int height = 0;
};

class ShapeBuckets {
 public:
  // Every picture letterboxed into one side x side square (the embedded SSD: 512).
  static ShapeBuckets FixedSquare(int side);
  // Long side scaled to `target`; canvases target x target and the 4:3 and 16:9 shapes in both
  // orientations, every side rounded up to `multiple` (MogFace: 32, spec §10.1). A picture goes
  // to the smallest-area canvas that holds it. target must be a positive multiple of `multiple`.
  static StatusOr<ShapeBuckets> Target(int target, int multiple);
  // ModelScope: the picture keeps its size unless its long side exceeds 1500, then it is
  // scaled to 1000; padded bottom/right to multiples of `multiple`, one bucket per padded shape
  // (up to 1504 x 1504 for multiple 32).
  static ShapeBuckets ModelScope(int multiple);

  InputPolicy policy() const { return policy_; }
  int size() const;                     // number of buckets
  CanvasShape shape(int bucket) const;  // 0 <= bucket < size()

  struct Placement {
    int bucket = 0;
    image::Letterbox letterbox;  // canvas = the bucket's shape; content = the scaled picture
  };
  // Where a width x height picture goes (both >= 1).
  Placement Place(int width, int height) const;

  // The smallest long side a decoder may reduce a picture to (JPEG DCT scaling) without losing
  // pixels the canvas needs.
  int MinDecodeLongSide() const;

  // "bucket 640 (640x640, 640x480, 480x640, 640x384, 384x640)", "modelscope (pad to 32)", ...
  std::string Describe() const;

 private:
  InputPolicy policy_ = InputPolicy::kFixed;
  int target_ = 0;
  int multiple_ = 1;
  std::vector<CanvasShape> shapes_;  // kFixed, kBucket: explicit; kModelScope: a grid
  int grid_ = 0;                     // kModelScope: cells per side
};

}  // namespace mogserve::pipeline
