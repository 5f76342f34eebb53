// Video source URLs: which transport a URL names, the FFmpeg options each transport needs, and the
// URL as it may be shown (credentials removed). Plain strings only: no FFmpeg here, so the rules
// are unit-tested without opening anything.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mogserve/status.h"

namespace mogserve::video {

enum class SourceScheme {
  kFile,  // a path or file:
  kRtsp,  // rtsp:, rtsps:
  kRtmp,  // rtmp:, rtmps:
  kHttp,  // http:, https: (MPEG-TS, HLS, MJPEG multipart)
  kUdp,   // udp: MPEG-TS
  kTcp,   // tcp: MPEG-TS
};

// The transport of `source`: a string without "scheme://" is a file path. InvalidArgument for an
// empty source or a scheme we do not read (the message lists the ones we do; no credentials).
StatusOr<SourceScheme> ParseSourceScheme(std::string_view source);

// Files end and may be read faster than real time; every other transport is a live source.
inline bool IsLive(SourceScheme scheme) {
  return scheme != SourceScheme::kFile;
}

// `text` with the user information of every URL in it replaced: "rtsp://user:pass@cam/x" →
// "rtsp://***@cam/x". For URLs given by users and for FFmpeg's messages, which quote them.
std::string RedactCredentials(std::string_view text);

enum class RtspTransport { kTcp, kUdp };

struct SourceTimeouts {
  std::chrono::milliseconds open{10'000};  // connect + probe, until the first frame can be decoded
  std::chrono::milliseconds io{5'000};     // one read with no data
};

// The options avformat_open_input gets for `scheme`. Each protocol names its socket timeout
// differently, in microseconds: rtsp/udp/tcp `timeout`, http/rtmp `rw_timeout` (a blanket
// `timeout` would turn an rtmp:// reader into a listener: for rtmp it means "seconds to wait
// for a publisher"). Files get none. The reader's interrupt callback enforces the same
// deadlines for every transport, so these only make FFmpeg fail earlier with its own message.
// `listen` (rtsp, rtmp, tcp only: ListenAllowed) makes FFmpeg wait for a pushing encoder.
std::vector<std::pair<std::string, std::string>> FormatOptions(SourceScheme scheme,
                                                               const SourceTimeouts& timeouts,
                                                               RtspTransport rtsp_transport,
                                                               bool listen = false);

// Whether `scheme` can listen for a pushing encoder: rtsp (RECORD), rtmp (publish), tcp.
bool ListenAllowed(SourceScheme scheme);

}  // namespace mogserve::video
