#include "video/catch_up.h"

#include <algorithm>

namespace mogserve::video {

namespace {

double Seconds(std::chrono::milliseconds ms) {
  return static_cast<double>(ms.count()) / 1000.0;
}

}  // namespace

bool CatchUp::Drop(double arrival_s, std::optional<double> ts_s, bool key) {
  if (ts_s) {
    const bool jumped = last_ts_s_ && (*ts_s - *last_ts_s_ > Seconds(options_.max_jump) ||
                                       *last_ts_s_ - *ts_s > Seconds(options_.max_reorder));
    if (jumped) origin_s_.reset();
    last_ts_s_ = ts_s;
    const double offset = arrival_s - *ts_s;
    origin_s_ = origin_s_ ? std::min(*origin_s_, offset) : offset;
    lag_s_ = offset - *origin_s_;
    if (!catching_up_ && lag_s_ > Seconds(options_.start_lag)) catching_up_ = true;
    if (catching_up_ && lag_s_ < Seconds(options_.stop_lag)) catching_up_ = false;
  }
  if (key) {
    need_key_ = false;
    return false;
  }
  if (catching_up_ || need_key_) {
    need_key_ = true;
    return true;
  }
  return false;
}

}  // namespace mogserve::video
