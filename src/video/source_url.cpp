#include "video/source_url.h"

#include <array>
#include <cctype>

namespace mogserve::video {
namespace {

struct SchemeName {
  std::string_view prefix;  // lower case, without "://"
  SourceScheme scheme;
};

constexpr std::array<SchemeName, 9> kSchemes = {{
    {"file", SourceScheme::kFile},
    {"rtsp", SourceScheme::kRtsp},
    {"rtsps", SourceScheme::kRtsp},
    {"rtmp", SourceScheme::kRtmp},
    {"rtmps", SourceScheme::kRtmp},
    {"http", SourceScheme::kHttp},
    {"https", SourceScheme::kHttp},
    {"udp", SourceScheme::kUdp},
    {"tcp", SourceScheme::kTcp},
}};

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool IsSchemeChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.';
}

// Where the authority that starts at `begin` ends: the first '/', '?', '#' or whitespace. The
// split FFmpeg's av_url_split makes too, so what it would send as credentials is what we hide.
size_t AuthorityEnd(std::string_view text, size_t begin) {
  size_t i = begin;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '/' || c == '?' || c == '#' || std::isspace(static_cast<unsigned char>(c))) break;
    ++i;
  }
  return i;
}

}  // namespace

StatusOr<SourceScheme> ParseSourceScheme(std::string_view source) {
  if (source.empty()) return InvalidArgument("empty video source");
  const size_t sep = source.find("://");
  size_t scheme_end = 0;
  while (scheme_end < source.size() && IsSchemeChar(source[scheme_end])) ++scheme_end;
  if (sep == std::string_view::npos || sep != scheme_end || sep == 0) {
    // Without "scheme://" it is a path (FFmpeg also reads "file:clip.mp4" as one).
    return SourceScheme::kFile;
  }
  const std::string scheme = Lower(source.substr(0, sep));
  for (const SchemeName& s : kSchemes) {
    if (s.prefix == scheme) return s.scheme;
  }
  return InvalidArgument("unsupported video source scheme '" + scheme +
                         "://'; supported: a file path, file, rtsp(s), rtmp(s), http(s), udp, "
                         "tcp");
}

std::string RedactCredentials(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t copied = 0;
  for (size_t sep = text.find("://"); sep != std::string_view::npos;
       sep = text.find("://", sep + 3)) {
    const size_t begin = sep + 3;
    const size_t end = AuthorityEnd(text, begin);
    const size_t at = text.rfind('@', end == 0 ? 0 : end - 1);
    if (at == std::string_view::npos || at < begin || at >= end) continue;
    out.append(text.substr(copied, begin - copied));
    out.append("***");
    copied = at;  // keeps the '@' and the host after it
  }
  out.append(text.substr(copied));
  return out;
}

std::vector<std::pair<std::string, std::string>> FormatOptions(SourceScheme scheme,
                                                               const SourceTimeouts& timeouts,
                                                               RtspTransport rtsp_transport,
                                                               bool listen) {
  const std::string io_us = std::to_string(timeouts.io.count() * 1000);
  switch (scheme) {
    case SourceScheme::kFile:
      return {};
    case SourceScheme::kRtsp:
      if (listen) {
        return {{"rtsp_transport", rtsp_transport == RtspTransport::kTcp ? "tcp" : "udp"},
                {"rtsp_flags", "listen"},
                {"timeout", io_us}};
      }
      return {{"rtsp_transport", rtsp_transport == RtspTransport::kTcp ? "tcp" : "udp"},
              {"timeout", io_us}};
    case SourceScheme::kUdp:
      // A socket buffer of ~1 s of a 20 Mbit/s stream, so a busy decoder does not lose packets;
      // overrun_nonfatal keeps reading after an overflow instead of failing the stream.
      return {{"timeout", io_us}, {"fifo_size", "1000000"}, {"overrun_nonfatal", "1"}};
    case SourceScheme::kTcp:
      if (listen) return {{"timeout", io_us}, {"listen", "1"}};
      return {{"timeout", io_us}};
    case SourceScheme::kHttp:
      // live_start_index: an HLS playlist is joined at its newest segment (the default, 3 from
      // the end, starts seconds behind); other formats ignore the option.
      return {{"rw_timeout", io_us}, {"live_start_index", "-1"}};
    case SourceScheme::kRtmp:
      if (listen) return {{"rw_timeout", io_us}, {"listen", "1"}};
      return {{"rw_timeout", io_us}};
  }
  return {};
}

bool ListenAllowed(SourceScheme scheme) {
  return scheme == SourceScheme::kRtsp || scheme == SourceScheme::kRtmp ||
         scheme == SourceScheme::kTcp;
}

}  // namespace mogserve::video
