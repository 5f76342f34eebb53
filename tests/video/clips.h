// The test clips make_clip.sh encodes at build time (see its header for what each holds).
#pragma once

#include <string>

namespace mogserve::video::testing {

inline std::string ClipPath(const std::string& name) {
  return std::string(MOGSERVE_TEST_CLIP_DIR) + "/" + name;
}

inline constexpr int kClipFrames = 250;  // 10 s at 25 fps
inline constexpr int kClipWidth = 1280;
inline constexpr int kClipHeight = 720;

}  // namespace mogserve::video::testing
