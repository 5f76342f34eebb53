// FFmpeg's error codes as text, for the video module's own sources (FFmpeg headers stay inside
// src/video/).
#pragma once

extern "C" {
#include <libavutil/error.h>
}

#include <string>

namespace mogserve::video {

inline std::string AvErrorText(int rc) {
  char text[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(rc, text, sizeof(text));
  return text;
}

}  // namespace mogserve::video
