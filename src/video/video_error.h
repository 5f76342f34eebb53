// Why a video source stopped: a stable code (what a caller acts on: retry or give up) and a
// message for people, which names the phase and the source without its credentials.
#pragma once

#include <string>

namespace mogserve::video {

enum class VideoErrorCode {
  kBadUrl,            // not a source we can read (scheme, malformed URL)
  kUnreachable,       // connection refused, no route, DNS failure
  kTimeout,           // no answer / no data within the open or I/O timeout
  kNotFound,          // no such file, HTTP/RTSP 404
  kUnauthorized,      // HTTP/RTSP 401/403, permission denied: retrying would lock accounts
  kNoVideoStream,     // the source has no video (audio only, data only)
  kUnsupportedCodec,  // video, but not a codec we decode (--video-codecs)
  kInvalidData,       // not a container FFmpeg recognises, or broken beyond decoding
  kIoError,           // any other read error (connection reset, ...)
  kCancelled,         // Interrupt() was called
};

// "bad_url", "unreachable", "timeout", "not_found", "unauthorized", "no_video_stream",
// "unsupported_codec", "invalid_data", "io_error", "cancelled".
const char* VideoErrorName(VideoErrorCode code);

struct VideoError {
  VideoErrorCode code = VideoErrorCode::kIoError;
  std::string message;  // credentials already removed
};

}  // namespace mogserve::video
