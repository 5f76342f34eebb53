// CatchUp: which packets of a live source the decoder skips when reading has fallen behind the
// source (specs/video_streams.md §4). Lag = (arrival − arrival0) − (ts − ts0): how much later a
// packet is read than its timestamp says it should be, measured from the least-late packet seen
// (so packets buffered while the source was probed, or a source sending faster than real time,
// never count as late). Above `start_lag` the decoder drops non-key packets until the lag is
// below `stop_lag`; having dropped one, it drops every packet up to the next keyframe (later
// frames may reference the dropped one), and keyframes always pass (decoding restarts there).
// A timestamp jump (a source restarting its clock, a wrap) starts the measure again.
// Dropping before decoding is what saves the CPU a backlog would cost.
// Pure: the caller passes the times. Not thread-safe (one per reader).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

namespace mogserve::video {

struct CatchUpOptions {
  std::chrono::milliseconds start_lag{1000};
  std::chrono::milliseconds stop_lag{200};
  // A timestamp that moves this far from the previous packet's (forward), or back at all beyond
  // `max_reorder`, is a discontinuity, not lag.
  std::chrono::milliseconds max_jump{10'000};
  std::chrono::milliseconds max_reorder{1000};
};

class CatchUp {
 public:
  explicit CatchUp(CatchUpOptions options = {}) : options_(options) {}

  // For each video packet in read order: when it was read (seconds on any steady clock), its
  // timestamp in seconds (nullopt: none; such a packet never starts or ends a catch-up), and
  // whether it is a keyframe. True: drop it without decoding.
  bool Drop(double arrival_s, std::optional<double> ts_s, bool key);

  // The lag of the latest packet with a timestamp, in seconds (0 before the first).
  double lag_s() const { return lag_s_; }
  // Whether the lag is being caught up (non-key packets are dropped).
  bool catching_up() const { return catching_up_; }

 private:
  CatchUpOptions options_;
  std::optional<double> origin_s_;  // the least (arrival − ts) seen since the last discontinuity
  std::optional<double> last_ts_s_;
  double lag_s_ = 0;
  bool catching_up_ = false;
  bool need_key_ = false;  // a packet was dropped: the ones up to the next keyframe go too
};

}  // namespace mogserve::video
