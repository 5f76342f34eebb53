// Shape buckets (DESIGN.md §4): how a picture becomes a canvas the engine can batch — the resize
// rule of the input policy, and the set of canvas shapes equal-shaped batches are formed from.
// Torch-free; the scheduler only sees the bucket index.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "image/resize.h"
#include "mogserve/status.h"

namespace mogserve::pipeline {

enum class InputPolicy {
  kFixed,       // SSD: letterbox into one fixed square
  kBucket,      // long side scaled to a target (up or down); the smallest bucket that holds it
  kModelScope,  // MogFace as ModelScope runs it: exact size, long side > 1500 → 1000 by cv2
  kNative,      // YuNet as OpenCV's FaceDetectorYN runs it: own size, padded to multiples of 32
};
// "fixed", "bucket", "modelscope", "native".
const char* InputPolicyName(InputPolicy policy);
// "bucket", "modelscope" (the user-selectable ones); InvalidArgument naming them otherwise.
StatusOr<InputPolicy> ParseInputPolicy(std::string_view name);

struct CanvasShape {
  int width = 0;
  int height = 0;
};

class ShapeBuckets {
 public:
  // Every picture letterboxed into one side x side square (the embedded SSD: 512) by `rule`.
  static ShapeBuckets FixedSquare(int side, image::FitRule rule = image::FitRule::kRounded);
  // Long side scaled to `target`; canvases target x target and the 4:3 and 16:9 shapes in both
  // orientations, every side rounded up to `multiple` (MogFace: 32, spec §10.1). A picture goes
  // to the smallest-area canvas that holds it. target must be a positive multiple of `multiple`.
  static StatusOr<ShapeBuckets> Target(int target, int multiple);
  // ModelScope's pipeline exactly (specs/mogface.md §6b): the picture keeps its size unless its
  // long side exceeds 1500; then cv2.resize scales it by s = 1000 / long side (INTER_LINEAR,
  // sides round(n·s); reproduced by image/opencv_resize.h) and boxes are divided by s. No
  // padding: each exact shape is its own bucket. Buckets are kModelScopeExactSlots slots given
  // to shapes as they first arrive (shared by copies of this object; thread-safe); once all
  // are taken, further new shapes are padded to multiples of `overflow_multiple` into a grid of
  // buckets after the slots (Describe() says so), so a long-running server keeps a bounded
  // scheduler.
  static ShapeBuckets ModelScope(int overflow_multiple);
  static constexpr int kModelScopeExactSlots = 2048;
  // OpenCV's FaceDetectorYN (setInputSize to the picture's size): the picture keeps its size and
  // is padded bottom-right with zeros to multiples of `multiple` (YuNet: 32). A long side over
  // kNativeMaxSide (mogserve's bound; OpenCV has none) is first scaled to it by cv2.resize's
  // bilinear, boxes mapped back. Buckets: the grid of padded shapes up to the bound.
  static ShapeBuckets Native(int multiple);
  static constexpr int kNativeMaxSide = 2048;

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
  // pixels the canvas needs; 0 = no reduction (modelscope: cv2.resize runs on the full picture).
  int MinDecodeLongSide() const;

  // "bucket 640 (640x640, 640x480, 480x640, 640x384, 384x640)", "modelscope (pad to 32)", ...
  std::string Describe() const;

 private:
  InputPolicy policy_ = InputPolicy::kFixed;
  int target_ = 0;
  int multiple_ = 1;
  image::FitRule fit_ = image::FitRule::kRounded;  // kFixed
  struct ExactSlots;  // kModelScope: the slot table

  Placement PlaceModelScope(int width, int height) const;
  Placement PlaceNative(int width, int height) const;

  std::vector<CanvasShape> shapes_;  // kFixed, kBucket: explicit
  int grid_ = 0;                     // kModelScope (overflow), kNative: grid cells per side
  std::shared_ptr<ExactSlots> exact_;
};

}  // namespace mogserve::pipeline
