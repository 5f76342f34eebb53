#include "track/kalman_box.h"

#include <algorithm>
#include <cmath>

namespace mogserve::track {

namespace {

constexpr double kStdPosition = 1.0 / 20.0;   // of the height, per 1/30 s frame
constexpr double kStdVelocity = 1.0 / 160.0;  // of the height per frame, per 1/30 s frame
constexpr double kFrameRate = 30.0;           // the frame the weights above were tuned for
constexpr double kMinSizePx = 1.0;

// The noise is scaled by the height; a degenerate box must still give a positive-definite
// innovation, so the scale has a floor.
double Scale(double h) {
  return std::max(h, kMinSizePx);
}

// Lower-triangular Cholesky factor of a 4x4 symmetric matrix; false when it is not positive
// definite (only possible with non-finite input, since S = P + R with R > 0).
bool Cholesky4(const std::array<double, 16>& s, std::array<double, 16>& l) {
  l.fill(0.0);
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j <= i; ++j) {
      double sum = s[i * 4 + j];
      for (int k = 0; k < j; ++k) sum -= l[i * 4 + k] * l[j * 4 + k];
      if (i == j) {
        if (!(sum > 0.0)) return false;
        l[i * 4 + i] = std::sqrt(sum);
      } else {
        l[i * 4 + j] = sum / l[j * 4 + j];
      }
    }
  }
  return true;
}

// Solves (L Lᵀ) x = b in place.
void CholeskySolve4(const std::array<double, 16>& l, std::array<double, 4>& b) {
  for (int i = 0; i < 4; ++i) {
    for (int k = 0; k < i; ++k) b[i] -= l[i * 4 + k] * b[k];
    b[i] /= l[i * 4 + i];
  }
  for (int i = 3; i >= 0; --i) {
    for (int k = i + 1; k < 4; ++k) b[i] -= l[k * 4 + i] * b[k];
    b[i] /= l[i * 4 + i];
  }
}

bool Finite(const Detection& d) {
  return std::isfinite(d.x1) && std::isfinite(d.y1) && std::isfinite(d.x2) && std::isfinite(d.y2);
}

}  // namespace

KalmanBox::KalmanBox(const Detection& first) {
  x_[0] = (static_cast<double>(first.x1) + first.x2) / 2.0;
  x_[1] = (static_cast<double>(first.y1) + first.y2) / 2.0;
  x_[2] = static_cast<double>(first.x2) - first.x1;
  x_[3] = static_cast<double>(first.y2) - first.y1;
  if (!Finite(first)) x_.fill(0.0);
  const double h = Scale(x_[3]);
  const double pos = 2.0 * kStdPosition * h;
  const double vel = 10.0 * kStdVelocity * h * kFrameRate;
  for (int i = 0; i < kMeas; ++i) {
    p_[i * kDim + i] = pos * pos;
    p_[(i + kMeas) * kDim + i + kMeas] = vel * vel;
  }
}

// x ← F x, P ← F P Fᵀ + Q(dt) with F = [I dt·I; 0 I]. Written by blocks, since F is sparse:
// P11 += dt (P12 + P21) + dt² P22, P12 += dt P22, P21 += dt P22.
void KalmanBox::Predict(double dt_s) {
  if (!(dt_s > 0.0)) return;
  const double h = Scale(x_[3]);
  for (int i = 0; i < kMeas; ++i) x_[i] += dt_s * x_[i + kMeas];
  Covariance next = p_;
  for (int i = 0; i < kMeas; ++i) {
    for (int j = 0; j < kMeas; ++j) {
      const double p12 = p_[i * kDim + j + kMeas];
      const double p21 = p_[(i + kMeas) * kDim + j];
      const double p22 = p_[(i + kMeas) * kDim + j + kMeas];
      next[i * kDim + j] += dt_s * (p12 + p21) + dt_s * dt_s * p22;
      next[i * kDim + j + kMeas] += dt_s * p22;
      next[(i + kMeas) * kDim + j] += dt_s * p22;
    }
  }
  // Random-walk noise: variance proportional to elapsed time, in units of 1/30 s frames.
  const double frames = dt_s * kFrameRate;
  const double pos = kStdPosition * h;
  const double vel = kStdVelocity * h * kFrameRate;
  for (int i = 0; i < kMeas; ++i) {
    next[i * kDim + i] += pos * pos * frames;
    next[(i + kMeas) * kDim + i + kMeas] += vel * vel * frames;
  }
  p_ = next;
}

void KalmanBox::Update(const Detection& measured) {
  if (!Finite(measured)) return;
  const std::array<double, kMeas> z = {(static_cast<double>(measured.x1) + measured.x2) / 2.0,
                                       (static_cast<double>(measured.y1) + measured.y2) / 2.0,
                                       static_cast<double>(measured.x2) - measured.x1,
                                       static_cast<double>(measured.y2) - measured.y1};
  const double r = kStdPosition * Scale(x_[3]);
  // S = H P Hᵀ + R: the top-left block of P plus the measurement noise.
  std::array<double, 16> s{};
  for (int i = 0; i < kMeas; ++i) {
    for (int j = 0; j < kMeas; ++j) s[i * 4 + j] = p_[i * kDim + j];
    s[i * 4 + i] += r * r;
  }
  std::array<double, 16> l{};
  if (!Cholesky4(s, l)) return;
  // Kᵀ = S⁻¹ (H P): one solve per state column. K S Kᵀ = K (H P), so P ← P - K (H P).
  std::array<double, kMeas * kDim> kt{};  // Kᵀ, 4 x 8
  for (int c = 0; c < kDim; ++c) {
    std::array<double, 4> col;
    for (int i = 0; i < kMeas; ++i) col[i] = p_[i * kDim + c];
    CholeskySolve4(l, col);
    for (int i = 0; i < kMeas; ++i) kt[i * kDim + c] = col[i];
  }
  std::array<double, kMeas> innovation;
  for (int i = 0; i < kMeas; ++i) innovation[i] = z[i] - x_[i];
  Covariance next = p_;
  for (int a = 0; a < kDim; ++a) {
    for (int i = 0; i < kMeas; ++i) x_[a] += kt[i * kDim + a] * innovation[i];
    for (int b = 0; b < kDim; ++b) {
      double sum = 0.0;
      for (int i = 0; i < kMeas; ++i) sum += kt[i * kDim + a] * p_[i * kDim + b];
      next[a * kDim + b] -= sum;
    }
  }
  // Rounding makes the subtraction drift from symmetric over thousands of updates.
  for (int a = 0; a < kDim; ++a) {
    for (int b = a + 1; b < kDim; ++b) {
      const double mean = (next[a * kDim + b] + next[b * kDim + a]) / 2.0;
      next[a * kDim + b] = next[b * kDim + a] = mean;
    }
  }
  p_ = next;
}

Detection KalmanBox::Box() const {
  const double w = std::max(x_[2], kMinSizePx);
  const double h = std::max(x_[3], kMinSizePx);
  Detection d;
  d.x1 = static_cast<float>(x_[0] - w / 2.0);
  d.y1 = static_cast<float>(x_[1] - h / 2.0);
  d.x2 = static_cast<float>(x_[0] + w / 2.0);
  d.y2 = static_cast<float>(x_[1] + h / 2.0);
  return d;
}

Detection KalmanBox::PredictedBox(double dt_s) const {
  KalmanBox ahead = *this;
  ahead.Predict(dt_s);
  return ahead.Box();
}

BoxVelocity KalmanBox::Velocity() const {
  return {x_[4], x_[5], x_[6], x_[7]};
}

}  // namespace mogserve::track
