// KalmanBox: a constant-velocity Kalman filter over one face box, the motion model of a Tracker
// track (as in SORT / DeepSORT / ByteTrack, but time-continuous).
//
// State [cx, cy, w, h, vcx, vcy, vw, vh]: the box's centre and size in pixels and their rates in
// pixels per second; measurement [cx, cy, w, h]. Time is continuous: Predict takes the seconds
// since the last state (0 changes nothing; 0.2 s when only 5 frames a second are detected), so
// the same filter serves every detect rate.
//
// Noise follows ByteTrack / DeepSORT, proportional to the box's height h (the scale that makes a
// jitter of a few pixels large for a small face and small for a big one), with its weights of
// 1/20 for positions and 1/160 per frame for rates, tuned there for 30 frames per second:
//   measurement:  std h/20 for each of cx, cy, w, h;
//   process:      per 1/30 s, std h/20 for cx, cy, w, h and h/160 px per frame (h·30/160 px/s)
//                 for their rates; the variances grow linearly with dt, so one step of 0.2 s
//                 adds about the noise of six steps of 1/30 s;
//   first box:    std 2·h/20 for cx, cy, w, h and 10·h/160 px per frame for the rates, which
//                 start at 0.
//
// Small fixed-size matrices written out by hand: no Eigen, no LibTorch in this layer.
#pragma once

#include <array>

#include "mogserve/result.h"

namespace mogserve::track {

// Rates of the box in pixels per second.
struct BoxVelocity {
  double cx_px_s = 0, cy_px_s = 0, w_px_s = 0, h_px_s = 0;
};

class KalmanBox {
 public:
  // Starts at `first`'s box (its corners; score and landmarks are not used), at rest.
  explicit KalmanBox(const Detection& first);

  // Advances the state by `dt_s` seconds (constant velocity). dt_s <= 0 (or NaN) does nothing.
  void Predict(double dt_s);

  // Corrects the state with a measured box at the current time (Predict to its time first).
  // A box with non-finite corners is ignored.
  void Update(const Detection& measured);

  // The state's box: corners only (score 0, no landmarks, track_id 0). Width and height are at
  // least 1 px, whatever the rates drove them to.
  Detection Box() const;

  // The box the state predicts `dt_s` seconds from now (dt_s <= 0: Box()); the filter is not
  // changed.
  Detection PredictedBox(double dt_s) const;

  BoxVelocity Velocity() const;

 private:
  static constexpr int kDim = 8;   // state
  static constexpr int kMeas = 4;  // measurement
  using State = std::array<double, kDim>;
  using Covariance = std::array<double, kDim * kDim>;  // row-major

  State x_{};
  Covariance p_{};
};

}  // namespace mogserve::track
