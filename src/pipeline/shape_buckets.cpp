#include "pipeline/shape_buckets.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <mutex>

#include "common/enum_names.h"
#include "image/opencv_resize.h"

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

// Slot i holds an exact shape once assigned (width << 16 | height, 0 while free); shape() reads
// it without the lock.
struct ShapeBuckets::ExactSlots {
  std::mutex mu;
  std::map<std::pair<int, int>, int> index;  // guarded by mu
  std::atomic<uint32_t> packed[kModelScopeExactSlots] = {};
};

constexpr EnumNames<InputPolicy, InputPolicy::kNative> kInputPolicyNames{
    {"fixed", "bucket", "modelscope", "native"}};

const char* InputPolicyName(InputPolicy policy) {
  return NameOf(kInputPolicyNames, policy, "?");
}

StatusOr<InputPolicy> ParseInputPolicy(std::string_view name) {
  if (name == "bucket") return InputPolicy::kBucket;
  if (name == "modelscope") return InputPolicy::kModelScope;
  return InvalidArgument("input policy '" + std::string(name) +
                         "' is not known; allowed: bucket, modelscope");
}

ShapeBuckets ShapeBuckets::FixedSquare(int side, image::FitRule rule) {
  ShapeBuckets b;
  b.policy_ = InputPolicy::kFixed;
  b.fit_ = rule;
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

ShapeBuckets ShapeBuckets::ModelScope(int overflow_multiple) {
  ShapeBuckets b;
  b.policy_ = InputPolicy::kModelScope;
  b.multiple_ = std::max(1, overflow_multiple);
  b.grid_ = RoundUp(kModelScopeMaxSide, b.multiple_) / b.multiple_;
  b.exact_ = std::make_shared<ExactSlots>();
  return b;
}

ShapeBuckets ShapeBuckets::Native(int multiple) {
  ShapeBuckets b;
  b.policy_ = InputPolicy::kNative;
  b.multiple_ = std::max(1, multiple);
  b.target_ = kNativeMaxSide;
  b.grid_ = RoundUp(kNativeMaxSide, b.multiple_) / b.multiple_;
  return b;
}

int ShapeBuckets::size() const {
  switch (policy_) {
    case InputPolicy::kModelScope:
      return kModelScopeExactSlots + grid_ * grid_;
    case InputPolicy::kNative:
      return grid_ * grid_;
    default:
      return static_cast<int>(shapes_.size());
  }
}

CanvasShape ShapeBuckets::shape(int bucket) const {
  if (policy_ == InputPolicy::kModelScope) {
    if (bucket < kModelScopeExactSlots) {
      // A free slot stands for the largest shape it may get (buffer plans stay conservative).
      const uint32_t p = exact_->packed[bucket].load(std::memory_order_acquire);
      if (p == 0) return {kModelScopeMaxSide, kModelScopeMaxSide};
      return {static_cast<int>(p >> 16), static_cast<int>(p & 0xffff)};
    }
    const int cell = bucket - kModelScopeExactSlots;
    return {(cell % grid_ + 1) * multiple_, (cell / grid_ + 1) * multiple_};
  }
  if (policy_ == InputPolicy::kNative) {
    return {(bucket % grid_ + 1) * multiple_, (bucket / grid_ + 1) * multiple_};
  }
  return shapes_[bucket];
}

ShapeBuckets::Placement ShapeBuckets::PlaceModelScope(int width, int height) const {
  const int long_side = std::max(width, height);
  const double s = long_side > kModelScopeMaxSide
                       ? static_cast<double>(kModelScopeResizedSide) / long_side
                       : 1.0;
  const int content_w = std::max(1, image::OpenCvScaledSide(width, s));
  const int content_h = std::max(1, image::OpenCvScaledSide(height, s));
  Placement p;
  CanvasShape canvas{content_w, content_h};
  {
    std::lock_guard<std::mutex> lock(exact_->mu);
    auto it = exact_->index.find({content_w, content_h});
    if (it == exact_->index.end() && exact_->index.size() < kModelScopeExactSlots) {
      const int slot = static_cast<int>(exact_->index.size());
      exact_->packed[slot].store(static_cast<uint32_t>(content_w) << 16 | content_h,
                                 std::memory_order_release);
      it = exact_->index.emplace(std::make_pair(content_w, content_h), slot).first;
    }
    if (it != exact_->index.end()) {
      p.bucket = it->second;
    } else {  // every slot taken: pad into the overflow grid
      canvas = {RoundUp(content_w, multiple_), RoundUp(content_h, multiple_)};
      p.bucket = kModelScopeExactSlots + (canvas.height / multiple_ - 1) * grid_ +
                 (canvas.width / multiple_ - 1);
    }
  }
  p.letterbox =
      image::PlaceLetterbox(width, height, content_w, content_h, canvas.width, canvas.height);
  // Boxes are divided by ModelScope's own factor on both axes, not by the rounded side ratio.
  p.letterbox.to_source_x = p.letterbox.to_source_y = 1.0 / s;
  p.letterbox.filter = image::ResizeFilter::kOpenCvLinear;
  return p;
}

ShapeBuckets::Placement ShapeBuckets::PlaceNative(int width, int height) const {
  const int long_side = std::max(width, height);
  const double s =
      long_side > kNativeMaxSide ? static_cast<double>(kNativeMaxSide) / long_side : 1.0;
  const int content_w = std::clamp(image::OpenCvScaledSide(width, s), 1, kNativeMaxSide);
  const int content_h = std::clamp(image::OpenCvScaledSide(height, s), 1, kNativeMaxSide);
  const CanvasShape canvas{RoundUp(content_w, multiple_), RoundUp(content_h, multiple_)};
  Placement p;
  p.bucket = (canvas.height / multiple_ - 1) * grid_ + (canvas.width / multiple_ - 1);
  p.letterbox =
      image::PlaceLetterbox(width, height, content_w, content_h, canvas.width, canvas.height);
  p.letterbox.to_source_x = p.letterbox.to_source_y = 1.0 / s;
  p.letterbox.filter = image::ResizeFilter::kOpenCvLinear;
  return p;
}

ShapeBuckets::Placement ShapeBuckets::Place(int width, int height) const {
  Placement p;
  width = std::max(width, 1);
  height = std::max(height, 1);
  const int long_side = std::max(width, height);
  if (policy_ == InputPolicy::kFixed) {
    p.letterbox = image::FitLetterbox(width, height, target_, target_, fit_);
    return p;
  }
  if (policy_ == InputPolicy::kModelScope) return PlaceModelScope(width, height);
  if (policy_ == InputPolicy::kNative) return PlaceNative(width, height);
  const double scale = static_cast<double>(target_) / long_side;
  const int content_w = std::max(1, static_cast<int>(std::lround(width * scale)));
  const int content_h = std::max(1, static_cast<int>(std::lround(height * scale)));
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
  const CanvasShape canvas = shapes_[p.bucket];  // the square always holds the content
  p.letterbox =
      image::PlaceLetterbox(width, height, content_w, content_h, canvas.width, canvas.height);
  return p;
}

int ShapeBuckets::MinDecodeLongSide() const {
  // ModelScope and insightface resize the full picture with cv2: a DCT-reduced decode would not
  // match them.
  if (policy_ == InputPolicy::kModelScope || policy_ == InputPolicy::kNative ||
      fit_ == image::FitRule::kInsightFace) {
    return 0;
  }
  return target_;
}

std::string ShapeBuckets::Describe() const {
  if (policy_ == InputPolicy::kModelScope) {
    return "modelscope (exact size, long side > 1500 scaled to 1000 by cv2.resize's bilinear; " +
           std::to_string(kModelScopeExactSlots) + " exact-shape buckets, later new shapes " +
           "padded to multiples of " + std::to_string(multiple_) + ")";
  }
  if (policy_ == InputPolicy::kNative) {
    return "native (own size padded to multiples of " + std::to_string(multiple_) +
           " as OpenCV's FaceDetectorYN; long side > " + std::to_string(kNativeMaxSide) +
           " scaled to it by cv2.resize's bilinear)";
  }
  std::string text = std::string(InputPolicyName(policy_)) + " " + std::to_string(target_) + " (";
  for (size_t i = 0; i < shapes_.size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(shapes_[i].width) + "x" + std::to_string(shapes_[i].height);
  }
  if (fit_ == image::FitRule::kInsightFace) text += ", filled as insightface does: cv2.resize";
  return text + ")";
}

}  // namespace mogserve::pipeline
