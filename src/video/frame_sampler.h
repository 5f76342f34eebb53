// FrameSampler: which frames a detect_fps keeps — the first of each 1/fps slot of presentation
// time, so a 25 fps source at 5 fps gives frames 0, 5, 10, ... and a variable frame rate still
// gets one per slot. Used by StreamIngest and `mogserve anonymize`.
#pragma once

#include <cmath>
#include <cstdint>

namespace mogserve::video {

class FrameSampler {
 public:
  explicit FrameSampler(double fps) : fps_(fps) {}  // fps <= 0: every frame
  bool Take(double pts_s) {
    if (fps_ <= 0) return true;
    // The epsilon keeps pts values that are exact multiples (0.2 s at 5 fps) in their own slot.
    const auto slot = static_cast<int64_t>(std::floor(pts_s * fps_ + 1e-6));
    if (slot <= last_slot_) return false;
    last_slot_ = slot;
    return true;
  }

 private:
  double fps_;
  int64_t last_slot_ = -1;
};

}  // namespace mogserve::video
