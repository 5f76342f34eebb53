#include "pipeline/shape_buckets.h"

#include <algorithm>
#include <cmath>

namespace mogserve::pipeline {
namespace {

// ModelScope's rule (spec §6b): pictures whose long side exceeds this are scaled so that it
// becomes kModelScopeResizedSide.
constexpr int kModelScopeMaxSide = 1500;
constexpr int kModelScopeResizedSide = 1000;

int RoundUp(int side, int multiple) {
  return (side + multiple - 1) / multiple * multiple;
}

}  // namespace

const char* InputPolicyName(InputPolicy policy) {
  switch (policy) {
    case InputPolicy::kFixed:
      return "fixed";
    case InputPolicy::kBucket:
      return "bucket";
    case InputPolicy::kModelScope:
      return "modelscope";
  }
  return "?";
}

StatusOr<InputPolicy> ParseInputPolicy(std::string_view name) {
  if (name == "bucket") return InputPolicy::kBucket;
  if (name == "modelscope") return InputPolicy::kModelScope;
  return InvalidArgument("input policy '" + std::string(name) +
                         "' is not known; allowed: bucket, modelscope");
}

ShapeBuckets ShapeBuckets::FixedSquare(int side) {
  ShapeBuckets b;
  b.policy_ = InputPolicy::kFixed;
  b.target_ = side;
  b.shapes_ = {{side, side}};
  return b;
}

StatusOr<ShapeBuckets> ShapeBuckets::Target(int target, int multiple) {
  if (multiple < 1) return InvalidArgument("bucket multiple must be >= 1");
  if (target < multiple || target % multiple != 0 || target > 4096) {
    return InvalidArgument("target size " + std::to_string(target) + " must be a multiple of " +
                           std::to_string(multiple) + " between " + std::to_string(multiple) +
                           " and 4096");
  }
  ShapeBuckets b;
  b.policy_ = InputPolicy::kBucket;
  b.target_ = target;
  b.multiple_ = multiple;
  const int four_three = RoundUp((target * 3 + 3) / 4, multiple);
  const int sixteen_nine = RoundUp((target * 9 + 15) / 16, multiple);
  b.shapes_ = {{target, target},
               {target, four_three},
               {four_three, target},
               {target, sixteen_nine},
               {sixteen_nine, target}};
  // Small targets collapse shapes onto each other; keep each once, in this order.
  std::vector<CanvasShape> unique;
  for (const CanvasShape& s : b.shapes_) {
    const bool seen = std::any_of(unique.begin(), unique.end(), [&](const CanvasShape& u) {
      return u.width == s.width && u.height == s.height;
    });
    if (!seen) unique.push_back(s);
  }
  b.shapes_ = std::move(unique);
  return b;
}

ShapeBuckets ShapeBuckets::ModelScope(int multiple) {
  ShapeBuckets b;
  b.policy_ = InputPolicy::kModelScope;
  b.multiple_ = std::max(1, multiple);
  b.grid_ = RoundUp(kModelScopeMaxSide, b.multiple_) / b.multiple_;
  return b;
}

int ShapeBuckets::size() const {
  return policy_ == InputPolicy::kModelScope ? grid_ * grid_ : static_cast<int>(shapes_.size());
}

CanvasShape ShapeBuckets::shape(int bucket) const {
  if (policy_ == InputPolicy::kModelScope) {
    return {(bucket % grid_ + 1) * multiple_, (bucket / grid_ + 1) * multiple_};
  }
  return shapes_[bucket];
}

ShapeBuckets::Placement ShapeBuckets::Place(int width, int height) const {
  Placement p;
  width = std::max(width, 1);
  height = std::max(height, 1);
  const int long_side = std::max(width, height);
  if (policy_ == InputPolicy::kFixed) {
    p.letterbox = image::FitLetterbox(width, height, target_, target_);
    return p;
  }
  const double scale = policy_ == InputPolicy::kBucket ? static_cast<double>(target_) / long_side
                       : long_side > kModelScopeMaxSide
                           ? static_cast<double>(kModelScopeResizedSide) / long_side
                           : 1.0;
  const int content_w = std::max(1, static_cast<int>(std::lround(width * scale)));
  const int content_h = std::max(1, static_cast<int>(std::lround(height * scale)));
  CanvasShape canvas;
  if (policy_ == InputPolicy::kModelScope) {
    canvas = {RoundUp(content_w, multiple_), RoundUp(content_h, multiple_)};
    p.bucket = (canvas.height / multiple_ - 1) * grid_ + (canvas.width / multiple_ - 1);
  } else {
    int64_t best_area = -1;
    for (int i = 0; i < static_cast<int>(shapes_.size()); ++i) {
      const CanvasShape& s = shapes_[i];
      if (s.width < content_w || s.height < content_h) continue;
      const int64_t area = int64_t{s.width} * s.height;
      if (best_area < 0 || area < best_area) {
        best_area = area;
        p.bucket = i;
      }
    }
    canvas = shapes_[p.bucket];  // the square always holds the content
  }
  p.letterbox =
      image::PlaceLetterbox(width, height, content_w, content_h, canvas.width, canvas.height);
  return p;
}

int ShapeBuckets::MinDecodeLongSide() const {
  // ModelScope keeps pictures up to 1500 px as they are: a DCT-halved one of them would be
  // under 1000, so only pictures over 2000 px (which it scales to 1000 anyway) get reduced.
  return policy_ == InputPolicy::kModelScope ? kModelScopeResizedSide : target_;
}

std::string ShapeBuckets::Describe() const {
  if (policy_ == InputPolicy::kModelScope) {
    return "modelscope (original size, long side > 1500 scaled to 1000, padded to multiples of " +
           std::to_string(multiple_) + ")";
  }
  std::string text = std::string(InputPolicyName(policy_)) + " " + std::to_string(target_) + " (";
  for (size_t i = 0; i < shapes_.size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(shapes_[i].width) + "x" + std::to_string(shapes_[i].height);
  }
  return text + ")";
}

}  // namespace mogserve::pipeline
